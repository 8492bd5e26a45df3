"""AppWorldEnv: reference solutions pass, do-nothing fails, Gymnasium contracts hold."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import evolver_gym  # noqa: F401
from evolver_gym.appworld.env import AppWorldEnv


@pytest.fixture(scope="module")
def env():
    e = AppWorldEnv(split="train")
    yield e
    e.close()


def play(env, task, actions):
    obs, info = env.reset(options={"task": task})
    out = None
    for a in actions:
        out = env.step(a)
        if out[2] or out[3]:
            break
    return out


def test_reference_solves_every_train_task(env):
    for task in env.tasks("train"):
        obs, reward, terminated, truncated, info = play(env, task, env.oracle(task))
        assert terminated and info["success"], (
            task.task_id,
            task.instruction,
            info["evaluation"]["failures"],
        )
        assert reward == 1.0 and info["progress"] == 1.0


def test_do_nothing_fails_every_task(env):
    for task in [t for split in ("train", "dev", "test_normal", "test_challenge") for t in env.tasks(split)]:
        env.reset(options={"task": task})
        obs, reward, terminated, truncated, info = env.step("apis.supervisor.complete_task()")
        assert terminated and not info["success"] and reward == 0.0, task.task_id
        assert any(f["label"] == "no_op_fail" for f in info["evaluation"]["failures"])


def test_info_keys_and_public_task(env):
    obs, info = env.reset(options={"split": "train", "index": 0})
    assert {"task", "instruction", "step", "action_valid", "progress"} <= info.keys()
    assert "reference" not in info["task"] and info["instruction"] in obs
    obs, r, term, trunc, info = env.step("print(1 +")
    assert obs.startswith("Execution failed. Traceback:\nSyntax error in line:") and not info["action_valid"]
    assert "error" in info


def test_registered_and_check_env():
    e = gym.make("evolver/AppWorld-v0")
    check_env(e.unwrapped, skip_render_check=True)
    e.close()
