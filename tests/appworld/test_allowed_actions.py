"""``info["allowed_actions"]`` on AppWorld and AppWorldApps: always present and ``None`` (any code may be
submitted). The AppWorldApps case is skipped, with the reason, where the apps are not installed
(``bash scripts/setup.sh appworld-apps``)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401  (registers the ids)
from evolver_gym.appworld_apps.backend import unavailable_reason

OLD_NAMES = {"available_actions", "clickables", "legal_actions", "legal_mask", "action_mask", "valid_actions"}
APPS_MISSING = unavailable_reason()


@pytest.mark.parametrize("env_id, kwargs", [
    ("evolver/AppWorld-v0", {"action_mode": "code"}),
    ("evolver/AppWorld-v0", {"action_mode": "tool"}),
    pytest.param("evolver/AppWorldApps-v0", {"timeout_s": 5.0}, marks=pytest.mark.skipif(
        APPS_MISSING is not None, reason=f"AppWorld's apps are not installed: {APPS_MISSING}")),
])
def test_every_info_says_any_action_may_be_submitted(env_id, kwargs):
    env = gym.make(env_id, split="train", **kwargs).unwrapped
    try:
        for index in range(2):
            task = env.tasks("train")[index]
            _, info = env.reset(seed=index, options={"task": task.to_dict()})
            infos = [info]
            # the reference's first steps (code), then a reply that is not an action at all
            reference = env.oracle(task)[:2] if kwargs.get("action_mode") != "tool" else []
            for action in [*reference, "this is not code {"]:
                *_, terminated, truncated, info = env.step(action)
                infos.append(info)
                if terminated or truncated:
                    break
            assert any(not i["action_valid"] for i in infos) or terminated
            for i in infos:
                assert "allowed_actions" in i and i["allowed_actions"] is None
                assert not OLD_NAMES & i.keys()
    finally:
        env.close()
