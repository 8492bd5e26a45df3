"""What is public never depends on a seat's hidden role: turn order after a Fail card from a good
seat, and the parallel view's instructions to simultaneous voters."""

from __future__ import annotations

import numpy as np
import pytest

from arena.avalon import AvalonConfig
from arena.avalon.env import raw_env
from arena.avalon.parallel import parallel_env

ROLES = ["servant", "assassin", "merlin", "servant", "minion"]  # seat 0 good, seat 1 evil


def _to_quest(env, team=(0, 1)):
    """Leader 0 proposes ``team``; everyone approves; the env waits for seat 0's quest card."""
    env.reset(seed=3, options={"roles": ROLES, "leader": 0})
    env.step(env.codec.team_code(team) if env.variant == "discrete" else "TEAM: " + ", ".join(map(str, team)))
    for _ in range(5):
        env.step(env.codec.APPROVE if env.variant == "discrete" else "VOTE: approve")
    assert env.game.phase == "quest" and env.agent_selection == "player_0"


@pytest.mark.parametrize("variant", ["text", "discrete"])
def test_fail_card_from_a_good_seat_moves_the_turn_like_any_card(variant):
    fail = {"text": "QUEST: fail", "discrete": None}[variant]
    bad, good = raw_env(config=AvalonConfig(5, discussion_rounds=0), variant=variant), None
    _to_quest(bad)
    bad.step(fail if fail else bad.codec.FAIL)
    good = raw_env(config=AvalonConfig(5, discussion_rounds=0), variant=variant)
    _to_quest(good)
    good.step("QUEST: success" if fail else good.codec.SUCCESS)
    # Everyone else sees the same next actor and the same observations, as after a Success card.
    assert bad.agent_selection == good.agent_selection == "player_1"
    for agent in bad.possible_agents[1:]:
        ob, og = bad.observe(agent), good.observe(agent)
        assert ob["text"] == og["text"]
        assert np.array_equal(ob["observation"], og["observation"])
        assert bad.infos[agent] == good.infos[agent]
    # The seat itself learns why (privately), and the card counts as Success.
    assert "must play SUCCESS" in bad.infos["player_0"]["error"]
    assert bad.infos["player_0"]["invalid_actions"] == 1
    assert bad.game.my_cards(0) == ((0, False),)


def test_parallel_text_voters_are_each_asked_to_vote():
    env = parallel_env(num_players=5, variant="text", discussion_rounds=0)
    obs, infos = env.reset(seed=0, options={"roles": ROLES, "leader": 2})
    actions = {a: "PASS" for a in env.agents}
    actions["player_2"] = "TEAM: 2, 3"
    obs, _, _, _, infos = env.step(actions)
    assert env.game.phase == "vote"
    for agent in env.agents:
        assert infos[agent]["allowed_actions"] == ["VOTE: approve", "VOTE: reject"], agent
        assert "Vote on team [2, 3]" in obs[agent]["text"], agent
        assert "Waiting for Player" not in obs[agent]["text"].rsplit("\n", 1)[-1]
        assert obs[agent]["action_mask"][env.codec.APPROVE] == 1
    obs, _, _, _, infos = env.step({a: "VOTE: approve" for a in env.agents})
    assert env.game.phase == "quest"
    for agent in ("player_2", "player_3"):
        assert infos[agent]["allowed_actions"], agent
        assert "You are on the quest" in obs[agent]["text"]
    for agent in ("player_0", "player_1", "player_4"):
        assert infos[agent]["allowed_actions"] == [] and "Waiting for the quest cards." in obs[agent]["text"]
