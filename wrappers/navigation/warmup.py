"""Warm-up: fill an experience pool from rollouts of training tasks before training starts.

* ``build_pool`` - N rollouts per training task with any policy, summarised per task into the pool.
* ``oracle_policy`` / ``random_policy`` - policies for a warm-up without a model.

Only training-split tasks are accepted (the split guard): AgentEvolver's own warm-up rolls out the
validation set, which leaks evaluation tasks into the experience.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

from evolver_gym.core import Task, Trajectory, derive_seed, make_random, record_episode

from .pool import ExperiencePool
from .wrapper import TRAIN_SPLITS, Summarizer, is_training_task

__all__ = ["build_pool", "oracle_policy", "random_policy"]

Policy = Callable[[str, dict[str, Any]], str]


def oracle_policy(env: gym.Env) -> Policy:
    """Replays ``env.unwrapped.oracle(task)`` for the task of the current episode."""
    state: dict[str, Any] = {"task_id": None, "actions": []}

    def act(obs: str, info: dict[str, Any]) -> str:
        task = info["task"]
        if state["task_id"] != task["task_id"] or info.get("step", 0) == 0:
            state["task_id"], state["actions"] = task["task_id"], list(env.unwrapped.oracle(Task.from_dict(task)))
        return state["actions"].pop(0) if state["actions"] else "click[buy now]"

    return act


def random_policy(seed: int = 0) -> Policy:
    """Uniform over ``info["available_actions"]`` (WebShop shape); searches the instruction first."""
    rng = make_random(seed, "warmup-random-policy")

    def act(obs: str, info: dict[str, Any]) -> str:
        avail = info.get("available_actions") or {}
        clickables = list(avail.get("clickables") or [])
        if avail.get("has_search_bar") and (not clickables or rng.random() < 0.5):
            return f"search[{info.get('instruction', '')[:80]}]"
        return f"click[{rng.choice(clickables)}]" if clickables else "click[buy now]"

    return act


def build_pool(env: gym.Env, policy: Policy, pool: ExperiencePool, summarizer: Summarizer, *,
               tasks: Sequence[Task] | None = None, rollouts_per_task: int = 4, seed: int = 0,
               train_splits: Sequence[str] = TRAIN_SPLITS, max_steps: int = 100,
               on_task: Callable[[Task, list[Trajectory], list[str]], None] | None = None) -> dict[str, Any]:
    """Roll out every task ``rollouts_per_task`` times, summarise each task's group, add to ``pool``.

    ``tasks`` defaults to ``env.unwrapped.tasks("train")``. Returns counts: tasks, episodes,
    successes, experiences added (ids after merging).
    """
    if not isinstance(rollouts_per_task, int) or rollouts_per_task < 1:
        raise ValueError(f"rollouts_per_task must be a positive int, got {rollouts_per_task!r}")
    tasks = list(env.unwrapped.tasks(train_splits[0]) if tasks is None else tasks)
    leaked = [t.task_id for t in tasks if not is_training_task(t, train_splits)]
    if leaked:
        raise ValueError(f"warm-up only takes training-split tasks {tuple(train_splits)}; got {leaked[:5]}")
    stats = {"tasks": 0, "episodes": 0, "successes": 0, "added": 0, "ids": []}
    for task in tasks:
        group = [record_episode(env, policy, seed=derive_seed(seed, task.task_id, r), options={"task": task},
                                max_steps=max_steps) for r in range(rollouts_per_task)]
        ids = pool.add(summarizer.summarize(group)) if group else []
        stats["tasks"] += 1
        stats["episodes"] += len(group)
        stats["successes"] += sum(t.success for t in group)
        stats["ids"] += ids
        if on_task is not None:
            on_task(task, group, ids)
    stats["ids"] = list(dict.fromkeys(stats["ids"]))
    stats["added"] = len(stats["ids"])
    return stats
