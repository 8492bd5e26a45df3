"""arena.diplomacy_v0: PettingZoo API, adjudication spot-checks (DATC cases), order and press
handling, privacy of press, bots, tournaments and the viewer. Skipped without the optional engine."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import numpy as np
import pytest

pytest.importorskip("diplomacy", reason="the optional AGPL 'diplomacy' engine is not installed")

from pettingzoo.test import api_test, parallel_api_test  # noqa: E402

from arena import diplomacy_v0  # noqa: E402
from arena.diplomacy.bots import make_bot  # noqa: E402
from arena.diplomacy.game import POWERS, DiplomacyConfig, DiplomacyGame  # noqa: E402
from arena.diplomacy.orders import check_orders, read_press  # noqa: E402
from arena.diplomacy.play import play_game  # noqa: E402
from arena.diplomacy.tournament import run_tournament  # noqa: E402
from arena.diplomacy.viewer import phase_svg, serve_record  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _aec_play(env, replies):
    """Step an AEC env; ``replies(agent, obs, info)`` gives each live power's action."""
    for agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        env.step(None if term or trunc else replies(agent, obs, info))


# -- PettingZoo API ---------------------------------------------------------------------------
@pytest.mark.parametrize("press_rounds", [0, 1])
def test_api_tests_pass(press_rounds):
    api_test(diplomacy_v0.env(max_year=1902, press_rounds=press_rounds), num_cycles=300)
    parallel_api_test(diplomacy_v0.parallel_env(max_year=1902, press_rounds=press_rounds), num_cycles=300)


def test_pettingzoo_registry_makes_both_views():
    import pettingzoo

    import arena  # noqa: F401 - registers arena/diplomacy-v0

    aec = pettingzoo.make("aec", "arena/diplomacy-v0", max_year=1901)
    par = pettingzoo.make("parallel", "arena/diplomacy-v0", max_year=1901)
    aec.reset(seed=0)
    obs, _ = par.reset(seed=0)
    assert aec.agent_selection == "austria" and set(obs) == set(diplomacy_v0.raw_env().possible_agents)


def test_constructor_arguments_are_checked():
    with pytest.raises(ValueError, match="max_year"):
        diplomacy_v0.env(max_year=1800)
    with pytest.raises(ValueError, match="press_rounds"):
        diplomacy_v0.env(press_rounds=-1)
    with pytest.raises(ValueError, match="render_mode"):
        diplomacy_v0.env(render_mode="png")
    e = diplomacy_v0.raw_env()
    with pytest.raises(ValueError, match="unknown powers"):
        e.reset(options={"start": {"units": {"PRUSSIA": ["A BER"]}}})
    with pytest.raises(ValueError, match="S1901M"):
        e.reset(options={"start": {"phase": "spring"}})


# -- adjudication spot-checks (DATC cases, through the environment) -----------------------------
def _one_phase(start, orders):
    """Play one movement phase from ``start`` with ``{power: orders text}``; return the game."""
    e = diplomacy_v0.raw_env(max_year=1905)
    e.reset(seed=0, options={"start": start})
    g = e.game
    while g.phase == start.get("phase", "S1901M") and not g.done:
        agent = e.agent_selection
        e.step(orders.get(agent.upper(), "PASS"))
        assert e.infos[agent]["error"] == "", e.infos[agent]["error"]
    return g


def test_datc_6_a_1_move_to_a_non_neighbour_is_refused():
    e = diplomacy_v0.raw_env(max_year=1905)
    e.reset(options={"start": {"units": {"ENGLAND": ["F NTH"]}}})
    assert e.agent_selection == "england"
    e.step("F NTH - PIC")
    assert "not a legal order" in e.infos["england"]["error"]
    assert e.infos["england"]["invalid_actions"] == 1 and e.agent_selection == "england"  # asked again
    assert "F NTH - PIC" not in e.infos["england"]["allowed_actions"]  # one unit: its orders are listed


def test_datc_6_a_11_simple_bounce():
    g = _one_phase(
        {"units": {"AUSTRIA": ["A VIE"], "ITALY": ["A VEN"]}},
        {"AUSTRIA": "A VIE - TYR", "ITALY": "A VEN - TYR"},
    )
    assert g.units("AUSTRIA") == ["A VIE"] and g.units("ITALY") == ["A VEN"]
    assert g.history[-1]["results"] == {"A VIE": ["bounce"], "A VEN": ["bounce"]}


def test_datc_6_c_1_three_army_circular_movement():
    g = _one_phase(
        {"units": {"TURKEY": ["F ANK", "A CON", "A SMY"]}},
        {"TURKEY": "F ANK - CON\nA CON - SMY\nA SMY - ANK"},
    )
    assert sorted(g.units("TURKEY")) == ["A ANK", "A SMY", "F CON"]


def test_datc_6_d_1_supported_hold_can_prevent_dislodgement():
    g = _one_phase(
        {"units": {"AUSTRIA": ["F ADR", "A TRI"], "ITALY": ["A VEN", "A TYR"]}},
        {"AUSTRIA": "F ADR S A TRI - VEN\nA TRI - VEN", "ITALY": "A VEN H\nA TYR S A VEN"},
    )
    assert "A VEN" in g.units("ITALY") and "A TRI" in g.units("AUSTRIA")
    assert g.phase == "F1901M"  # nobody dislodged: no retreat phase


def test_convoyed_army_crosses_the_north_sea():
    g = _one_phase(
        {"units": {"ENGLAND": ["A LON", "F NTH"]}},
        {"ENGLAND": "A LON - BEL VIA\nF NTH C A LON - BEL"},
    )
    assert sorted(g.units("ENGLAND")) == ["A BEL", "F NTH"]


def test_dislodged_unit_retreats_but_not_where_the_attack_came_from():
    e = diplomacy_v0.raw_env(max_year=1905)
    e.reset(options={"start": {"units": {"AUSTRIA": ["A BOH", "A TYR"], "GERMANY": ["A MUN"]}}})
    _orders = {"austria": "A BOH - MUN\nA TYR S A BOH - MUN", "germany": "A MUN H"}
    while e.game.phase == "S1901M":
        e.step(_orders[e.agent_selection])
    g = e.game
    assert g.phase == "S1901R" and e.agent_selection == "germany"
    legal = e.infos["germany"]["legal_orders"]["MUN"]
    assert "A MUN D" in legal and "A MUN R BOH" not in legal and "A MUN R RUH" in legal
    e.step("A MUN R RUH")
    assert g.units("GERMANY") == ["A RUH"] and "A MUN" in g.units("AUSTRIA")


def _replay(start, replies, press_rounds=0):
    """A text env from ``start`` after the replies ``[(agent, reply), ...]``."""
    e = diplomacy_v0.raw_env(max_year=1902, press_rounds=press_rounds)
    e.reset(seed=0, options={"start": start})
    for agent, reply in replies:
        assert e.agent_selection == agent
        e.step(reply)
    return e


@pytest.mark.parametrize("press_rounds", [0, 1])
def test_allowed_actions_list_one_units_replies_and_legal_orders_every_units_orders(press_rounds):
    start = {"units": {"FRANCE": ["A PAR"], "GERMANY": ["A MUN", "A BER"], "ITALY": ["A VEN"]}}
    e = _replay(start, [], press_rounds)
    rng = np.random.default_rng(press_rounds)
    played, listed, stages = [], 0, set()
    while not e.game.done and e.game.phase[1:5] == "1901":
        agent = e.agent_selection
        info = e.infos[agent]
        for other in e.agents:  # a power that is not due has nothing to send
            if other != agent and not e.infos[other]["acting"]:
                assert e.infos[other]["allowed_actions"] == [] and e.infos[other]["legal_orders"] == {}
        allowed, orders = info["allowed_actions"], info["legal_orders"]
        stages.add(info["stage"])
        if info["stage"] == "press":
            assert allowed is None and orders == {}  # press is free text
            reply = "PASS"
        elif len(orders) > 1:
            assert allowed is None  # a set of orders, one per unit, is not one listed reply
            assert all(isinstance(unit, list) and unit for unit in orders.values())
            for order in (o for unit in orders.values() for o in unit):  # each one is a legal order line
                assert check_orders(e.game, info["power"], order)[1] == [], order
            assert info["legal_actions"] == [o for unit in orders.values() for o in unit]  # the deprecated list
            reply = "\n".join(str(rng.choice(unit)) for unit in orders.values())
        else:
            assert allowed == [*next(iter(orders.values())), "PASS"], allowed
            for candidate in allowed:  # each listed reply, played from here, is accepted as it is
                probe = _replay(start, played, press_rounds)
                probe.step(candidate)
                assert probe.infos[agent]["invalid_actions"] == 0 and probe.agent_selection != agent, candidate
                listed += 1
            probe = _replay(start, played, press_rounds)
            probe.step("A PAR - MOS")  # a reply the list does not hold is refused
            assert probe.infos[agent]["invalid_actions"] == 1
            reply = allowed[int(rng.integers(len(allowed)))]
        played.append((agent, reply))
        e.step(reply)
    assert listed > 0 and ("press" in stages) == (press_rounds > 0)


# -- orders, press, retries -------------------------------------------------------------------
def test_order_reader_accepts_legal_lines_in_any_case_and_refuses_the_rest():
    g = DiplomacyGame()
    reply = "<think>A PAR - MUN</think>ORDERS: a par - bur; - F BRE  -  MAO\nA MAR H"
    orders, errors = check_orders(g, "FRANCE", reply)
    assert orders == ["A PAR - BUR", "F BRE - MAO", "A MAR H"] and errors == []
    orders, errors = check_orders(g, "FRANCE", "A MUN - BUR\nA PAR - BUR\nA PAR H\nhello")
    assert orders == ["A PAR - BUR"] and len(errors) == 3
    assert check_orders(g, "FRANCE", "PASS") == ([], [])
    assert check_orders(g, "FRANCE", 17)[1] == ["orders must be text, got int"]


def test_builds_are_limited_to_the_power_s_count():
    g = DiplomacyGame(start={"phase": "W1901A", "units": {"FRANCE": ["A PAR"]},
                             "centers": {"FRANCE": ["PAR", "MAR", "BRE", "SPA"]}})
    assert g.acting == ["FRANCE"] and g.builds("FRANCE") == 3
    orders, errors = check_orders(g, "FRANCE", "A MAR B\nF BRE B\nWAIVE\nA MAR B")
    assert orders == ["A MAR B", "F BRE B", "WAIVE"] and len(errors) == 1


def test_press_reader():
    sent, errors = read_press("TO england: hi\nTO ALL:  peace \nTO PRUSSIA: x\nTO FRANCE: me\nhello", "FRANCE", 3)
    assert sent == [("ENGLAND", "hi"), ("ALL", "pea")]
    assert len(errors) == 3
    sent, errors = read_press("\n".join(f"TO ALL: {i}" for i in range(50)), "FRANCE", 400)
    assert len(sent) == 7 and len(errors) == 43 and "at most 7" in errors[0]


def test_env_survives_garbage_and_retries_then_drops_bad_lines():
    e = diplomacy_v0.raw_env(max_year=1901, max_retries=1)
    e.reset(seed=0)
    e.step(12345)  # not text: asked again
    assert e.agent_selection == "austria" and "must be text" in e.infos["austria"]["error"]
    e.step("A VIE - GAL\nnonsense")  # second try: the good line is played, the bad one dropped
    assert e.agent_selection == "england" and "dropped" in e.infos["austria"]["error"]
    assert e.infos["austria"]["invalid_actions"] == 2
    assert e.game.submitted["AUSTRIA"] == ["A VIE - GAL"]
    rng = np.random.default_rng(0)
    _aec_play(e, lambda a, o, i: "".join(rng.choice(list("AFPRS- \n;<>xyz"), size=30)))
    assert e.game.done


def test_press_reaches_only_its_readers():
    e = diplomacy_v0.raw_env(max_year=1901, press_rounds=1)
    e.reset(seed=0)
    assert e.infos["austria"]["stage"] == "press"
    notes = {"austria": "TO ITALY: secret alpine deal", "france": "TO ALL: public hello"}
    for _ in POWERS:
        e.step(notes.get(e.agent_selection, "PASS"))
    assert e.game.stage == "orders"
    text = {a: e.observe(a)["text"] for a in e.possible_agents}
    for a in e.possible_agents:
        assert ("secret alpine deal" in text[a]) == (a in ("austria", "italy")), a
        assert "public hello" in text[a]
    # the feature vectors do not carry press at all
    board = 82 * 36  # the per-location block; the rest is the observer's own power, phase and flags
    germany, italy = e.observe("germany")["observation"], e.observe("italy")["observation"]
    np.testing.assert_array_equal(germany[:board], italy[:board])


def test_parallel_step_adjudicates_simultaneous_orders():
    e = diplomacy_v0.parallel_env(max_year=1901)
    e.reset(seed=0)
    _, rewards, terms, _, infos = e.step({"france": "A PAR - BUR", "germany": "A MUN - BUR\nbad line"})
    assert infos["france"]["phase"] == "F1901M" and not any(terms.values())
    assert e.game.history[-1]["results"]["A PAR"] == ["bounce"]
    assert infos["germany"]["invalid_actions"] == 1 and "dropped" in infos["germany"]["error"]
    while e.agents:
        _, rewards, terms, _, infos = e.step({a: "PASS" for a in e.agents})
    assert all(terms.values()) and abs(sum(rewards.values()) - 1.0) < 1e-9


# -- bots, games, tournaments -----------------------------------------------------------------
def test_games_are_deterministic_and_bots_only_play_legal_orders():
    players = lambda: [make_bot("rule" if i % 2 else "random") for i in range(7)]  # noqa: E731
    a = play_game(players(), config=DiplomacyConfig(max_year=1903), seed=5)
    b = play_game(players(), config=DiplomacyConfig(max_year=1903), seed=5)
    assert json.dumps(a["record"], sort_keys=True) == json.dumps(b["record"], sort_keys=True)
    assert a["invalid_actions"] == [0] * 7
    assert a["end_reason"] == "year_limit" and abs(sum(a["scores"].values()) - 1.0) < 1e-9


def test_rule_bots_beat_random_bots(tmp_path):
    out = tmp_path / "results.jsonl"
    summary = run_tournament(["rule", "random"], num_games=14, config=DiplomacyConfig(max_year=1904), out=out)
    rule, rnd = summary["entrants"]["rule"], summary["entrants"]["random"]
    assert rule["power_games"] == rnd["power_games"] == 49
    assert rule["score"]["mean"] > 2 * rnd["score"]["mean"]
    assert rule["mean_centers"] > rnd["mean_centers"]
    assert summary["elo"]["rule"] > summary["elo"]["random"]
    assert rule["invalid_actions"] == rnd["invalid_actions"] == 0
    lines = out.read_text().splitlines()
    again = run_tournament(["rule", "random"], num_games=14, config=DiplomacyConfig(max_year=1904), out=out)
    assert again == summary and out.read_text().splitlines() == lines  # resumed: nothing replayed
    with pytest.raises(ValueError, match="another tournament"):
        run_tournament(["rule", "random"], num_games=14, config=DiplomacyConfig(max_year=1905), out=out)


# -- rendering and the viewer -----------------------------------------------------------------
def test_render_modes():
    e = diplomacy_v0.raw_env(max_year=1901, render_mode="svg")
    e.reset(seed=0)
    e.step("A VIE - GAL")
    assert e.render().lstrip().startswith("<?xml") and "</svg>" in e.render()
    e = diplomacy_v0.raw_env(max_year=1901, render_mode="ansi")
    e.reset(seed=0)
    assert "FRANCE: 3 centres" in e.render()


def test_viewer_serves_the_map_of_every_phase():
    rec = play_game([make_bot("rule") for _ in range(7)], config=DiplomacyConfig(max_year=1901), seed=0)["record"]
    assert "<svg" in phase_svg(rec, 1)
    with pytest.raises(ValueError, match="phase index"):
        phase_svg(rec, len(rec["phases"]) + 1)
    with serve_record(rec) as server:
        page = urllib.request.urlopen(server.url, timeout=10).read().decode()
        assert "DIPLOMACY_INITIAL" in page
        game = json.loads(urllib.request.urlopen(server.url + "api/game", timeout=10).read())
        assert [p["phase"] for p in game["phases"]] == [p["phase"] for p in rec["phases"]]
        svg = urllib.request.urlopen(server.url + "svg/0", timeout=30)
        assert svg.headers["Content-Type"] == "image/svg+xml" and b"</svg>" in svg.read()
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(server.url + "svg/999", timeout=10)
    with pytest.raises(ValueError, match="not a Diplomacy"):
        serve_record({"events": []})


# -- command line -----------------------------------------------------------------------------
def test_cli_diplomacy_tournament_and_viewer(tmp_path, capsys):
    from arena.cli import main

    out = tmp_path / "dip"
    args = ["tournament", "--diplomacy", "--entrants", "rule,random", "--games", "2", "--max-year", "1901"]
    assert main([*args, "--out", str(out), "--save-records"]) == 0
    printed = capsys.readouterr().out
    assert "games: 2" in printed and "rule" in printed and "by power" in printed
    results = out / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == 2 and rows[0]["game"] == "diplomacy" and rows[0]["record"]["phases"]
    view = ["view", "--diplomacy", "--results", str(results), "--index", "1", "--port", "0", "--serve-seconds", "0.1"]
    assert main(view) == 0
    assert "Diplomacy viewer at http://127.0.0.1:" in capsys.readouterr().out
    assert main(["tournament", "--diplomacy", "--entrants", "rule,bogus", "--games", "1"]) == 2
    assert "unknown Diplomacy entrant 'bogus'" in capsys.readouterr().err
    assert main(["view", "--diplomacy", "--live", "--seats", "rule,random", "--serve-seconds", "0"]) == 2
    assert "7 needed" in capsys.readouterr().err
    assert main(["tournament", "--diplomacy", "--entrants", "rule", "--max-year", "1800"]) == 2
    assert "max_year must be" in capsys.readouterr().err


def test_eliminated_powers_leave_and_both_views_play_the_same_game():
    """Two rule bots against five random ones until a solo: powers knocked out on the way are
    terminated with 0 and removed; the parallel view with the same bots adjudicates the same game."""
    lineup = {p.lower(): ("rule" if p in ("FRANCE", "TURKEY") else "random") for p in POWERS}

    def bots():
        made = {a: make_bot(k) for a, k in lineup.items()}
        for a, b in made.items():
            b.reset(a.upper(), 1)
        return made

    aec, players, knocked_out, final = diplomacy_v0.env(max_year=1925), bots(), [], {}
    aec.reset(seed=1)
    for agent in aec.agent_iter():
        obs, reward, term, trunc, info = aec.last()
        if term or trunc:
            final[agent] = reward
            if not aec.unwrapped.game.done:
                knocked_out.append(agent)
                assert reward == 0.0 and info["units"] == info["centers"] == 0
            aec.step(None)
        else:
            aec.step(players[agent].act(aec.unwrapped.game, obs["text"]))
    g = aec.unwrapped.game
    assert g.end_reason == "solo" and final[g.winner.lower()] == 1.0 and knocked_out
    assert sum(final.values()) == 1.0 and aec.agents == []
    par, players = diplomacy_v0.parallel_env(max_year=1925), bots()
    obs, _ = par.reset(seed=1)
    while par.agents:
        obs, *_ = par.step({a: players[a].act(par.game, obs[a]["text"]) for a in par.agents})
    assert json.dumps(par.game.history) == json.dumps(g.history)


# -- a chat model as a power --------------------------------------------------------------------
def _first_legal_orders(body):
    """A stand-in model that reads its prompt: the first listed legal order of every unit."""
    prompt = body["messages"][-1]["content"]
    if "Your legal orders" not in prompt:
        return "PASS"
    listed = prompt.split("Your legal orders, by unit location:\n", 1)[1].split("\n")
    return "<think>first listed</think>\n" + "\n".join(
        line.split(": ", 1)[1].split(" | ")[0] for line in listed if line.startswith("  ")
    )


def test_llm_entrant_plays_through_an_openai_compatible_server():
    from evolver_gym.core.llm.testing import ScriptedLLMServer

    with ScriptedLLMServer(handler=_first_legal_orders) as server:
        entrants = {"model": f"llm:{server.model}@{server.url}", "rule": "rule"}
        summary = run_tournament(entrants, num_games=2, config=DiplomacyConfig(max_year=1901))
        prompts = [r["messages"][-1]["content"] for r in server.requests]
    model = summary["entrants"]["model"]
    assert model["invalid_actions"] == 0 and model["llm"]["calls"] == len(prompts) > 0
    assert model["llm"]["invalid_lines"] == model["llm"]["fallbacks"] == 0
    assert all("You play " in p and "Reply with one order per line" in p for p in prompts)


def test_llm_seat_retries_with_reasons_and_falls_back_on_client_errors():
    from arena.diplomacy.llm_seat import DiplomacyLLMSeat
    from evolver_gym.core.llm.testing import Fault, ScriptedLLMServer

    g = DiplomacyGame()
    with ScriptedLLMServer(replies=["A PAR - MUN", "<think>fine</think>a par - bur"]) as server:
        seat = DiplomacyLLMSeat(server.client(), max_retries=1)
        seat.reset("FRANCE", 0)
        assert seat.act(g, "obs") == "A PAR - BUR"
        assert "not a legal order" in server.requests[1]["messages"][-1]["content"]
        assert seat.stats["retries"] == 1 and seat.thoughts == ["fine"]
        server.fail_next(Fault.http(500), times=10)
        assert seat.act(g, "obs") == "PASS"
        assert seat.stats["client_errors"] == 1 and seat.stats["fallbacks"] == 1
    press = DiplomacyGame(DiplomacyConfig(press_rounds=1))
    with ScriptedLLMServer(replies=["TO england: hold the Channel?\nTO MARS: hi"]) as server:
        seat = DiplomacyLLMSeat(server.client(), max_retries=0)
        seat.reset("FRANCE", 0)
        assert seat.act(press, "obs") == "TO ENGLAND: hold the Channel?"
        assert seat.stats["invalid_lines"] == 1


# -- the discrete view ---------------------------------------------------------------------------
def test_discrete_view_passes_the_api_test_and_plays_whole_games():
    api_test(diplomacy_v0.env(max_year=1902, variant="discrete"), num_cycles=400)
    e = diplomacy_v0.env(max_year=1903, variant="discrete")
    e.reset(seed=0)
    rng = np.random.default_rng(0)
    seen = set()
    for _agent in e.agent_iter():
        obs, _, term, trunc, info = e.last()
        if term or trunc:
            e.step(None)
            continue
        mask = obs["action_mask"]
        assert mask[0] == 1 and info["ordering"] is not None and "allowed_actions" not in info  # the mask says
        seen.add(info["phase"][-1])
        e.step(rng.choice(np.flatnonzero(mask)))
    assert info["end_reason"] == "year_limit" and info["invalid_actions"] == 0 and "A" in seen
    with pytest.raises(ValueError, match="no press"):
        diplomacy_v0.env(variant="discrete", press_rounds=1)
    with pytest.raises(ValueError, match="text variant only"):
        diplomacy_v0.parallel_env(variant="discrete")


def test_discrete_choices_adjudicate_like_text_orders():
    e = diplomacy_v0.raw_env(max_year=1905, variant="discrete")
    e.reset(options={"start": {"units": {"AUSTRIA": ["A VIE"], "ITALY": ["A VEN"]}}})
    for power, order in (("austria", "A VIE - TYR"), ("italy", "A VEN - TYR")):
        assert e.agent_selection == power and e.infos[power]["ordering"] == order.split()[1]
        obs = e.observe(power)
        choice = next(i for i, line in enumerate(obs["text"].splitlines()) if line.endswith(f": {order}"))
        code = int(obs["text"].splitlines()[choice].split(":")[0])
        e.step(code)
    assert e.game.history[-1]["results"] == {"A VIE": ["bounce"], "A VEN": ["bounce"]}
    e.step(e.observe(e.agent_selection)["action_mask"].size + 5)  # outside the space: no order, counted
    assert e.infos["austria"]["invalid_actions"] == 1 and "no order" in e.infos["austria"]["error"]


def test_discrete_winter_allows_only_the_build_count():
    e = diplomacy_v0.raw_env(max_year=1905, variant="discrete")
    start = {"phase": "W1901A", "units": {"FRANCE": ["A PAR", "A MAR"]}, "centers": {"FRANCE": ["PAR", "MAR", "BRE"]}}
    e.reset(options={"start": start})
    while e.terminations[e.agent_selection]:  # the powers without units or centres leave first
        e.step(None)
    assert e.agents == ["france"]
    assert e.agent_selection == "france" and e.infos["france"]["ordering"] == "BRE"
    mask = e.observe("france")["action_mask"]
    assert mask.sum() == 3  # no order, A BRE B, F BRE B
    e.step(2)
    assert sorted(e.game.units("FRANCE")) == ["A MAR", "A PAR", "F BRE"] and e.game.phase == "S1902M"
