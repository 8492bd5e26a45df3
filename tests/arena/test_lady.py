"""Lady of the Lake (official optional rule, 7+ players)."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import api_test

from arena.avalon import AvalonConfig, AvalonGame, IllegalAction
from arena.avalon.bots import make_player
from arena.avalon.env import raw_env
from arena.avalon.observation import _layout, features
from arena.avalon.play import play_game

ROLES = ["merlin", "servant", "servant", "servant", "assassin", "minion", "minion"]
CFG = AvalonConfig(7, discussion_rounds=0, lady_of_the_lake=True)


def _quest(g: AvalonGame, team, fail: bool = False) -> None:
    """Leader proposes ``team``, all approve, members play (the first evil member fails if asked)."""
    g.step(g.codec.team_code(team))
    g.play_votes([g.codec.APPROVE] * g.n)
    cards, failed = [], False
    for s in g.pending():
        f = fail and g.is_evil[s] and not failed
        failed |= f
        cards.append(g.codec.FAIL if f else g.codec.SUCCESS)
    g.play_cards(cards)


def test_option_needs_seven_players_and_a_bool():
    with pytest.raises(ValueError, match="7 or more players.*num_players=6"):
        AvalonConfig(6, lady_of_the_lake=True)
    with pytest.raises(ValueError, match="lady_of_the_lake must be a bool"):
        AvalonConfig(7, lady_of_the_lake="yes")


def test_holder_starts_right_of_the_first_leader_and_examines_after_quests_2_3_4():
    g = AvalonGame(CFG, ROLES, leader=3)
    assert g.lady == 2 and g.lady_holders == (2,)
    assert "You hold the Lady of the Lake." in g.seat_lines(2)[0]
    _quest(g, [0, 1])  # quest 1: no Lady
    assert g.phase == "proposal" and g.quest == 1
    _quest(g, [0, 1, 2], fail=False)  # quest 2 -> Lady
    assert g.phase == "lady" and g.actor == 2 and g.quest == 1
    targets = {code - g.codec.LADY0 for code in g.legal_codes(2)}
    assert targets == {0, 1, 3, 4, 5, 6}  # anyone who has not held her (never the holder)
    with pytest.raises(IllegalAction):
        g.step(g.codec.lady(2))
    g.step(g.codec.lady(4))  # the Assassin: evil
    assert g.lady == 4 and g.lady_holders == (2, 4) and g.phase == "proposal" and g.quest == 2
    # Only the holder learns the side; everyone reads who examined whom.
    assert "The Lady of the Lake shows you that Player 4 is EVIL." in g.seat_lines(2)
    for seat in (0, 1, 3, 4, 5, 6):
        assert not any("shows you" in line for line in g.seat_lines(seat))
        assert "Player 2 uses the Lady of the Lake on Player 4, who now holds her." in g.seat_lines(seat)
    # The new holder may not examine a past holder.
    _quest(g, [0, 1, 5], fail=True)  # quest 3 fails -> Lady again
    assert g.phase == "lady" and g.actor == 4
    assert {code - g.codec.LADY0 for code in g.legal_codes(4)} == {0, 1, 3, 5, 6}


def test_no_lady_after_quest_five_or_when_the_game_is_decided():
    g = AvalonGame(CFG, ROLES, leader=0)
    _quest(g, [0, 1])
    _quest(g, [0, 1, 2])
    g.step(g.codec.lady(1))
    _quest(g, [0, 1, 2])  # third success ends the quests: assassination, not the Lady
    assert g.phase == "assassination"


def test_lady_result_is_the_holders_knowledge_in_features():
    g = AvalonGame(CFG, ROLES, leader=3)
    _quest(g, [0, 1])
    _quest(g, [0, 1, 2])
    o = _layout(7).start
    before = features(g, 2)
    g.step(g.codec.lady(5))  # a Minion
    x, other = features(g, 2), features(g, 1)
    assert before[o["known_evil"] + 5] == 0 and x[o["known_evil"] + 5] == 1
    assert other[o["known_evil"] + 5] == 0  # another good seat learns nothing
    assert x[o["lady_holder"] + 5] == 1 and other[o["lady_holder"] + 5] == 1


def test_lady_rules_pass_pettingzoo_api_and_bots_finish_games():
    api_test(raw_env(config=AvalonConfig(8, lady_of_the_lake=True)), num_cycles=200)
    api_test(raw_env(config=AvalonConfig(7, lady_of_the_lake=True), variant="text"), num_cycles=200)
    examined = 0
    for seed in range(40):
        res = play_game([make_player("rule") for _ in range(7)], config=CFG, seed=seed)
        examined += sum(e["type"] == "lady" for e in res["record"]["events"])
        assert res["winner"] in ("good", "evil")
    assert examined > 0


def test_text_reply_examines_a_player():
    env = raw_env(config=CFG, variant="text")
    env.reset(seed=0, options={"roles": ROLES, "leader": 3})
    g = env.game
    _quest(g, [0, 1])
    _quest(g, [0, 1, 2])
    env.agent_selection = env.possible_agents[g.actor]
    assert "LADY: <player>" in env.observe("player_2")["text"]
    env.step("I choose to look at LADY: 6")
    assert g.lady == 6 and np.array_equal(g.lady_holders, (2, 6))


def test_cli_plays_with_the_lady(capsys):
    from arena.cli import main

    assert main(["play", "--players", "7", "--lady", "--discussion-rounds", "0", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "uses the Lady of the Lake on Player" in out
    assert main(["play", "--players", "5", "--lady"]) == 2
    assert "7 or more players" in capsys.readouterr().err
