"""Every evolver/* environment runs in Gymnasium's AsyncVectorEnv (text observations through shared
memory), with wrappers inside the workers, and gives what the in-process SyncVectorEnv gives."""

from __future__ import annotations

import copy
import multiprocessing as mp

import gymnasium as gym
import pytest
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

import arena  # noqa: F401 - registers evolver/AvalonSeat-v0
import evolver_gym  # noqa: F401 - registers the evolver/* ids
from evolver_gym.core.spaces import SharedTextBatch, UnicodeText

# AppWorldReal-v0 needs a running AppWorld server (tests/appworld/test_real.py); its spaces are the same.
IDS = ["evolver/WebShop-v0", "evolver/AppWorld-v0", "evolver/AvalonSeat-v0"]
KWARGS = {"evolver/WebShop-v0": {"num_products": 200}}


def _play(vec: gym.vector.VectorEnv, steps: int = 3) -> list:
    out = []
    obs, info = vec.reset(seed=7)
    out.append((obs, sorted(info)))
    actions = vec.single_action_space
    actions.seed(3)
    for _ in range(steps):
        obs, reward, term, trunc, info = vec.step(tuple(actions.sample() for _ in range(vec.num_envs)))
        out.append((obs, reward.tolist(), term.tolist(), trunc.tolist()))
    return out


@pytest.mark.parametrize("env_id", IDS)
def test_async_matches_sync_with_a_wrapper_inside(env_id):
    kwargs = KWARGS.get(env_id, {})
    wrappers = [gym.wrappers.RecordEpisodeStatistics]
    sync = gym.make_vec(env_id, 2, vectorization_mode="sync", wrappers=wrappers, **kwargs)
    asyn = gym.make_vec(env_id, 2, vectorization_mode="async", wrappers=wrappers, **kwargs)
    try:
        assert isinstance(asyn, gym.vector.AsyncVectorEnv) and asyn.shared_memory
        expected, got = _play(sync), _play(asyn)
        assert all(isinstance(o, str) and o for o in got[0][0])  # real, non-empty text came through
        assert got == expected
    finally:
        sync.close()
        asyn.close()


def test_shared_memory_round_trip_unicode_and_bounds():
    space = UnicodeText(12)
    mem = create_shared_memory(space, n=3, ctx=mp.get_context("fork"))
    view = read_from_shared_memory(space, mem, n=3)
    for i, text in enumerate(["naïve café", "", "日本語\nタブ\t"]):
        write_to_shared_memory(space, i, text, mem)
    assert isinstance(view, SharedTextBatch)
    assert tuple(view) == ("naïve café", "", "日本語\nタブ\t")
    snapshot = copy.deepcopy(view)
    write_to_shared_memory(space, 0, "short", mem)  # the view is live, the deep copy is not
    assert view[0] == "short" and snapshot[0] == "naïve café" and type(snapshot) is tuple
    with pytest.raises(ValueError, match="cannot hold"):
        write_to_shared_memory(space, 1, "x" * 13, mem)
