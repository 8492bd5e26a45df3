"""A training run's navigation mechanism can warm its empty experience pool from the environment
oracle's rollouts of training goals (``experience_warmup_tasks``), once."""

from __future__ import annotations

import json

import pytest

import evolver_gym  # noqa: F401 - registers the environment ids


def test_a_training_run_warms_its_empty_pool_from_oracle_rollouts_once(tmp_path):
    from evolver_train.envs import build_training_environment
    from evolver_train.train_cli import parse_config

    argv = ["--model_name_or_path", "tiny", "--output_dir", str(tmp_path / "run"), "--wrappers", "navigation",
            "--env-kwargs", json.dumps({"num_products": 200, "goals": "synthetic", "split_scheme": "product"}),
            "--experience-warmup-tasks", "6", "--evolver-eval-episodes", "0"]
    run = parse_config(argv)
    built = build_training_environment(run.train, run.mechanisms)
    pool = built.services["experience_pool"]
    warmed = {e.id: e for e in pool.all()}
    first = {t.task_id for t in built.train_tasks[:6]}
    # one summary per oracle rollout of the first 6 train goals (near-duplicates merge), none from dev
    assert 1 <= len(warmed) <= 6 and all(e.success for e in warmed.values())
    assert {e.source_task_id for e in warmed.values()} <= first
    pool.close()
    # A pool that already holds experience is used as it is: no second warm-up.
    built = build_training_environment(parse_config(argv).train, run.mechanisms)
    assert {e.id for e in built.services["experience_pool"].all()} == set(warmed)
    built.services["experience_pool"].close()
    with pytest.raises(ValueError, match="experience_warmup_tasks must be an int >= 0, got -1"):
        parse_config([*argv, "--experience-warmup-tasks", "-1"])
