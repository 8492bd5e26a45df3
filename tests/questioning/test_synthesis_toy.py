"""Offline synthesis on the toy shop: count, feasibility, no duplicates, no leakage, resumption."""

from __future__ import annotations

import itertools

import pytest

from wrappers.questioning import LeakageGuard, SynthesisConfig, TaskPool, build_synthesizer, replay
from wrappers.questioning.text import jaccard

from .questioning_env import ToyShopEnv


def _synth(pool, **kw):
    env = ToyShopEnv()
    cfg = SynthesisConfig(batch=16, max_steps=10, seed=kw.pop("seed", 0), embedding_threshold=None,
                          leakage_cosine=None)
    return env, build_synthesizer(env, pool, cfg, embedder=None, **kw)


def test_offline_synthesis_yields_feasible_unique_unleaked_tasks():
    pool = TaskPool(None)
    env, synth = _synth(pool)
    report = synth.run(25)
    tasks = pool.tasks(origin="synthetic")
    assert len(tasks) == 25 and report["admitted"] == 25
    fresh = ToyShopEnv()
    for t in tasks:  # every reference replays to success in a fresh env
        assert replay(fresh, t, t.reference).success, t
        assert t.parent_id in {s.task_id for s in env.tasks("train")}
        assert pool.provenance(t.task_id)["filters"] == ["lexical_dedup", "leakage_guard", "feasibility"]
    goals = [tuple(sorted(t.goal.items())) for t in tasks]
    assert len(set(goals)) == len(goals)
    for a, b in itertools.combinations(tasks, 2):
        assert jaccard(a.instruction, b.instruction) < 0.8
    protected = env.tasks("dev") + env.tasks("test")
    assert LeakageGuard(protected).near(tasks) == [None] * len(tasks)
    # The report adds up: each stage's in = accepted + rejected, and rejections carry reasons.
    for name, st in report["stages"].items():
        assert st["in"] == st["accepted"] + st["rejected"], name
        assert sum(st["reasons"].values()) == st["rejected"], name
    assert report["stages"]["leakage_guard"]["reasons"].get("same goal as a dev/test task", 0) > 0
    assert report["stages"]["feasibility"]["in"] >= 25


def test_same_seed_same_tasks_and_cycle_adds_more():
    ids = []
    for _ in range(2):
        pool = TaskPool(None)
        _, synth = _synth(pool)
        synth.run(10)
        ids.append(pool.ids(origin="synthetic"))
    assert ids[0] == ids[1]
    added = synth.cycle(5)
    assert len(pool.ids(origin="synthetic")) == 15 and added["admitted"] == 15


class _Stop(Exception):
    pass


def test_interrupted_synthesis_resumes_to_the_same_result(tmp_path):
    reference_pool = TaskPool(None)
    _, synth = _synth(reference_pool)
    synth.run(30)
    expected = reference_pool.ids(origin="synthetic")

    path = tmp_path / "pool.sqlite"
    pool = TaskPool(path)
    _, synth = _synth(pool)

    def stop_after_two(report):
        if report["rounds"] == 2:
            raise _Stop

    with pytest.raises(_Stop):
        synth.run(30, on_round=stop_after_two)
    pool.close()

    pool = TaskPool(path)
    partial = pool.ids(origin="synthetic")
    assert 0 < len(partial) < 30 and pool.get_meta("synthesis")["round"] == 2
    _, resumed = _synth(pool)
    assert resumed.round == 2
    report = resumed.run(30)
    assert pool.ids(origin="synthetic") == expected
    assert report["admitted"] == 30


def test_round_is_atomic_when_killed_mid_admission(tmp_path):
    """An exception while a round admits its tasks leaves no trace of that round."""
    path = tmp_path / "pool.sqlite"
    pool = TaskPool(path)
    _, synth = _synth(pool)
    synth.run(5)
    before = (pool.ids(origin="synthetic"), pool.get_meta("synthesis"))

    class Boom:
        name = "boom"

        def check(self, cands):
            return [None] * len(cands)

        def admit(self, c):
            raise _Stop

    synth.filters.append(Boom())
    with pytest.raises(_Stop):
        synth.run(20)
    assert (pool.ids(origin="synthetic"), pool.get_meta("synthesis")) == before


def test_difficulty_stage_estimates_pass_rate():
    env = ToyShopEnv()

    def oracle_factory(task, rng):
        actions = iter(env.oracle(task))
        return lambda obs, info: next(actions, "click[buy now]")

    pool = TaskPool(None)
    _, synth = _synth(pool, policy_factory=oracle_factory, difficulty_k=2)
    synth.run(5)
    for tid in pool.ids(origin="synthetic"):
        assert pool.history(tid) == [1.0, 1.0] and pool.get(tid).difficulty == 0.0
    # A policy that never solves anything gives pass rate 0; a pass range of [0.5, 1] rejects all.
    never = lambda task, rng: (lambda obs, info: "click[nothing]")  # noqa: E731
    pool2 = TaskPool(None)
    _, synth2 = _synth(pool2, policy_factory=never, difficulty_k=2, pass_range=(0.5, 1.0))
    synth2.config.max_rounds = 2
    report = synth2.run(5)
    assert pool2.ids(origin="synthetic") == []
    difficulty = report["stages"]["difficulty"]
    assert difficulty["reasons"] == {"pass rate outside [0.5, 1.0]": difficulty["in"]}
