"""``evolver/AppWorld-v0`` under ``gymnasium.vector``: sync, and async with text passed by pipe."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import evolver_gym  # noqa: F401  (registers the ids)
from evolver_gym.appworld.env import AppWorldEnv


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_appworld_runs_under_vector_envs(kind):
    fns = [lambda: gym.make("evolver/AppWorld-v0", max_steps=5) for _ in range(2)]
    # Text observations cannot live in shared numpy memory: async envs pass them by pipe.
    venv = (
        gym.vector.SyncVectorEnv(fns)
        if kind == "sync"
        else gym.vector.AsyncVectorEnv(fns, shared_memory=False)
    )
    try:
        task = AppWorldEnv().tasks("train")[3]
        obs, infos = venv.reset(seed=0, options={"task_id": task.task_id})
        assert len(obs) == 2 and all(task.instruction in o for o in obs)
        assert list(infos["instruction"]) == [task.instruction] * 2
        obs, rewards, term, trunc, infos = venv.step(
            ["print(apis.supervisor.show_profile()['email'])", "def ("]
        )
        assert list(infos["action_valid"]) == [True, False] and "@" in obs[0] and "Syntax" in obs[1]
        assert np.all(rewards == 0.0) and not term.any()
        # Both sub-envs play the reference of the same task: each solves it on its own state.
        for cell in task.reference:
            obs, rewards, term, trunc, infos = venv.step([cell, cell])
        assert term.all() and np.all(rewards == 1.0) and list(infos["success"]) == [True, True]
        # Next step autoresets; then a do-nothing episode fails in both.
        venv.step(["x = 1", "x = 1"])
        obs, rewards, term, trunc, infos = venv.step(["apis.supervisor.complete_task()"] * 2)
        assert term.all() and np.all(rewards == 0.0) and not infos["success"].any()
    finally:
        venv.close()
