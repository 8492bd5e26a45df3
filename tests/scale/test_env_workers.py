"""Rollouts with environments in Ray actors (a real local Ray) play the in-process pool's episodes."""

from __future__ import annotations

import functools

import pytest
import torch

from evolver_train.config import EvolverGRPOConfig
from evolver_train.env_workers import EnvWorkerConfig, RayEnvPool, RemoteEnvs, init_ray, make_env_pool
from evolver_train.rollout import ChatCodec, EnvPool, RowSpec, play_episodes, sample_tokens
from tests.train.fixtures import GuessEnv, tiny_policy


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray", reason="the Ray environment workers need `ray` (extra: scale)")
    init_ray(num_cpus=2)
    yield
    ray.shutdown()


def _episodes(pool, n_rows=6):
    model, tok = tiny_policy()
    codec = ChatCodec(tok)
    gen = torch.Generator().manual_seed(0)

    def generate(contexts, caps):
        return sample_tokens(model, contexts, caps, eos_token_ids=[tok.eos_token_id], pad_token_id=tok.pad_token_id,
                             generator=gen)

    tasks = GuessEnv().tasks()
    rows = [RowSpec(task=tasks[i % 3].to_dict(), seed=100 + i // 2, group=i // 2) for i in range(n_rows)]
    eps = play_episodes(pool.take(n_rows), rows, generate, codec, max_turns=4, max_episode_tokens=200,
                        max_turn_tokens=6)
    return [(ep.tokens.prompt_ids, ep.tokens.completion_ids, ep.tokens.env_mask, [s.action for s in ep.steps],
             [s.observation for s in ep.steps], [s.reward for s in ep.steps], ep.success, ep.outcome, ep.truncated)
            for ep in eps]


@pytest.mark.parametrize("actors", [1, 2])
def test_ray_actors_play_the_same_episodes_as_the_local_pool(local_ray, actors):
    factory = functools.partial(GuessEnv, max_steps=4)
    local = EnvPool(factory)
    remote = make_env_pool(factory, EnvWorkerConfig("ray", num_actors=actors, num_cpus_per_actor=0.5))
    try:
        assert isinstance(remote, RayEnvPool)
        expected = _episodes(local)
        got = _episodes(remote)
        assert got == expected
        assert any(e[6] for e in got) and any(len(e[3]) > 1 for e in got)  # real multi-turn play, some wins
        assert _episodes(remote) == expected  # environments reused across batches reset cleanly
    finally:
        local.close()
        remote.close()


def test_remote_batch_spreads_environments_and_rejects_bad_indices(local_ray):
    pool = RayEnvPool(functools.partial(GuessEnv, max_steps=4), EnvWorkerConfig("ray", num_actors=2,
                                                                               num_cpus_per_actor=0.5))
    try:
        envs = pool.take(3)
        assert isinstance(envs, RemoteEnvs) and len(envs) == 3
        task = GuessEnv().tasks()[7].to_dict()
        out = envs.reset_many([(i, {"seed": 1, "options": {"task": task}}) for i in (2, 0, 1)])
        assert [o for o, _ in out] == [out[0][0]] * 3 and out[0][1]["task"]["task_id"] == task["task_id"]
        steps = envs.step_many([(0, "guess[7]"), (1, "guess[2]")])
        assert steps[0][1] == 1.0 and steps[0][2] is True and steps[1][0] == "higher"
        with pytest.raises(IndexError, match="environment 3"):
            envs.step_many([(3, "guess[1]")])
    finally:
        pool.close()


def test_config_validates_the_backend():  # no Ray needed
    with pytest.raises(ValueError, match="'dask'"):
        EnvWorkerConfig("dask")
    with pytest.raises(ValueError, match="env_backend must be 'local' or 'ray', got 'spark'"):
        EvolverGRPOConfig(output_dir="/tmp/x", env_backend="spark")
    assert isinstance(make_env_pool(GuessEnv), EnvPool)
