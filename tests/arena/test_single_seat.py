"""The single-seat Gymnasium view ``evolver/AvalonSeat-v0``."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import arena  # noqa: F401 - registers evolver/AvalonSeat-v0
from arena.avalon.single_seat import SingleSeat


def _play(env, options=None, seed=0, reply=None):
    obs, info = env.reset(seed=seed, options=options)
    steps, rewards = 0, []
    while True:
        allowed = info["allowed_actions"]  # None in discussion: any text is speech
        action = reply(info) if reply else (allowed[0] if allowed else "PASS")
        obs, r, term, trunc, info = env.step(action)
        rewards.append(r)
        steps += 1
        if term or trunc:
            return obs, rewards, info, steps


def test_check_env_and_make():
    env = gym.make("evolver/AvalonSeat-v0")
    check_env(env.unwrapped)
    assert isinstance(env.unwrapped, SingleSeat)


def test_episode_contract():
    env = SingleSeat(num_players=6)
    obs, rewards, info, steps = _play(env, {"split": "dev", "index": 4})
    assert set(rewards[:-1]) <= {0.0} and rewards[-1] in (1.0, -1.0)
    assert info["success"] == (rewards[-1] == 1.0) and info["score"] in (0.0, 1.0)
    for key in ("task", "instruction", "step", "action_valid", "evaluation", "progress"):
        assert key in info
    assert "reference" not in info["task"]
    assert info["evaluation"]["end_reason"] and len(info["evaluation"]["roles"]) == 6


def test_same_task_same_game_and_role_option():
    env = SingleSeat(num_players=5, role="merlin")
    a = _play(env, {"task_id": "evolver/AvalonSeat-v0/test/7"})
    b = _play(env, {"split": "test", "index": 7})
    assert a[0] == b[0] and a[2]["evaluation"] == b[2]["evaluation"]
    assert a[2]["role"] == "merlin"
    assert len(env.tasks("test")) == 200 and env.tasks("dev")[3].task_id.endswith("dev/3")


def test_invalid_reply_explains_and_keeps_the_turn():
    env = SingleSeat(num_players=5, discussion_rounds=0, max_retries=1)
    obs, info = env.reset(seed=0, options={"split": "train", "index": 0})
    before = info["phase"]
    obs, r, term, trunc, info = env.step("\x00 gibberish")
    assert info["action_valid"] is False and info["error"]
    assert "not accepted" in obs or "fallback" in info["error"]
    assert not term and before in ("proposal", "vote", "quest")


def test_bad_task_id_and_split_are_named():
    env = SingleSeat()
    with pytest.raises(ValueError, match="nope"):
        env.reset(options={"task_id": "nope"})
    with pytest.raises(ValueError, match="'holdout'"):
        env.tasks("holdout")
    with pytest.raises(ValueError, match="'wizard'"):
        SingleSeat(opponents="wizard")


def test_runs_under_a_gymnasium_vector_env():
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("evolver/AvalonSeat-v0") for _ in range(2)])
    obs, info = envs.reset(seed=0)
    assert len(obs) == 2 and all(isinstance(o, str) for o in obs)
    obs, rewards, term, trunc, info = envs.step(("PASS", "VOTE: approve"))
    assert rewards.shape == (2,)
    envs.close()
