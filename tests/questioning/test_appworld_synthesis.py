"""Offline synthesis on AppWorld: the code explorer reads the API docs through the env, explores by
calling APIs, and the hindsight proposer turns the changes into tasks that are feasible, unique and
away from dev/test; the SelfQuestioning wrapper draws them and the env scores them."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from wrappers.questioning import (
    CodeExplorer,
    CurriculumConfig,
    Explorer,
    LeakageGuard,
    SelfQuestioning,
    SynthesisConfig,
    TaskPool,
    build_synthesizer,
    discover_api_docs,
    packaged_embedder,
    replay,
)
from wrappers.questioning.cli import main
from wrappers.questioning.code_explorer import is_code_env
from wrappers.questioning.text import goal_key, jaccard

appworld = pytest.importorskip("evolver_gym.appworld.env")
PROTECTED = ("dev", "test_normal", "test_challenge")


@pytest.fixture(scope="module")
def env():
    e = appworld.AppWorldEnv()
    yield e
    e.close()


def _synthesize(env, n, *, embedder=None, seed=0, batch=8):
    pool = TaskPool(None)
    cfg = SynthesisConfig(
        batch=batch,
        seed=seed,
        embedding_threshold=0.92 if embedder else None,
        leakage_cosine=0.9 if embedder else None,
    )
    synth = build_synthesizer(env, pool, cfg, embedder=embedder)
    assert isinstance(synth.explorer.policy, CodeExplorer)  # picked automatically for a code env
    return pool, synth.run(n)


def _check(env, pool, report, n, embedder=None):
    tasks = pool.tasks(origin="synthetic")
    assert len(tasks) == n and report["admitted"] == n
    fresh = appworld.AppWorldEnv()
    try:
        for t in tasks:  # every reference replays to success in a fresh env, by the env's own tests
            assert t.reference[-1].startswith("apis.supervisor.complete_task")
            traj = replay(fresh, t, t.reference)
            assert traj.success and traj.score == 1.0 and traj.terminated, (t.instruction, t.reference)
            assert all(s.info["action_valid"] for s in traj.steps)
            # and the task is not trivially solved: doing nothing fails it
            idle = replay(fresh, t, ["apis.supervisor.complete_task(status='success')"])
            assert idle.terminated and not idle.success
    finally:
        fresh.close()
    assert len({goal_key(t.goal) for t in tasks}) == n
    for a, b in itertools.combinations(tasks, 2):
        assert jaccard(a.instruction, b.instruction) < 0.8
    if embedder is not None:
        vecs = embedder.encode([t.instruction for t in tasks])
        assert (vecs @ vecs.T - 2 * np.eye(n)).max() < 0.92
    protected = [t for s in PROTECTED for t in env.tasks(s)]
    guard = LeakageGuard(protected, embedder=embedder, cosine_threshold=0.9)
    assert guard.near(tasks) == [None] * n
    seeds = {t.task_id for t in env.tasks("train")}
    for t in tasks:
        prov = pool.provenance(t.task_id)
        assert prov["proposer"] == "hindsight" and prov["filters"][-1] == "feasibility"
        assert t.origin == "synthetic" and t.parent_id in seeds
    for name in ("propose", "lexical_dedup", "leakage_guard", "feasibility"):
        st = report["stages"][name]
        assert st["in"] > 0 and st["in"] == st["accepted"] + st["rejected"]


def test_api_docs_are_read_through_the_env(env):
    assert is_code_env(env)
    docs = discover_api_docs(env)
    assert len(docs) == len(env.tool_schemas())
    by_name = {(d.app, d.name): d for d in docs}
    assert by_name[("notes", "create_note")].writes and not by_name[("notes", "search_notes")].writes
    ex = CodeExplorer(docs)
    assert set(ex.login_apps) == {"phone", "music", "payments", "notes", "todo", "mail"}
    assert ex.login_user["phone"] == "phone_number" and ex.login_user["mail"] == "email"
    with pytest.raises(ValueError, match="write_prob"):
        CodeExplorer(docs, write_prob=1.5)
    with pytest.raises(ValueError, match="explorer"):
        build_synthesizer(env, TaskPool(None), embedder=None, explorer="greedy")


def test_code_exploration_changes_the_world_and_is_seeded(env):
    ex = CodeExplorer.from_env(env)
    runs = [Explorer(env, ex, max_steps=15, seed=3).explore(env.tasks("train"), 4) for _ in range(2)]
    assert [t.actions for t in runs[0]] == [t.actions for t in runs[1]]  # same seed, same explorations
    for traj in runs[0]:
        assert "login" in traj.actions[0] and traj.steps[0].info["action_valid"]
        assert all(a.count("apis.") == 1 for a in traj.actions[1:])  # one API call per cell
    assert sum(env.hindsight_task(t) is not None for t in runs[0]) >= 3  # explorations make changes


def test_offline_synthesis_on_appworld(env):
    pool, report = _synthesize(env, 6)
    _check(env, pool, report, 6)


def test_self_questioning_draws_and_the_env_scores_a_synthetic_task(env):
    pool, _ = _synthesize(env, 3, seed=5)
    wrapped = SelfQuestioning(appworld.AppWorldEnv(), pool, CurriculumConfig(seed_ratio=0.0))
    try:
        obs, info = wrapped.reset(seed=0)
        q = info["questioning"]
        assert q["origin"] == "synthetic" and q["judge"] is False and q["parent_id"]
        task = pool.get(q["task_id"])
        assert task.instruction in obs and "complete_task(status='success')" not in obs
        assert "reference" not in info["task"]
        for cell in task.reference:
            obs, reward, term, trunc, info = wrapped.step(cell)
        assert term and info["success"] and reward == 1.0 and info["evaluation"]["pass_share"] == 1.0
        assert pool.history(task.task_id) == [1.0]
        # A do-nothing episode of the same task fails it.
        _, info = wrapped.reset(options={"task_id": task.task_id})
        assert info["questioning"]["task_id"] == task.task_id
        _, reward, term, _, info = wrapped.step("apis.supervisor.complete_task(status='success')")
        assert term and not info["success"] and reward == 0.0 and info["evaluation"]["failures"]
        assert pool.history(task.task_id) == [1.0, 0.0]
    finally:
        wrapped.close()


def test_cli_synthesizes_on_appworld(tmp_path):
    out = tmp_path / "aw"
    assert (
        main(
            [
                "synthesize",
                "--env-id",
                "evolver/AppWorld-v0",
                "--n",
                "4",
                "--batch",
                "6",
                "--out",
                str(out),
                "--no-embeddings",
                "--quiet",
            ]
        )
        == 0
    )
    report = json.loads((out / "report.json").read_text())
    assert report["explorer"] == "CodeExplorer" and report["synthetic_tasks"] == 4
    rows = [json.loads(x) for x in (out / "tasks.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(r["env_id"] == "evolver/AppWorld-v0" for r in rows)


@pytest.mark.slow
def test_offline_synthesis_on_appworld_with_embeddings(env):
    embedder = packaged_embedder()
    pool, report = _synthesize(env, 40, embedder=embedder, seed=2, batch=16)
    _check(env, pool, report, 40, embedder)
