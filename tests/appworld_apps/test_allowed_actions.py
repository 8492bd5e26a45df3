"""``info["allowed_actions"]`` on AppWorldApps: always present and ``None`` (any code may be submitted).

Skipped, with the reason, where the apps are not installed (``bash scripts/setup.sh appworld-apps``).
"""

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401  (registers the ids)
from evolver_gym.appworld_apps.backend import unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"AppWorld's apps are not installed: {REASON}")
OLD_NAMES = {"available_actions", "clickables", "legal_actions", "legal_mask", "action_mask", "valid_actions"}


def test_every_info_says_any_code_may_be_submitted():
    env = gym.make("evolver/AppWorldApps-v0", split="train", timeout_s=5.0).unwrapped
    try:
        for index in range(2):
            task = env.tasks("train")[index]
            _, info = env.reset(seed=index, options={"task": task.to_dict()})
            infos = [info]
            for action in [*env.oracle(task)[:2], "this is not code {"]:
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
