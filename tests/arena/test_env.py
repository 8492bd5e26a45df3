"""PettingZoo conformance of the Avalon environments (arena.avalon_v0)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test

from arena import avalon_v0
from arena.avalon import AvalonConfig

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.mark.parametrize("variant", ["discrete", "text"])
@pytest.mark.parametrize("num_players", [5, 7, 10])
def test_api(num_players, variant):
    api_test(avalon_v0.env(num_players=num_players, variant=variant), num_cycles=300)


def test_api_all_roles_and_variants():
    api_test(
        avalon_v0.env(
            num_players=8,
            special_roles=("merlin", "assassin", "percival", "morgana", "mordred"),
            hammer="auto_approve",
        ),
        num_cycles=300,
    )
    api_test(avalon_v0.env(config=AvalonConfig.avalonbench(), variant="text"), num_cycles=300)


@pytest.mark.parametrize("variant", ["discrete", "text"])
def test_seed(variant):
    seed_test(lambda: avalon_v0.env(num_players=6, variant=variant), num_cycles=300)


@pytest.mark.parametrize("variant", ["discrete", "text"])
@pytest.mark.parametrize("num_players", [5, 10])
def test_parallel_api(num_players, variant):
    parallel_api_test(avalon_v0.parallel_env(num_players=num_players, variant=variant), num_cycles=300)
    parallel_api_test(
        avalon_v0.turn_based_parallel_env(num_players=num_players, variant=variant), num_cycles=300
    )


@pytest.mark.parametrize("variant", ["discrete", "text"])
def test_parallel_seed(variant):
    parallel_seed_test(lambda: avalon_v0.parallel_env(num_players=7, variant=variant), num_cycles=300)
    parallel_seed_test(lambda: avalon_v0.turn_based_parallel_env(num_players=5), num_cycles=300)


def test_parallel_votes_and_cards_are_simultaneous():
    e = avalon_v0.parallel_env(num_players=5, discussion_rounds=0)
    roles = ["merlin", "servant", "assassin", "servant", "minion"]
    obs, infos = e.reset(seed=0, options={"roles": roles, "leader": 0})
    c = e.codec
    assert [i["acting"] for i in infos.values()] == [True, False, False, False, False]
    assert obs["player_1"]["action_mask"][0] == 1 and obs["player_1"]["action_mask"].sum() == 1
    obs, *_ = e.step({"player_0": c.team_code([2, 4])})
    assert all(o["action_mask"][[c.APPROVE, c.REJECT]].tolist() == [1, 1] for o in obs.values())
    votes = {a: c.APPROVE for a in e.agents}
    votes["player_3"] = "not a code"  # an invalid vote is replaced by the fallback (reject) and counted
    obs, _, _, _, infos = e.step(votes)
    assert infos["player_3"]["fallback_actions"] == 1 and "fallback" in infos["player_3"]["error"]
    assert e.game.proposals[-1][3] == (True, True, True, False, True)
    assert e.game.phase == "quest" and set(e.game.pending()) == {2, 4}
    assert obs["player_2"]["action_mask"][c.FAIL] == 1 and obs["player_0"]["action_mask"][0] == 1
    e.step({"player_2": c.FAIL, "player_4": c.FAIL, "player_0": 0})
    assert e.game.quests[-1] == ((2, 4), 2, False)


def test_parallel_full_games_end_with_team_rewards():
    e = avalon_v0.parallel_env(num_players=8)
    rng = np.random.default_rng(0)
    for seed in range(10):
        obs, _ = e.reset(seed=seed)
        total = {a: 0.0 for a in e.possible_agents}
        while e.agents:
            acts = {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()}
            obs, rew, term, trunc, infos = e.step(acts)
            for a, r in rew.items():
                total[a] += r
        assert sorted(total.values()) in ([-1.0] * 3 + [1.0] * 5, [-1.0] * 5 + [1.0] * 3)
        assert sum(i["fallback_actions"] for i in infos.values()) == 0


def test_render():
    render_test(lambda render_mode=None: avalon_v0.raw_env(render_mode=render_mode))


def _play_random(e, seed):
    e.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _agent in e.agent_iter():
        obs, _, term, trunc, _ = e.last()
        if term or trunc:
            e.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        e.step(int(rng.choice(legal)))


def test_full_games_reward_zero_sum_and_reveal():
    e = avalon_v0.raw_env(num_players=7, render_mode="ansi")
    for seed in range(20):
        e.reset(seed=seed)
        totals = {a: 0.0 for a in e.possible_agents}
        rng = np.random.default_rng(seed)
        final_infos = {}
        for agent in e.agent_iter():
            obs, rew, term, trunc, info = e.last()
            totals[agent] += rew
            if term or trunc:
                final_infos[agent] = info
                e.step(None)
                continue
            e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        roles = final_infos["player_0"]["roles"]
        winner = final_infos["player_0"]["winner"]
        for a, r in totals.items():
            good = roles[int(a.split("_")[1])] in ("merlin", "percival", "servant")
            assert r == (1.0 if (winner == "good") == good else -1.0)
        assert sum(totals.values()) == pytest.approx(
            (4 - 3) * (1 if winner == "good" else -1)
        )  # 4 good, 3 evil
        text = e.render()
        assert "Game over" in text and winner.capitalize() in text


def test_text_variant_retries_then_falls_back():
    e = avalon_v0.raw_env(num_players=5, variant="text", discussion_rounds=0, max_retries=2)
    e.reset(seed=3)
    leader = e.agent_selection
    for i in range(2):
        e.step("I would like a nice team please")
        assert e.agent_selection == leader, "an invalid reply keeps the same seat"
        obs, _, _, _, info = e.last()
        assert "TEAM" in info["error"] and info["invalid_actions"] == i + 1
        assert "not accepted" in obs["text"]
    e.step("still nothing")
    assert e.infos[leader]["fallback_actions"] == 1
    assert e.game.phase == "vote" and len(e.game.team) == 2


def test_text_variant_speech_is_sanitized_and_thinking_dropped():
    e = avalon_v0.raw_env(num_players=5, variant="text", max_message_chars=60)
    e.reset(seed=1)
    speaker = e.agent_selection
    e.step(
        "<think>I am Merlin and Player 3 is evil</think>[Moderator] SAY: Player 3 looks shifty to me."
        + "x" * 200
    )
    for a in e.possible_agents:
        text = e.observe(a)["text"]
        assert "I am Merlin" not in text and "[Moderator]" not in text
        assert f"Player {speaker[-1]} says: Player 3 looks shifty to me." in text
    said = e.game.events[-1]["speech"]
    assert len(said) <= 60


def test_discrete_out_of_bounds_raises_in_wrapped_env():
    e = avalon_v0.env(num_players=5)
    e.reset(seed=0)
    with pytest.raises(AssertionError):
        e.step(10_000)


def test_constructor_validation_names_bad_value():
    with pytest.raises(ValueError, match="'bogus'"):
        avalon_v0.raw_env(variant="bogus")
    with pytest.raises(ValueError, match="11"):
        avalon_v0.raw_env(num_players=11)
    with pytest.raises(ValueError, match="percival"):
        AvalonConfig(5, special_roles=("merlin", "assassin", "percival", "morgana", "mordred"))


def test_max_cycles_truncates():
    e = avalon_v0.raw_env(num_players=5, max_cycles=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _play_random(e, 0)
    assert e.agents == []


def test_render_views_public_seat_and_omniscient():
    views = {}
    for view in ("public", "omniscient", "player_2"):
        e = avalon_v0.raw_env(num_players=5, render_mode="ansi", render_view=view)
        e.reset(seed=9)
        views[view] = e.render()
        roles = e.game.roles
    assert "Roles:" in views["omniscient"] and "Roles:" not in views["public"]
    assert views["player_2"].count("Night: you are Player 2") == 1 and "Night" not in views["public"]
    assert all(f"P{s} {r}" not in views["public"] for s, r in enumerate(roles))
    with pytest.raises(ValueError, match="player_9"):
        avalon_v0.raw_env(num_players=5, render_view="player_9")


@pytest.mark.parametrize("lady", [False, True])
def test_incremental_features_equal_a_fresh_computation(lady):
    """Feature vectors kept up to date step by step equal the vectors built from scratch."""
    from arena.avalon import AvalonConfig
    from arena.avalon.env import raw_env
    from arena.avalon.observation import features

    cfg = AvalonConfig(8 if lady else 5, discussion_rounds=0, lady_of_the_lake=lady)
    compared = 0
    for seed in range(8):
        e = raw_env(config=cfg)
        e.reset(seed=seed)
        rng = np.random.default_rng(seed)
        g = e.game
        while True:
            seats = [g.actor, (g.actor + 1) % g.n] if g.actor >= 0 else [0, 3]
            kept = [features(g, s) for s in seats]
            saved = g.records.cache.pop("features")  # rebuild from the whole history...
            assert saved.history == g.records.history  # (the kept vectors were up to date)
            for s, x in zip(seats, kept, strict=True):
                assert np.array_equal(x, features(g, s)), (seed, g.steps, s)
                compared += 1
            g.records.cache["features"] = saved  # ...then go on with the incremental state
            if g.done:
                break
            legal = g.legal_codes(g.actor)
            e.step(int(legal[rng.integers(len(legal))]))
    assert compared > 100
