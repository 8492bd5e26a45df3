"""TaskPool: provenance, pass-rate history, atomic transactions, survival of a killed process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from evolver_gym.core import Task
from wrappers.questioning import TaskPool


def _task(i: int, origin: str = "seed") -> Task:
    t = Task(f"toy/train/{i}", "toy", f"task number {i}", goal={"i": i})
    if origin == "synthetic":
        t = t.derive(instruction=f"synthetic {i}", goal={"s": i}, reference=["a"], proposer="hindsight")
    return t


def test_add_get_provenance_and_stats(tmp_path):
    pool = TaskPool(tmp_path / "p.sqlite")
    seed = _task(0)
    synth = _task(1, "synthetic")
    assert pool.add(seed) and pool.add(synth, {"filters": ["lexical_dedup", "feasibility"], "confidence": 0.7})
    assert not pool.add(seed), "a task id already in the pool is not added twice"
    assert pool.get(synth.task_id) == synth
    prov = pool.provenance(synth.task_id)
    assert prov["parent_id"] == "toy/train/1" and prov["proposer"] == "hindsight"
    assert prov["filters"] == ["lexical_dedup", "feasibility"] and prov["confidence"] == 0.7
    assert pool.ids(origin="synthetic") == [synth.task_id]
    pool.record_outcome(synth.task_id, True)
    pool.record_outcome(synth.task_id, 0.0)
    pool.record_outcome(synth.task_id, 1.0)
    assert pool.history(synth.task_id) == [1.0, 0.0, 1.0]
    assert pool.pass_rate(synth.task_id, window=2) == 0.5
    stats = pool.stats()
    assert stats["by_origin"] == {"seed": 1, "synthetic": 1} and stats["outcomes"] == 3
    with pytest.raises(KeyError, match="not in the pool"):
        pool.record_outcome("nope", True)
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        pool.record_outcome(synth.task_id, 3)
    pool.set_status(seed.task_id, "retired")
    assert pool.ids() == [synth.task_id] and len(pool) == 2
    pool.close()
    # Reopened from disk: everything is still there.
    again = TaskPool(tmp_path / "p.sqlite")
    assert again.history(synth.task_id) == [1.0, 0.0, 1.0] and again.get(seed.task_id) == seed


def test_transaction_rolls_back_everything(tmp_path):
    pool = TaskPool(tmp_path / "p.sqlite")
    with pytest.raises(RuntimeError):
        with pool.transaction():
            pool.add(_task(0))
            pool.set_meta("round", 1)
            raise RuntimeError("boom")
    assert len(pool) == 0 and pool.get_meta("round") is None


def test_export_jsonl_round_trips(tmp_path):
    pool = TaskPool(None)
    pool.add_many([_task(i) for i in range(3)] + [_task(9, "synthetic")])
    n = pool.export_jsonl(tmp_path / "out" / "tasks.jsonl", origin="synthetic")
    rows = [json.loads(x) for x in (tmp_path / "out" / "tasks.jsonl").read_text().splitlines()]
    assert n == 1 and rows[0]["origin"] == "synthetic" and rows[0]["metadata"]["provenance"]["proposer"] == "hindsight"
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_killed_writer_leaves_a_consistent_pool(tmp_path):
    """A process SIGKILLed inside a transaction loses that transaction only."""
    path = tmp_path / "p.sqlite"
    script = textwrap.dedent(f"""
        import os, signal, sys
        from evolver_gym.core import Task
        from wrappers.questioning import TaskPool
        pool = TaskPool({str(path)!r})
        pool.add(Task("toy/committed", "toy", "kept"))
        with pool.transaction():
            for i in range(50):
                pool.add(Task(f"toy/lost/{{i}}", "toy", "lost"))
            pool.set_meta("round", 7)
            sys.stdout.write("inside\\n"); sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode == -signal.SIGKILL and "inside" in proc.stdout
    pool = TaskPool(path)
    assert pool.ids() == ["toy/committed"] and pool.get_meta("round") is None


def test_exported_tasks_are_an_ordinary_file_not_a_private_one(tmp_path):
    pool = TaskPool(tmp_path / "pool.sqlite")
    pool.add(_task(1, "synthetic"))
    path = tmp_path / "tasks.jsonl"
    pool.export_jsonl(path)
    mask = os.umask(0o022)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask  # 0644 under the usual umask, not mkstemp's 0600
