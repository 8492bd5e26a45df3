"""The ``appworld_apps`` recipe: ``evolver train`` and ``evolver eval`` run on ``evolver/AppWorldApps-v0``.

A miniature of the recipe (one GRPO step of 2 episodes, one cell an episode, short cells) trains the tiny
policy and writes its checkpoint; ``evolver eval`` then plays that checkpoint on dev tasks, and the oracle
through the recipe's own rollout settings solves them. Skipped, with the reason, where the apps are not
installed (``bash scripts/setup.sh appworld-apps``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evolver_gym.appworld_apps.backend import unavailable_reason
from evolver_gym.appworld_apps.tasks import build_tasks
from evolver_train.recipe import recipe_names, resolve_config

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"AppWorld's apps are not installed: {REASON}")


def test_the_recipe_resolves_by_name_and_parses():
    pytest.importorskip("torch")
    from evolver_train.train_cli import parse_config

    assert "appworld_apps" in recipe_names() and resolve_config("appworld_apps").endswith("appworld_apps.yaml")
    run = parse_config(["--config", "appworld_apps"])
    assert run.train.env_id == "evolver/AppWorldApps-v0" and run.model.model_name_or_path == "tiny"
    assert run.train.env_kwargs["split_scheme"] == "app" and run.train.evolver_eval_split == "dev"


def test_evolver_train_then_eval_on_the_real_apps(tmp_path):
    pytest.importorskip("torch")
    from evolver_train.cli import main

    out = tmp_path / "run"
    small = ["--max-turns", "1", "--max-turn-tokens", "16"]
    assert main(["train", "--config", "appworld_apps", "--max-steps", "1", "--per-device-train-batch-size", "2",
                 "--num-generations", "2", "--evolver-eval-episodes", "0", "--output-dir", str(out), *small]) == 0
    for name in ("model.safetensors", "config.json", "tokenizer.json"):
        assert (out / name).is_file(), name
    assert list((out / "runs").rglob("events.out.tfevents.*"))  # TensorBoard scalars of the step

    report = tmp_path / "eval.json"
    assert main(["eval", "--checkpoint", str(out), "--config", "appworld_apps", "--k", "1", "--num-tasks", "2",
                 "--batch-size", "1", "--quiet", "--out", str(report), *small]) == 0  # one env: one app server
    got = json.loads(report.read_text())
    assert got["num_episodes"] == 2 and got["env_id"] == "evolver/AppWorldApps-v0"
    assert {p["task_id"] for p in got["per_task"]} <= {t["task_id"] for t in _dev_tasks()}
    assert "tgc" in got["appworld"] and 0.0 <= got["success_rate"] <= 1.0


def test_the_oracle_solves_dev_tasks_through_the_recipe(tmp_path):
    pytest.importorskip("torch")
    from evolver_train.cli import main

    report = tmp_path / "oracle.json"
    assert main(["eval", "--checkpoint", "oracle", "--config", "appworld_apps", "--k", "1", "--num-tasks", "2",
                 "--batch-size", "1", "--max-turn-tokens", "100000", "--max-observation-tokens", "10000000",
                 "--max-episode-tokens", "100000000", "--quiet", "--out", str(report)]) == 0
    got = json.loads(report.read_text())
    assert got["num_episodes"] == 2 and got["success_rate"] == 1.0 and got["appworld"]["tgc"] == 100.0


def _dev_tasks() -> list[dict]:
    """The app split's dev tasks in the world of seed 0 (the recipe's), from the world's facts."""
    world = json.loads((Path(__file__).parent / "world_seed0.json").read_text())
    return [t.to_dict() for t in build_tasks(world, "dev", "app")]
