"""Reference policies on the embedded catalog: the oracle solves everything, the rule baseline does not."""

from __future__ import annotations

import numpy as np
import pytest

from evolver_gym.cli import play_policies
from evolver_gym.webshop import WebShopEnv


def test_rule_baseline_lands_near_webshop_rule_baseline():
    # WebShop's paper: rule baseline 9.6% success, 45.6 score on human goals. Hard negatives keep ours
    # in that neighbourhood; a generator change that makes the first result always right fails here.
    env = WebShopEnv(num_products=1000)
    results = play_policies(env, env.tasks("dev"), progress=False)
    base = results["rule_baseline"]
    assert results["oracle"]["success_rate"] == 1.0
    assert 0.03 <= base["success_rate"] <= 0.2, base
    assert 38.0 <= base["mean_score"] <= 60.0, base


def test_small_catalog_goals_all_solvable():
    env = WebShopEnv(num_products=200)
    for split in ("dev", "test", "train"):
        for task in env.tasks(split):
            env.reset(options={"task": task})
            for action in task.reference:
                obs, reward, terminated, truncated, info = env.step(action)
            assert reward == 1.0, task.task_id


def test_synthetic_goals_oracle_and_option_tuples():
    env = WebShopEnv(num_products=300, goals="synthetic")
    tasks = env.tasks("dev")
    assert tasks and all(isinstance(t.goal["goal_options"], dict) for t in tasks)
    for task in tasks[:40]:
        env.reset(options={"task": task})
        for action in task.reference:
            obs, reward, terminated, truncated, info = env.step(action)
        assert reward == 1.0, (task.task_id, info["evaluation"])
    # Buying without options loses exactly the option share of the reward.
    task = next(t for t in tasks if t.goal["goal_options"])
    env.reset(options={"task": task})
    plan = [
        a
        for a in task.reference
        if a.startswith(("search", "click[b", "click[next")) or a == "click[buy now]"
    ]
    plan = [
        a
        for a in plan
        if not (a.startswith("click[") and a[6:-1] in {v for v in task.goal["goal_options"].values()})
    ]
    for action in plan:
        obs, reward, terminated, truncated, info = env.step(action)
    n_att, n_opt = len(task.goal["attributes"]), len(task.goal["goal_options"])
    assert terminated and reward == pytest.approx((n_att + 1) / (n_att + n_opt + 1))


@pytest.mark.slow
def test_oracle_solves_every_goal_at_10k_products():
    env = WebShopEnv(num_products=10_000)
    rewards = []
    for split in ("dev", "test"):
        for task in env.tasks(split):
            env.reset(options={"task": task})
            for action in task.reference:
                obs, reward, terminated, truncated, info = env.step(action)
            rewards.append(reward)
    assert len(rewards) == 1500 and np.all(np.array(rewards) == 1.0)
