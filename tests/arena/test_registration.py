"""``import evolver_gym`` registers the Avalon seat; ``evolver play`` and ``evolver eval`` accept it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def test_import_evolver_gym_registers_the_seat_without_loading_pettingzoo():
    code = (
        "import sys, gymnasium as gym, evolver_gym\n"
        "ids = sorted(i for i in gym.registry if i.startswith('evolver/'))\n"
        "light = 'arena' not in sys.modules and 'pettingzoo' not in sys.modules\n"
        "env = gym.make('evolver/AvalonSeat-v0', deal_key='k')\n"
        "obs, info = env.reset(options={'split': 'dev', 'index': 0})\n"
        "print(ids, light, type(env.unwrapped).__name__, info['phase'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "'evolver/AvalonSeat-v0'" in out and "'evolver/WebShop-v0'" in out
    assert "True SingleSeat" in out


def test_evolver_play_scores_the_seat_baselines(capsys):
    from evolver_gym.cli import play_main

    assert play_main(["--env-id", "evolver/AvalonSeat-v0", "--split", "dev", "--n", "6", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert set(results) == {"rule", "random"}
    assert all(r["n"] == 6 and 0.0 <= r["success_rate"] <= 1.0 for r in results.values())


def test_evolver_eval_oracle_on_the_seat_is_a_clear_error(tmp_path, capsys):
    pytest.importorskip("torch")
    from evolver_train.cli import main

    out = tmp_path / "report.json"
    argv = ["eval", "--checkpoint", "oracle", "--env-id", "evolver/AvalonSeat-v0", "--num-tasks", "2",
            "--out", str(out)]
    assert main(argv) != 0
    assert "has no reference actions" in capsys.readouterr().err
    assert not out.exists()
