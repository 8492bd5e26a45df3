"""Property tests of the Avalon rules engine for every player count (5-10) and role set."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.avalon import AvalonConfig, AvalonGame, IllegalAction, night_knowledge
from arena.avalon.rules import EVIL_ROLES, GOOD_ROLES, SETUP

OPTIONAL = ("percival", "morgana", "mordred", "oberon")


@st.composite
def configs(draw):
    n = draw(st.integers(5, 10))
    good, evil = SETUP[n][:2]
    specials = ["merlin", "assassin"]
    for r in OPTIONAL:
        if draw(st.booleans()):
            trial = specials + [r]
            if sum(x in GOOD_ROLES for x in trial) <= good and sum(x in EVIL_ROLES for x in trial) <= evil:
                specials = trial
    if draw(st.integers(0, 9)) == 0:
        specials = []  # no Merlin, no Assassin
    return AvalonConfig(
        n,
        special_roles=tuple(specials),
        hammer=draw(st.sampled_from(["evil_wins", "auto_approve"])),
        merlin_sees_oberon=draw(st.booleans()),
        discussion_rounds=draw(st.integers(0, 2)),
    )


def test_setup_table_matches_rulebook():
    assert {n: (g, e) for n, (g, e, _, _) in SETUP.items()} == {
        5: (3, 2),
        6: (4, 2),
        7: (4, 3),
        8: (5, 3),
        9: (6, 3),
        10: (6, 4),
    }
    assert (
        SETUP[5][2] == (2, 3, 2, 3, 3) and SETUP[6][2] == (2, 3, 4, 3, 4) and SETUP[7][2] == (2, 3, 3, 4, 4)
    )
    for n in (8, 9, 10):
        assert SETUP[n][2] == (3, 4, 4, 5, 5)
    for n in range(5, 11):
        assert SETUP[n][3] == ((1, 1, 1, 2, 1) if n >= 7 else (1, 1, 1, 1, 1))


@settings(max_examples=60, deadline=None)
@given(cfg=configs(), seed=st.integers(0, 2**32 - 1))
def test_night_knowledge_matches_table(cfg, seed):
    game = AvalonGame.deal(cfg, np.random.default_rng(seed))
    roles = game.roles
    seats = {r: [s for s, x in enumerate(roles) if x == r] for r in set(roles)}
    assert sum(game.is_evil) == cfg.num_evil and len(roles) == cfg.num_players
    for s, role in enumerate(roles):
        k = night_knowledge(cfg, roles, s)
        assert s not in k.evil | k.good | k.merlin_candidates
        if role == "merlin":
            expected = {
                j
                for j, r in enumerate(roles)
                if r in EVIL_ROLES and r != "mordred" and (cfg.merlin_sees_oberon or r != "oberon")
            }
            assert k.evil == expected and not k.merlin_candidates
        elif role == "percival":
            assert k.merlin_candidates == set(seats.get("merlin", []) + seats.get("morgana", []))
            assert not k.evil
        elif role in ("servant", "oberon"):
            assert k == type(k)()
        else:  # assassin, morgana, mordred, minion
            assert k.evil == {j for j, r in enumerate(roles) if r in EVIL_ROLES and r != "oberon" and j != s}


def _check_game(cfg: AvalonConfig, seed: int) -> AvalonGame:
    rng = np.random.default_rng(seed)
    g = AvalonGame.deal(cfg, rng)
    n = cfg.num_players
    n_proposals = 0
    while not g.done:
        seat, phase = g.actor, g.phase
        legal = g.legal_codes(seat)
        assert legal, f"acting seat {seat} has no legal action in {phase}"
        for other in range(n):
            if other != seat:
                assert g.legal_codes(other) == ()
        if phase == "quest" and not g.is_evil[seat]:
            assert g.codec.FAIL not in legal, "good players can never play Fail"
        if phase == "assassination":
            assert seat == g.roles.index("assassin")
            targets = {g.codec.decode(c)[1] for c in legal}
            assert targets == {j for j in range(n) if j != seat and j not in g.knowledge[seat].evil}
        before = (g.leader, g.quest, g.rejections, len(g.quests), len(g.proposals))
        code = int(legal[rng.integers(len(legal))])
        if phase == "proposal":
            team = g.codec.decode(code)[1]
            assert len(team) == cfg.team_sizes[g.quest] == len(set(team))
        g.step(code)
        leader0, quest0, rej0, nq0, np0 = before
        if len(g.proposals) > np0:  # a proposal was resolved
            n_proposals += 1
            _, lead, team, votes, approved = g.proposals[-1]
            assert lead == leader0 and g.leader == (leader0 + 1) % n, "leader passes after every proposal"
            if votes is None:
                assert cfg.hammer == "auto_approve" and rej0 == 4 and approved
            else:
                assert approved == (2 * sum(votes) > n), "strict majority; tie rejects"
                assert not (cfg.hammer == "auto_approve" and rej0 == 4)
            if approved:
                assert g.rejections == 0 and g.phase == "quest"
            elif rej0 == 4:
                assert cfg.hammer == "evil_wins" and g.done and g.end_reason == "five_rejections"
                assert g.winner == "evil"
            else:
                assert g.rejections == rej0 + 1
        if len(g.quests) > nq0:
            team, fails, ok = g.quests[-1]
            need = 2 if (quest0 == 3 and n >= 7) else 1
            assert ok == (fails < need)
            assert fails <= sum(g.is_evil[j] for j in team)
    wins = sum(q[2] for q in g.quests)
    fails = len(g.quests) - wins
    assert n_proposals <= 25 and len(g.quests) <= 5
    if g.end_reason == "three_fails":
        assert fails == 3 and g.winner == "evil"
    elif g.end_reason.startswith("assassination"):
        assert wins == 3 and "assassin" in g.roles
        assert (g.roles[g.assassin_target] == "merlin") == (g.winner == "evil")
    elif g.end_reason == "three_successes_no_assassin":
        assert wins == 3 and "assassin" not in g.roles and g.winner == "good"
    else:
        assert g.end_reason == "five_rejections"
    return g


@settings(max_examples=150, deadline=None)
@given(cfg=configs(), seed=st.integers(0, 2**32 - 1))
def test_random_games_follow_the_rules(cfg, seed):
    _check_game(cfg, seed)


@pytest.mark.parametrize("n", range(5, 11))
def test_every_player_count_reaches_every_ending(n):
    seen = set()
    for hammer in ("evil_wins", "auto_approve"):
        cfg = AvalonConfig(n, hammer=hammer, discussion_rounds=0)
        for seed in range(150):
            seen.add(_check_game(cfg, seed).end_reason)
    assert {"three_fails", "five_rejections", "assassination_hit", "assassination_miss"} <= seen


def test_two_fail_rule_on_quest_four():
    cfg = AvalonConfig(7, discussion_rounds=0)
    roles = ["merlin", "servant", "servant", "servant", "assassin", "minion", "minion"]
    g = AvalonGame(cfg, roles, leader=0)
    c = g.codec

    def run_quest(team, fails_by):
        g.step(c.team_code(team))
        for _ in range(7):
            g.step(c.APPROVE)
        for s in sorted(team):  # quest cards are played in seat order
            g.step(c.FAIL if s in fails_by else c.SUCCESS)

    run_quest([0, 1], [])  # Q1 success
    run_quest([4, 1, 2], [4])  # Q2 fails
    run_quest([0, 1, 2], [])  # Q3 success
    run_quest([4, 0, 1, 2], [4])  # Q4: a single Fail is not enough with 7 players
    assert g.quests[-1] == ((0, 1, 2, 4), 1, True)
    assert g.phase == "assassination" and g.actor == 4


def test_illegal_actions_are_refused_with_reason():
    g = AvalonGame(
        AvalonConfig(5, discussion_rounds=0), ["merlin", "servant", "servant", "assassin", "minion"], 0
    )
    with pytest.raises(IllegalAction, match="TEAM: 0, 1, 2"):
        g.step(g.codec.team_code([0, 1, 2]))  # quest 1 needs 2
    g.step(g.codec.team_code([0, 1]))
    for _ in range(5):
        g.step(g.codec.APPROVE)
    with pytest.raises(IllegalAction, match="QUEST: fail"):
        g.step(g.codec.FAIL)  # Merlin is good


def test_bad_config_values_are_named():
    for kwargs, bad in [
        ({"num_players": 4}, "4"),
        ({"hammer": "x"}, "'x'"),
        ({"special_roles": ("merlin",)}, "Assassin"),
        ({"discussion_rounds": -1}, "-1"),
    ]:
        with pytest.raises(ValueError, match=bad):
            AvalonConfig(**kwargs)


@pytest.mark.parametrize("n", [5, 8])
def test_deal_is_uniform_over_seats(n):
    cfg = AvalonConfig(n, special_roles=("merlin", "assassin", "percival", "morgana"))
    rng = np.random.default_rng(123)
    games = 4000
    merlin, leader = np.zeros(n), np.zeros(n)
    for _ in range(games):
        g = AvalonGame.deal(cfg, rng)
        merlin[g.roles.index("merlin")] += 1
        leader[g.leader] += 1
    expected = games / n
    tol = 4 * np.sqrt(expected * (1 - 1 / n))  # four standard deviations
    assert np.all(np.abs(merlin - expected) < tol) and np.all(np.abs(leader - expected) < tol)


def test_full_knowledge_gives_percival_nothing():
    cfg = AvalonConfig(7, special_roles=("merlin", "percival", "assassin", "morgana"), full_knowledge=True)
    roles = ["merlin", "percival", "servant", "servant", "assassin", "morgana", "minion"]
    k = night_knowledge(cfg, roles, 1)
    assert k.merlin_candidates == frozenset() and k.evil == frozenset() and k.good == frozenset()
    assert night_knowledge(cfg, roles, 0).evil == {4, 5, 6}  # Merlin still sees every evil side


@pytest.mark.parametrize("specials", [("percival", "morgana"), ("percival",), ("morgana",)])
def test_percival_and_morgana_need_merlin(specials):
    with pytest.raises(ValueError, match="need Merlin"):
        AvalonConfig(7, special_roles=specials)


def test_percival_night_line_names_morgana_only_when_she_plays():
    roles = ["merlin", "percival", "servant", "servant", "assassin", "mordred", "minion"]
    cfg = AvalonConfig(7, special_roles=("merlin", "percival", "assassin", "mordred"))
    line = AvalonGame(cfg, roles, 0).seat_lines(1)[0]
    assert "Morgana" not in line and "Merlin is Player 0." in line
    roles[5] = "morgana"
    cfg = AvalonConfig(7, special_roles=("merlin", "percival", "assassin", "morgana"))
    line = AvalonGame(cfg, roles, 0).seat_lines(1)[0]
    assert "Merlin is among: Player 0, Player 5 (Morgana appears the same)." in line
