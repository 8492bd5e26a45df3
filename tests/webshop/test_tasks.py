"""Unwrapped methods: tasks, profile, oracle, hindsight tasks; the action space; the play CLI."""

from __future__ import annotations

import json

import gymnasium as gym

import evolver_gym  # noqa: F401
from evolver_gym.cli import play_main
from evolver_gym.core import Trajectory, record_episode
from evolver_gym.webshop import WebShopEnv, rule_baseline
from evolver_gym.webshop.world import get_world


def test_catalog_and_index_shared_between_envs():
    a, b = WebShopEnv(num_products=200), WebShopEnv(num_products=200)
    assert a.world is b.world and a.catalog is b.catalog
    assert WebShopEnv(num_products=200, seed=1).world is not a.world
    assert get_world(num_products=200) is a.world
    env = gym.make("evolver/WebShop-v0", num_products=200)
    assert env.unwrapped.catalog is a.catalog


def test_tasks_are_public_safe_and_seeded():
    env = WebShopEnv(num_products=200)
    dev = env.tasks("dev")
    assert dev and all(t.split == "dev" and t.env_id == "evolver/WebShop-v0" for t in dev)
    assert len({t.task_id for t in dev}) == len(dev)
    assert all(t.reference and t.reference[-1] == "click[buy now]" for t in dev)
    assert all(t.instruction == t.goal["instruction_text"] for t in dev)
    assert env.tasks("dev")[0] is dev[0]


def test_action_space_examples_are_valid_actions():
    env = WebShopEnv(num_products=200)
    env.reset(seed=0)
    for _ in range(5):
        action = env.action_space.sample()
        assert action in env.action_space
        assert env.step(action)[4]["action_valid"], action


def test_profile_describes_the_world():
    profile = WebShopEnv(num_products=200).profile()
    assert set(profile) >= {"entities", "attributes", "options", "operations"}
    assert len(profile["entities"]["categories"]) == 5
    assert any(t["query"] for t in profile["entities"]["product_types"])
    assert "color" in profile["options"] and "click[buy now]" in profile["operations"]
    json.dumps(profile)


def test_hindsight_task_is_verifiable():
    env = WebShopEnv(num_products=200)
    traj = record_episode(env, rule_baseline, options={"split": "dev", "index": 1})
    assert traj.steps[-1].info["evaluation"]["purchased"]
    task = env.hindsight_task(Trajectory.from_json(traj.to_json()))
    assert task is not None and task.origin == "synthetic" and task.parent_id == traj.task.task_id
    bought = traj.steps[-1].info["evaluation"]["purchased"]
    assert task.goal["asin"] == bought["asin"]
    env.reset(options={"task": task})
    for action in task.reference:
        obs, reward, terminated, truncated, info = env.step(action)
    assert reward == 1.0 and info["success"]
    # Deterministic, and nothing bought means no task.
    assert env.hindsight_task(traj).task_id == task.task_id
    empty = Trajectory(task=traj.task, steps=traj.steps[:1])
    assert env.hindsight_task(empty) is None


def test_play_cli_prints_both_policies(capsys):
    assert (
        play_main(
            ["--env-id", "evolver/WebShop-v0", "--split", "dev", "--n", "10", "--num-products", "200", "--json"]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["oracle"]["success_rate"] == 1.0 and out["oracle"]["mean_score"] == 100.0
    assert 0.0 <= out["rule_baseline"]["success_rate"] < 1.0 and out["rule_baseline"]["n"] == 10
    assert play_main(["--split", "nope"]) == 2
