"""WebShopEnv: Gymnasium conformance, contracts, oracle, determinism, invalid actions."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import evolver_gym  # noqa: F401
from evolver_gym.core import record_episode
from evolver_gym.webshop import WebShopEnv, rule_baseline

SMALL = {"num_products": 200}


@pytest.fixture(scope="module")
def env():
    return WebShopEnv(num_products=1000)


def test_check_env_passes():
    check_env(gym.make("evolver/WebShop-v0", **SMALL).unwrapped, skip_render_check=True)


def test_oracle_solves_every_dev_goal(env):
    tasks = env.tasks("dev")
    assert len(tasks) >= 100
    for task in tasks:
        obs, info = env.reset(options={"task": task})
        for action in env.oracle(task):
            obs, reward, terminated, truncated, info = env.step(action)
            assert info["action_valid"], (task.task_id, action, info.get("error"))
        assert terminated and reward == 1.0 and info["success"], (task.task_id, info["evaluation"])


def test_info_contract_and_progress(env):
    obs, info = env.reset(options={"split": "dev", "index": 3})
    assert obs.startswith("WebShop [SEP] Instruction: [SEP] ")
    assert {"task", "instruction", "step", "action_valid", "available_actions", "allowed_actions",
            "progress"} <= info.keys()
    assert "reference" not in info["task"]
    assert info["available_actions"] == {"has_search_bar": True, "clickables": ["search"]}
    assert info["allowed_actions"] is None  # the search bar takes any text
    progress = [info["progress"]]
    for action in env.oracle(info["task"]):
        obs, reward, terminated, truncated, info = env.step(action)
        progress.append(info["progress"])
    assert progress[0] == 0.0 and progress[-1] == 1.0
    assert all(b >= a for a, b in zip(progress, progress[1:], strict=False)), progress
    assert {"success", "score", "evaluation"} <= info.keys()
    assert info["evaluation"]["purchased"]["asin"] == info["task"]["goal"]["asin"]


def test_invalid_action_changes_nothing(env):
    obs, info = env.reset(options={"split": "dev", "index": 0})
    obs, _, _, _, info = env.step("search[shampoo]")
    before = (env.unwrapped._state.copy(), info["available_actions"])
    for bad in (
        "click[nonexistent]",
        "buy it now",
        "click[search]",
        "search[]",
        "jump[3]",
        "",
        "click[buy now]",
    ):
        obs2, reward, terminated, truncated, info2 = env.step(bad)
        assert not info2["action_valid"] and info2["error"] and reward == 0.0 and not terminated
        assert "Invalid action:" in obs2 and obs2.startswith(obs)
        assert env.unwrapped._state.page_results() == before[0].page_results()
        assert info2["available_actions"] == before[1]


def test_step_cap_truncates():
    env = WebShopEnv(**SMALL, max_steps=3)
    env.reset(seed=1)
    outs = [env.step("search[socks]") for _ in range(3)]
    assert [o[3] for o in outs] == [False, False, True]
    assert outs[-1][4]["success"] is False and outs[-1][4]["score"] == 0.0


def test_same_seed_same_episode():
    def play(seed):
        env = WebShopEnv(**SMALL)
        traj = record_episode(env, rule_baseline, seed=seed)
        return [s.observation for s in traj.steps], traj.score, traj.task.task_id

    assert play(7) == play(7)
    assert play(7)[2] != play(8)[2] or play(7)[0] != play(8)[0]


def test_reset_options_select_tasks(env):
    task = env.tasks("test")[2]
    _, info = env.reset(options={"task_id": task.task_id})
    assert info["task"]["task_id"] == task.task_id
    _, info = env.reset(options={"task": task.to_dict()})
    assert info["instruction"] == task.instruction
    _, info = env.reset(options={"split": "test", "index": 2})
    assert info["task"] == task.public()
    with pytest.raises(ValueError, match="index"):
        env.reset(options={"split": "test", "index": 10**6})


def test_vector_envs_run():
    fns = [lambda: gym.make("evolver/WebShop-v0", **SMALL) for _ in range(2)]
    # Text observations cannot live in shared numpy memory: async envs pass them by pipe.
    for venv in (gym.vector.SyncVectorEnv(fns), gym.vector.AsyncVectorEnv(fns, shared_memory=False)):
        obs, infos = venv.reset(seed=0)
        assert len(obs) == 2 and all(o.startswith("WebShop") for o in obs)
        obs, rewards, terminated, truncated, infos = venv.step(["search[shampoo]", "click[bad]"])
        assert list(infos["action_valid"]) == [True, False]
        assert np.all(rewards == 0.0)
        venv.close()
