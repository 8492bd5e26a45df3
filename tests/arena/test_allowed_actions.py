"""``info["allowed_actions"]`` on Avalon: every legal reply as complete text, and nothing else accepted."""

from __future__ import annotations

import numpy as np
import pytest

from arena.avalon.actions import ParseError, parse_action
from arena.avalon.env import raw_env
from arena.avalon.parallel import parallel_env
from arena.avalon.single_seat import SingleSeat

KEY = "allowed-actions-test"


def _codes(texts, game, codec):
    """The codes ``texts`` parse to in the game's current phase (each must parse)."""
    return [parse_action(t, game.phase, codec, team_size=game.team_size).code for t in texts]


def _seat(num_players, reset, actions):
    env = SingleSeat(num_players=num_players, opponents="random", deal_key=KEY)
    env.reset(**reset)
    for action in actions:
        env.step(action)
    return env


def _not_listed(allowed, codec, rng):
    """A reply of the protocol that the list does not hold (another phase's, or another team)."""
    every = [codec.describe(c) for c in range(1, codec.size)]
    return str(rng.choice([t for t in every if t not in allowed]))


@pytest.mark.parametrize("num_players", [5, 7])
def test_single_seat_lists_what_it_accepts_and_refuses_the_rest(num_players):
    for episode in range(2):
        rng = np.random.default_rng(episode)
        reset = {"seed": episode, "options": {"split": "dev", "index": episode}}
        env = _seat(num_players, reset, [])
        _, info = env.reset(**reset)
        taken, done, listed, phases = [], False, 0, set()
        while not done:
            allowed = info["allowed_actions"]
            game, codec, seat = env._aec.game, env._aec.codec, env.seat
            if allowed is None:
                assert game.phase == "discussion"  # speech is free text
                action = "PASS"
            else:
                assert isinstance(allowed, list) and allowed and all(isinstance(a, str) for a in allowed)
                assert len(set(allowed)) == len(allowed)
                # Each string parses to a legal code, and together they are the whole legal set.
                assert sorted(_codes(allowed, game, codec)) == sorted(game.legal_codes(seat))
                for candidate in allowed:  # each one, played from here, is accepted
                    probe = _seat(num_players, reset, taken)
                    assert probe.step(candidate)[4]["action_valid"], (game.phase, candidate)
                    listed += 1
                probe = _seat(num_players, reset, taken)
                refused = _not_listed(allowed, codec, rng)
                assert not probe.step(refused)[4]["action_valid"], (game.phase, refused)
                action = allowed[int(rng.integers(len(allowed)))]
                phases.add(game.phase)
            _, _, done, _, info = env.step(action)
            assert info["action_valid"], (action, info["error"])
            taken.append(action)
        assert info["allowed_actions"] == []  # the game is over: nothing more is accepted
        assert {"vote"} <= phases and listed > 0


def test_ten_players_list_every_team_as_text():
    env = SingleSeat(num_players=10, opponents="random", deal_key=KEY)
    _, info = env.reset(seed=0, options={"split": "dev", "index": 0})
    seen, done = 0, False
    while not done:
        game = env._aec.game
        allowed = info["allowed_actions"]
        if game.phase == "proposal":
            size = game.team_size
            assert len(allowed) == len(game.legal_codes(env.seat))  # C(10, size): 120, 210 or 252
            assert all(a.startswith("TEAM: ") and len(a[6:].split(", ")) == size for a in allowed)
            assert sorted(_codes(allowed, game, env._aec.codec)) == sorted(game.legal_codes(env.seat))
            seen += 1
        action = "PASS" if allowed is None else allowed[-1]
        _, _, done, _, info = env.step(action)
        assert info["action_valid"]
    assert seen > 0


@pytest.mark.parametrize("rules", [{"num_players": 6}, {"num_players": 7, "lady_of_the_lake": True}])
def test_text_env_lists_the_mask_as_text_for_every_seat(rules):
    env = raw_env(variant="text", **rules)
    rng = np.random.default_rng(3)
    phases = set()
    for seed in range(6):
        env.reset(seed=seed)
        for agent in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            mask = obs["action_mask"]
            assert obs["legal_mask"] is mask  # the deprecated name of the same array
            game = env.game
            for other in env.agents:  # a seat that is not acting has nothing to send
                if other != agent:
                    assert env.infos[other]["allowed_actions"] == [], other
            allowed = info["allowed_actions"]
            if allowed is None:
                assert game.phase == "discussion"
                env.step("PASS")
                continue
            assert sorted(_codes(allowed, game, env.codec)) == np.flatnonzero(mask).tolist()
            phases.add(game.phase)
            env.step(allowed[int(rng.integers(len(allowed)))])
            assert env.infos[agent]["invalid_actions"] == 0
    assert {"proposal", "vote", "quest", "assassination"} <= phases
    assert ("lady" in phases) == rules.get("lady_of_the_lake", False)


def test_parallel_text_env_lists_each_due_seat_its_replies():
    env = parallel_env(num_players=5, variant="text")
    rng = np.random.default_rng(0)
    obs, infos = env.reset(seed=1)
    while env.agents:
        game = env.game
        actions = {}
        for agent in env.agents:
            allowed = infos[agent]["allowed_actions"]
            assert obs[agent]["legal_mask"] is obs[agent]["action_mask"]
            if allowed is None:
                assert game.phase == "discussion" and infos[agent]["acting"]
                actions[agent] = "PASS"
            elif not allowed:
                assert not infos[agent]["acting"]
                actions[agent] = "PASS"  # ignored: the seat has nothing to do
            else:
                codes = _codes(allowed, game, env.codec)
                assert sorted(codes) == np.flatnonzero(obs[agent]["action_mask"]).tolist()
                actions[agent] = allowed[int(rng.integers(len(allowed)))]
        obs, _, terms, truncs, infos = env.step(actions)
        assert all(i["invalid_actions"] == 0 for i in infos.values())
        if all(terms.values()) or all(truncs.values()):
            break


def test_a_listed_team_that_the_protocol_would_refuse_cannot_exist():
    """Templates are gone: every proposal reply is a complete team the text protocol reads."""
    env = raw_env(num_players=5, variant="text", discussion_rounds=0)
    env.reset(seed=0)
    allowed = env.infos[env.agent_selection]["allowed_actions"]
    assert not any("<" in a for a in allowed)
    with pytest.raises(ParseError):
        parse_action("TEAM: <2 distinct players from 0 to 4>", "proposal", env.codec, team_size=2)
