"""ExperienceContext learns from the episodes it sees by default, or says once why it cannot."""

from __future__ import annotations

import warnings

import pytest

from evolver_gym.core import Task
from wrappers.navigation import LEARN_SPLITS, ExperienceContext

from .test_wrapper import ENV_ID, ShopEnv


def _buy(env, options):
    obs, info = env.reset(seed=0, options=options)
    item = info["task"]["goal"]["item"]
    return env.step(f"buy[{item}]")


def test_defaults_add_experience_from_successful_training_episodes(pool):
    env = ExperienceContext(ShopEnv(), pool)
    assert env.continual and env.summarizer is not None and env.train_splits == LEARN_SPLITS
    for i in range(3):
        _buy(env, {"split": "train", "index": i})
    assert len(pool) == 3 and {e.source_task_id for e in pool.all()} == {f"{ENV_ID}/train/{i}" for i in range(3)}


def test_synthesised_tasks_of_goal_free_start_states_are_learned_from(pool):
    # A task synthesised with seed_split none keeps its parent's split, "explore": it is training data.
    parent = Task(f"{ENV_ID}/explore/0", ENV_ID, "", split="explore")
    task = parent.derive(instruction="i want to buy wireless headphones", goal={"item": "wireless headphones"},
                         reference=["buy[wireless headphones]"], proposer="hindsight")
    env = ExperienceContext(ShopEnv(), pool)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about
        _buy(env, {"task": task.to_dict()})
    assert len(pool) == 1 and env.last_added_ids and env.skipped == {}


def test_held_out_episodes_are_skipped_with_one_warning_naming_the_split(pool):
    env = ExperienceContext(ShopEnv(), pool)
    with pytest.warns(RuntimeWarning, match=r"split 'dev' is not a training split .*'train', 'explore'"):
        _buy(env, {"split": "dev", "index": 0})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per reason
        _buy(env, {"split": "dev", "index": 1})
    assert len(pool) == 0 and env.skipped == {"split dev": 2}
    # continual off: the user asked for retrieval only, no warning
    quiet = ExperienceContext(ShopEnv(), pool, continual=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _buy(quiet, {"split": "dev", "index": 0})
        _buy(quiet, {"split": "train", "index": 0})
    assert len(pool) == 0


def test_an_env_without_info_task_is_reported(pool):
    class NoTask(ShopEnv):
        def _info(self, **kw):
            info = super()._info(**kw)
            del info["task"]
            return info

    env = ExperienceContext(NoTask(), pool)
    with pytest.warns(RuntimeWarning, match=r"no info\['task'\].*NoTask"):
        env.reset(seed=0)
    assert env.skipped == {"no task": 1}
