"""``info["allowed_actions"]`` on AppWorld: always present and ``None`` (any code may be submitted)."""

from __future__ import annotations

import pytest

from evolver_gym.appworld.env import AppWorldEnv

OLD_NAMES = {"available_actions", "clickables", "legal_actions", "legal_mask", "action_mask", "valid_actions"}


@pytest.mark.parametrize("action_mode", ["code", "tool"])
def test_every_info_says_any_action_may_be_submitted(action_mode):
    env = AppWorldEnv(split="train", action_mode=action_mode)
    for index in range(3):
        task = env.tasks("train")[index]
        _, info = env.reset(seed=index, options={"task": task})
        infos = [info]
        # the reference's first steps (code mode), then a reply that is not an action at all
        reference = env.oracle(task)[:2] if action_mode == "code" else []
        for action in [*reference, "this is not code {"]:
            *_, terminated, truncated, info = env.step(action)
            infos.append(info)
            if terminated or truncated:
                break
        assert any(not i["action_valid"] for i in infos) or terminated
        for i in infos:
            assert "allowed_actions" in i and i["allowed_actions"] is None
            assert not OLD_NAMES & i.keys()
    env.close()
