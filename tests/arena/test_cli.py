"""``evolver arena`` commands."""

from __future__ import annotations

import json

from arena.cli import main as arena_main
from evolver_train.cli import main as evolver_main


def test_play_saves_a_record(tmp_path, capsys):
    out = tmp_path / "game.json"
    assert (
        evolver_main(
            ["arena", "play", "--seats", "rule,random,rule,random,rule", "--seed", "4", "--save", str(out)]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "Game over" in text and "winner:" in text
    record = json.loads(out.read_text())
    assert record["done"] and len(record["roles"]) == 5


def test_tournament_and_matchup(tmp_path, capsys):
    out = tmp_path / "t.jsonl"
    assert (
        arena_main(
            [
                "tournament",
                "--entrants",
                "smart=rule_votes,random",
                "--games",
                "10",
                "--out",
                str(out),
                "--players",
                "6",
                "--save-records",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "smart" in text and "Elo" in text
    assert len(out.read_text().splitlines()) == 10
    assert (
        arena_main(["matchup", "--good", "rule", "--evil", "random", "--games", "20", "--avalonbench"]) == 0
    )
    assert "good wins" in capsys.readouterr().out


def test_bad_arguments_give_clear_errors(capsys):
    assert arena_main(["play", "--players", "4"]) == 2
    assert "num_players" in capsys.readouterr().err
    assert arena_main(["play", "--seats", "wizard"]) == 2
    assert "'wizard'" in capsys.readouterr().err


def test_view_serves_a_saved_game_and_tournament_record(tmp_path, capsys):
    game = tmp_path / "g.json"
    assert arena_main(["play", "--seed", "1", "--save", str(game)]) == 0
    capsys.readouterr()
    assert arena_main(["view", "--game", str(game), "--port", "0", "--serve-seconds", "0.2"]) == 0
    assert "Avalon viewer at http://127.0.0.1:" in capsys.readouterr().out
    res = tmp_path / "t.jsonl"
    assert arena_main(["tournament", "--entrants", "rule", "--games", "2", "--out", str(res), "--save-records"]) == 0
    assert arena_main(["view", "--results", str(res), "--index", "1", "--port", "0", "--serve-seconds", "0.2"]) == 0
    res2 = tmp_path / "t2.jsonl"
    assert arena_main(["tournament", "--entrants", "rule", "--games", "1", "--out", str(res2)]) == 0
    assert arena_main(["view", "--results", str(res2), "--port", "0", "--serve-seconds", "0.1"]) == 2
    assert "--save-records" in capsys.readouterr().err
    assert arena_main(["view", "--live", "--delay", "0", "--port", "0", "--serve-seconds", "0.3"]) == 0
