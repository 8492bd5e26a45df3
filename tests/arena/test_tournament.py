"""Tournaments: fair seating and roles, resumable results, Wilson intervals, Elo."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from arena.avalon import AvalonConfig
from arena.avalon.tournament import elo_ratings, run_tournament, schedule
from evolver_gym.core.stats import wilson_interval as wilson


def test_wilson_interval_known_values():
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-3)
    lo, hi = wilson(81, 100)
    assert (round(lo, 3), round(hi, 3)) == (0.722, 0.875)
    assert wilson(0, 0) == (0.0, 1.0)


def test_schedule_is_fair_over_blocks():
    cfg = AvalonConfig(5)
    entrants = ["a", "b"]
    role_count = Counter()
    seat_count = Counter()
    for i in range(20):  # four blocks of five games
        lineup, roles, _ = schedule(entrants, cfg, seed=3, index=i)
        assert sorted(roles) == sorted(cfg.roles_in_play())
        for name, role in zip(lineup, roles, strict=True):
            role_count[name, role] += 1
            seat_count[name] += 1
    assert seat_count["a"] == seat_count["b"] == 50
    for role in ("merlin", "assassin", "minion"):
        assert role_count["a", role] == role_count["b", role] == 10
    assert role_count["a", "servant"] == role_count["b", "servant"] == 20


def test_resume_after_a_killed_run(tmp_path):
    cfg = AvalonConfig(5)
    out = tmp_path / "res.jsonl"
    full = run_tournament(["rule", "random"], num_games=20, config=cfg, seed=1, out=tmp_path / "ref.jsonl")
    run_tournament(["rule", "random"], num_games=8, config=cfg, seed=1, out=out)
    with out.open("a") as f:
        f.write('{"index": 8, "lineup": ["ru')  # a line cut short by a killed process
    resumed = run_tournament(["rule", "random"], num_games=20, config=cfg, seed=1, out=out)
    assert resumed == full
    indices = [json.loads(line)["index"] for line in out.read_text().splitlines()]
    assert sorted(indices) == list(range(20)), "every game once, the cut line dropped"
    summary = json.loads((tmp_path / "res.jsonl.summary.json").read_text())
    assert summary == full
    with pytest.raises(ValueError, match="another tournament"):
        run_tournament(["rule", "random"], num_games=20, config=AvalonConfig(6), seed=1, out=out)


def test_summary_fields_and_elo_ordering():
    cfg = AvalonConfig(5)
    s = run_tournament(["rule", "random"], num_games=60, config=cfg, seed=2)
    assert s["games"] == 60
    rule, rnd = s["entrants"]["rule"], s["entrants"]["random"]
    assert rule["overall"]["games"] + rnd["overall"]["games"] == 300
    assert set(rule["roles"]) == {"merlin", "assassin", "servant", "minion"}
    lo, hi = rule["overall"]["ci95"]
    assert lo <= rule["overall"]["win_rate"] <= hi
    assert s["elo"]["rule"] > 1500 > s["elo"]["random"]
    assert sum(s["elo"].values()) == pytest.approx(3000, abs=0.5), "team Elo is zero-sum"


def test_elo_moves_toward_winners():
    games = [
        {
            "lineup": ["a", "a", "a", "b", "b"],
            "roles": ["merlin", "servant", "servant", "assassin", "minion"],
            "winner": "good",
        }
    ] * 5
    r = elo_ratings(games)
    assert r["a"] > 1500 > r["b"]


def _scripted_player(body):
    """A model stand-in behind the local OpenAI-compatible server: reads the instruction line."""
    import re

    prompt = body["messages"][-1]["content"]
    last = prompt.rsplit("\n", 1)[-1]
    if len(body.get("messages", [])) == 2 and len(prompt) % 5 == 0:
        return "hmm, let me think about it"  # a malformed first answer now and then
    if "SAY:" in last:
        return "<think>private plan: bluff</think>SAY: I trust everyone at this table."
    if "TEAM:" in last:
        k = int(re.search(r"propose exactly (\d+)", last).group(1))
        return "TEAM: " + ", ".join(str(i) for i in range(k))
    if "VOTE:" in last:
        return "VOTE: approve"
    if "QUEST:" in last:
        return "QUEST: fail" if "QUEST: fail" in last else "QUEST: success"
    if "ASSASSINATE" in last:
        return "ASSASSINATE: " + re.search(r"choices: (\d+)", last).group(1)
    return "PASS"


def test_tournament_with_a_model_entrant_over_http(llm_server, tmp_path):
    llm_server.handler = _scripted_player
    entrants = {"model": f"llm:scripted-model@{llm_server.url}", "rule": "rule"}
    s = run_tournament(entrants, num_games=5, config=AvalonConfig(5), seed=0, out=tmp_path / "r.jsonl")
    model = s["entrants"]["model"]
    assert model["overall"]["games"] > 0 and model["fallback_actions"] == 0
    assert model["llm"]["calls"] > 0 and model["llm"]["client_errors"] == 0
    assert model["llm"]["invalid_replies"] > 0, "the malformed answers were seen and repaired"
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert all("llm_stats" in r for r in rows)
    assert len(llm_server.requests) == model["llm"]["calls"]
