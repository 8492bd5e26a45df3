"""Offline synthesis on WebShop: the asked number of tasks, all feasible, unique, away from dev/test;
the CLI writes a pool and a report, and an interrupted (killed) synthesis resumes."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from wrappers.questioning import LeakageGuard, SynthesisConfig, TaskPool, build_synthesizer, packaged_embedder, replay
from wrappers.questioning.cli import main
from wrappers.questioning.text import goal_key, jaccard

webshop = pytest.importorskip("evolver_gym.webshop.env")


@pytest.fixture(scope="module")
def env():
    return webshop.WebShopEnv()


def _check_synthesis(env, embedder):
    pool = TaskPool(None)
    cfg = SynthesisConfig(batch=64, seed=1) if embedder else SynthesisConfig(
        batch=64, seed=1, embedding_threshold=None, leakage_cosine=None)
    report = build_synthesizer(env, pool, cfg, embedder=embedder).run(200)
    tasks = pool.tasks(origin="synthetic")
    assert len(tasks) == 200 and report["admitted"] == 200

    fresh = webshop.WebShopEnv()
    for t in tasks:  # every reference replays to success in a fresh env
        traj = replay(fresh, t, t.reference)
        assert traj.success and traj.score == 1.0, (t.task_id, t.reference)
    # None duplicated: distinct goals, no lexical (and, with an embedder, no semantic) near-duplicates.
    assert len({goal_key(t.goal) for t in tasks}) == 200
    for a, b in itertools.combinations(tasks, 2):
        assert jaccard(a.instruction, b.instruction) < 0.8
    if embedder is not None:
        vecs = embedder.encode([t.instruction for t in tasks])
        assert (vecs @ vecs.T - 2 * np.eye(len(tasks))).max() < 0.92
    # None near a dev/test task, by goal, words (and meaning).
    guard = LeakageGuard(env.tasks("dev") + env.tasks("test"), embedder=embedder, cosine_threshold=0.9)
    assert guard.near(tasks) == [None] * 200
    stages = ["lexical_dedup", "leakage_guard", "feasibility"] + (["embedding_dedup"] if embedder else [])
    for name in stages:
        st = report["stages"][name]
        assert st["in"] > 0 and st["in"] == st["accepted"] + st["rejected"]
    for t in tasks:
        assert pool.provenance(t.task_id)["filters"][-1] == "feasibility"


def test_offline_synthesis_on_webshop(env):
    _check_synthesis(env, None)


@pytest.mark.slow
def test_offline_synthesis_on_webshop_with_embeddings(env):
    _check_synthesis(env, packaged_embedder())


def test_cli_writes_pool_and_report_and_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["synthesize", "--env-id", "evolver/WebShop-v0", "--out", str(out), "--batch", "16", "--no-embeddings",
            "--quiet"]
    assert main([*args, "--n", "20"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["synthetic_tasks"] == 20 and report["admitted"] == 20
    assert set(report["stages"]) >= {"explore", "propose", "lexical_dedup", "leakage_guard", "feasibility", "admit"}
    rows = [json.loads(x) for x in (out / "tasks.jsonl").read_text().splitlines()]
    assert len(rows) == 20 and all(r["metadata"]["provenance"]["filters"][-1] == "feasibility" for r in rows)
    assert "stage" in capsys.readouterr().out
    assert main([*args, "--n", "30"]) == 0  # asks for more: continues the same pool
    report2 = json.loads((out / "report.json").read_text())
    assert report2["synthetic_tasks"] == 30 and report2["rounds"] > report["rounds"]
    assert main(["stats", str(out / "pool.sqlite")]) == 0
    # Bad input is refused by the `evolver` command with one line (its dispatcher turns the error into exit 2).
    from evolver_train.cli import main as evolver

    assert evolver(["questions", "synthesize", "--env-id", "evolver/WebShop-v0", "--out", str(out), "--n", "5",
                    "--env-kwargs", "[1]"]) == 2


def test_killed_synthesis_resumes_to_the_uninterrupted_result(tmp_path, env):
    n, batch = 60, 8
    expected_pool = TaskPool(None)
    build_synthesizer(env, expected_pool, SynthesisConfig(batch=batch, embedding_threshold=None,
                                                          leakage_cosine=None), embedder=None).run(n)
    expected = expected_pool.ids(origin="synthetic")

    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "wrappers.questioning.cli", "synthesize", "--env-id", "evolver/WebShop-v0",
           "--out", str(out), "--n", str(n), "--batch", str(batch), "--no-embeddings"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    for line in proc.stdout:
        if line.startswith("round 3:"):
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    with TaskPool(out / "pool.sqlite") as pool:
        partial = pool.ids(origin="synthetic")
        assert 0 < len(partial) < n and pool.get_meta("synthesis")["round"] >= 3

    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 0, done.stderr
    assert "resuming synthesis" in done.stdout
    with TaskPool(out / "pool.sqlite") as pool:
        assert pool.ids(origin="synthetic") == expected
