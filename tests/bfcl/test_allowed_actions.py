"""``info["allowed_actions"]`` on BFCL: always present and ``None`` (any reply: calls or a message)."""

from __future__ import annotations

from evolver_gym.bfcl.env import BFCLEnv

OLD_NAMES = {"available_actions", "clickables", "legal_actions", "legal_mask", "action_mask", "valid_actions"}


def test_every_info_says_any_reply_may_be_submitted():
    env = BFCLEnv(split="train")
    for index in range(3):
        task = env.tasks("train")[index]
        _, info = env.reset(seed=index, options={"task": task})
        infos = [info]
        # a refused reply, then the reference's replies to the end
        for action in ["[not_a_function(x=)", *env.oracle(task)]:
            *_, terminated, truncated, info = env.step(action)
            infos.append(info)
            if terminated or truncated:
                break
        assert terminated or truncated
        for i in infos:
            assert "allowed_actions" in i and i["allowed_actions"] is None
            assert not OLD_NAMES & i.keys()
    env.close()
