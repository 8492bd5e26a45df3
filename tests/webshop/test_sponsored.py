"""Sponsored results: distractor result pages that make WebShop episodes longer and their reward sparser."""

from __future__ import annotations

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401
from evolver_gym.core import Trajectory, record_episode
from evolver_gym.webshop import WebShopEnv
from evolver_gym.webshop.pages import PAGE_SIZE
from wrappers.attribution import OracleAttributor


def _replay(env, actions, task) -> Trajectory:
    remaining = iter(actions)
    return record_episode(env, lambda obs, info: next(remaining), options={"task": task})


SHOP = {"num_products": 200, "goals": "synthetic", "split_scheme": "product", "max_steps": 15}


@pytest.fixture(scope="module")
def plain():
    return WebShopEnv(**SHOP)


@pytest.fixture(scope="module")
def sponsored():
    return WebShopEnv(**SHOP, sponsored_results=PAGE_SIZE)


def test_the_first_page_is_sponsored_products_the_query_does_not_match(plain, sponsored):
    query = plain.tasks("dev")[0].instruction.lower()
    ranked = plain.world.search(query)
    shown = sponsored.world.search(query, PAGE_SIZE)
    assert shown[PAGE_SIZE:] == ranked  # the matches follow, in their order
    assert len(set(shown[:PAGE_SIZE])) == PAGE_SIZE and not set(shown[:PAGE_SIZE]) & set(ranked)
    assert sponsored.world.search(query.upper(), PAGE_SIZE) == shown  # the same query, the same sponsors
    assert sponsored.world.search(query + " extra", PAGE_SIZE)[:PAGE_SIZE] != shown[:PAGE_SIZE]


def test_the_oracle_pages_past_them_and_still_solves_every_dev_goal(plain, sponsored):
    for task in sponsored.tasks("dev")[:60]:
        actions = sponsored.oracle(task)
        assert actions.count("click[next >]") == plain.oracle(task).count("click[next >]") + 1
        assert task.reference == actions  # the task's demonstration pages too
        traj = _replay(sponsored, actions, task)
        assert traj.success and traj.terminated and len(traj.steps) == len(plain.oracle(task)) + 1


def test_paging_past_them_is_the_step_that_raises_progress_and_the_oracle_labels_it_good(sponsored):
    task = sponsored.tasks("dev")[1]
    traj = _replay(sponsored, sponsored.oracle(task), task)
    progress = [step.info["progress"] for step in traj.steps]
    assert traj.steps[1].action == "click[next >]" and progress[1] > progress[0]
    labels = OracleAttributor().attribute(traj).labels
    assert labels[1].label == "GOOD"


def test_the_option_is_validated_by_name_and_reaches_gym_make():
    for bad in (-1, 1.5, True, "10"):
        with pytest.raises(ValueError, match=f"sponsored_results must be an int >= 0, got {bad!r}"):
            WebShopEnv(**SHOP, sponsored_results=bad)
    env = gym.make("evolver/WebShop-v0", **SHOP, sponsored_results=20)
    assert env.unwrapped.oracle(env.unwrapped.tasks("dev")[0]).count("click[next >]") >= 2
    env.close()
