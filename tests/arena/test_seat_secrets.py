"""The single-seat view keeps the deal secret: nothing the policy sees replays the game, while the
host replays it from the task and its deal key."""

from __future__ import annotations

import pytest

from arena.avalon.env import raw_env
from arena.avalon.single_seat import DEAL_KEY_ENV, SingleSeat, host_deal_key
from evolver_gym.core.seeding import derive_seed

# Ten players with every special role: about 2.5 million deals, so a chance match is negligible.
RULES = dict(num_players=10, special_roles=("merlin", "percival", "assassin", "morgana", "mordred", "oberon"))


def _ints(value):
    """Every integer inside a JSON-like value (the seeds a reader could try)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, dict):
        return [i for v in value.values() for i in _ints(v)]
    if isinstance(value, (list, tuple)):
        return [i for v in value for i in _ints(v)]
    return []


def _deal_of(seed: int, env: SingleSeat) -> tuple:
    aec = raw_env(config=env.config, variant="text")
    aec.reset(seed=seed % 2**63)
    return aec.game.roles, aec.game.leader


def test_task_id_and_info_do_not_replay_the_deal():
    env = SingleSeat(deal_key="host secret", discussion_rounds=0, **RULES)
    replayed = 0
    for index in range(12):
        obs, info = env.reset(options={"split": "dev", "index": index})
        truth = (env._aec.game.roles, env._aec.game.leader)
        task = info["task"]
        split, idx = task["task_id"].rsplit("/", 2)[-2:]
        candidates = set(_ints(task)) | set(_ints({k: v for k, v in info.items() if k != "task"}))
        candidates.add(derive_seed("avalon-seat", split, int(idx), env.config.num_players))
        candidates.add(derive_seed(task["task_id"]))
        replayed += any(_deal_of(c, env) == truth for c in candidates if c >= 0)
    assert replayed == 0, f"{replayed} of 12 deals replayed from what the policy sees"


def test_host_replays_the_same_game_for_the_same_key():
    a = SingleSeat(deal_key="k1", discussion_rounds=0, **RULES)
    b = SingleSeat(deal_key="k1", discussion_rounds=0, **RULES)
    c = SingleSeat(deal_key="k2", discussion_rounds=0, **RULES)
    deals = {}
    for name, env in (("a", a), ("b", b), ("c", c)):
        deals[name] = []
        for index in range(5):
            obs, info = env.reset(options={"split": "test", "index": index})
            deals[name].append((env._aec.game.roles, env._aec.game.leader, obs))
    assert deals["a"] == deals["b"]
    assert all(x[:2] != y[:2] for x, y in zip(deals["a"], deals["c"], strict=True))


def test_host_deal_key_from_env_or_one_file_per_host(tmp_path, monkeypatch):
    monkeypatch.setenv(DEAL_KEY_ENV, "from-env")
    assert host_deal_key() == "from-env"
    monkeypatch.delenv(DEAL_KEY_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = host_deal_key()
    assert len(first) == 32 and host_deal_key() == first
    assert (tmp_path / "evolver-gym" / "arena-deal-key").read_text() == first
    assert list((tmp_path / "evolver-gym").iterdir()) == [tmp_path / "evolver-gym" / "arena-deal-key"]


def test_bad_deal_key_is_named():
    with pytest.raises(ValueError, match="deal_key"):
        SingleSeat(deal_key="")
