"""Baseline bots: legal play from the information set only, determinism, and measured strength."""

from __future__ import annotations

import pytest

from arena.avalon import AvalonConfig, AvalonGame
from arena.avalon.bots import RandomBot, RuleBot, make_player
from arena.avalon.play import play_game
from arena.avalon.tournament import side_matchup

ALL_ROLES_8 = AvalonConfig(8, special_roles=("merlin", "assassin", "percival", "morgana", "mordred"))
ALL_ROLES_10 = AvalonConfig(
    10, special_roles=("merlin", "assassin", "percival", "morgana", "mordred", "oberon")
)


@pytest.mark.parametrize(
    "config", [AvalonConfig(5), AvalonConfig(7), ALL_ROLES_8, ALL_ROLES_10, AvalonConfig.avalonbench()]
)
@pytest.mark.parametrize("kind", ["random", "rule", "rule_votes"])
def test_bots_play_only_legal_actions(config, kind):
    for seed in range(15):
        res = play_game([make_player(kind) for _ in range(config.num_players)], config=config, seed=seed)
        assert res["winner"] in ("good", "evil")
        assert sum(res["invalid_actions"]) == 0, "bots never send an illegal action"


def test_games_are_deterministic_given_the_seed():
    def run(seed):
        return play_game(
            [RuleBot() if i % 2 else RandomBot() for i in range(6)], config=AvalonConfig(6), seed=seed
        )

    a, b, c = run(11), run(11), run(12)
    assert a == b
    assert a["record"] != c["record"]


def test_rule_good_proposes_from_consistent_hypotheses():
    # 5 players; seat 0 is a servant; quest 1 with team [1, 2] failed once: one of them is evil.
    cfg = AvalonConfig(5, discussion_rounds=0)
    g = AvalonGame(cfg, ["servant", "minion", "merlin", "assassin", "servant"], leader=0)
    c = g.codec
    g.step(c.team_code([1, 2]))
    for _ in range(5):
        g.step(c.APPROVE)
    g.step(c.FAIL)  # seat 1 (minion)
    g.step(c.SUCCESS)  # seat 2 (merlin)
    assert g.quests[-1][1] == 1
    # Seat 1 now leads quest 2 (team of 3); the servant at seat 0 votes on a team with both suspects.
    g.step(c.team_code([0, 1, 2]))
    bot = RuleBot()
    bot.reset(0, seed=0)
    assert bot.act(g.view(0)) == c.REJECT
    g2 = AvalonGame(cfg, ["servant", "minion", "merlin", "assassin", "servant"], leader=0)
    assert RuleBot()._good_reasoning(g2.view(0), 2)[1][0] == 0.0  # a servant never suspects itself


def test_rule_bots_approve_the_fifth_proposal_and_evil_rejects_it():
    cfg = AvalonConfig(6, discussion_rounds=0)
    g = AvalonGame(cfg, ["servant", "servant", "merlin", "servant", "assassin", "minion"], leader=0)
    c = g.codec
    for _ in range(4):
        g.step(c.team_code([4, 5]))
        for _ in range(6):
            g.step(c.REJECT)
    assert g.rejections == 4
    g.step(c.team_code([4, 5]))  # an all-evil team: every good rule bot still approves the fifth
    for seat in range(6):
        bot = RuleBot()
        bot.reset(seat, 0)
        want = c.REJECT if g.is_evil[seat] else c.APPROVE
        assert bot.act(g.view(seat)) == want


def test_evil_bots_coordinate_fail_cards():
    cfg = AvalonConfig(7, discussion_rounds=0)
    roles = ["servant", "servant", "merlin", "servant", "assassin", "minion", "minion"]
    g = AvalonGame(cfg, roles, leader=0)
    c = g.codec
    g.step(c.team_code([4, 5]))
    for _ in range(7):
        g.step(c.APPROVE)
    votes = []
    for seat in (4, 5):
        bot = RuleBot()
        bot.reset(seat, 0)
        votes.append(bot.act(g.view(seat)))
        g.step(votes[-1])
    assert votes == [c.FAIL, c.SUCCESS], "exactly the needed number of Fail cards"


@pytest.mark.parametrize("n", [5, 7, 10])
def test_baselines_rule_good_beats_random_evil(n):
    res = side_matchup("rule", "random", num_games=100, config=AvalonConfig(n), seed=0)
    rnd = side_matchup("random", "random", num_games=100, config=AvalonConfig(n), seed=0)
    assert res["good_win"]["ci95"][0] > rnd["good_win"]["win_rate"], (res, rnd)


@pytest.mark.parametrize("n", [5, 10])
def test_baselines_rule_evil_beats_random_good(n):
    res = side_matchup("random", "rule", num_games=100, config=AvalonConfig(n), seed=0)
    rnd = side_matchup("random", "random", num_games=100, config=AvalonConfig(n), seed=0)
    assert res["good_win"]["ci95"][1] < rnd["good_win"]["win_rate"], (res, rnd)


def test_vote_reading_assassin_finds_rule_merlin_more_often():
    cfg = AvalonConfig(5)
    plain = side_matchup("rule", "rule", num_games=150, config=cfg, seed=1)["end_reasons"]
    votes = side_matchup("rule", "rule_votes", num_games=150, config=cfg, seed=1)["end_reasons"]
    assert votes.get("assassination_hit", 0) > plain.get("assassination_hit", 0)
