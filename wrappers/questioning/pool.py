"""A persistent, resumable task pool with provenance for every task.

* ``TaskPool`` - tasks (seed and synthetic) in one SQLite file: the task record, where it came
  from (parent, proposer, filters passed), every pass/fail observation (pass-rate history), and a
  small key/value store that the synthesis cycle uses to resume.

SQLite is the store because each transaction is atomic and durable: a process killed half-way
through admitting a batch leaves the pool exactly as it was before that batch (see
:meth:`TaskPool.transaction`). ``export_jsonl`` writes a JSONL snapshot through a temporary file
and ``os.replace`` so readers never see a half-written file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evolver_gym.core import Task

__all__ = ["TaskPool"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY,
    origin TEXT NOT NULL,
    parent_id TEXT,
    proposer TEXT,
    status TEXT NOT NULL DEFAULT 'active',
    created_at REAL NOT NULL,
    task_json TEXT NOT NULL,
    provenance_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS outcomes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    success REAL NOT NULL,
    source TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS outcomes_task ON outcomes(task_id, seq);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value_json TEXT NOT NULL);
"""


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class TaskPool:
    """Seed and synthetic tasks with provenance and pass-rate history, in one SQLite file.

    Args:
        path: The SQLite file (created with its folder if missing); ``None`` keeps the pool in
            memory (tests, throw-away pools).

    Each task carries a provenance dict: ``parent_id``, ``proposer``, ``filters`` (names of the
    filters it passed, in order) and anything the caller adds (``confidence``, ``grader``...).
    Outcomes (``1.0`` pass, ``0.0`` fail, or a graded score) are appended, never overwritten, so the
    pass-rate history of every task is kept.

    Example:
        >>> from evolver_gym.core import Task
        >>> pool = TaskPool(None)
        >>> pool.add(Task("toy/train/0", "toy", "open the door"))
        True
        >>> pool.record_outcome("toy/train/0", True); pool.record_outcome("toy/train/0", False)
        >>> pool.pass_rate("toy/train/0")
        0.5
        >>> pool.stats()["by_origin"]
        {'seed': 1}
    """

    def __init__(self, path: str | Path | None = None):
        if path is not None and not isinstance(path, (str, Path)):
            raise TypeError(f"TaskPool.path must be a str, Path or None, got {type(path)}: {path!r}")
        self.path = None if path is None else Path(path)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._conn = sqlite3.connect(
            ":memory:" if self.path is None else str(self.path), check_same_thread=False, isolation_level=None
        )
        if self.path is not None:
            # WAL keeps readers consistent while a writer commits; FULL sync makes commits durable.
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.executescript(_SCHEMA)
        self._depth = 0

    # -- transactions --------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[TaskPool]:
        """Everything inside commits together or not at all (nesting joins the outer one)."""
        with self._lock:
            outer = self._depth == 0
            if outer:
                self._conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield self
            except BaseException:
                self._depth -= 1
                if outer:
                    self._conn.execute("ROLLBACK")
                raise
            self._depth -= 1
            if outer:
                self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> TaskPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- tasks ---------------------------------------------------------------------------
    def add(self, task: Task | dict[str, Any], provenance: dict[str, Any] | None = None) -> bool:
        """Add a task; returns ``False`` (and changes nothing) if its ``task_id`` is already in."""
        task = Task.from_dict(task)
        prov = {"parent_id": task.parent_id, "proposer": task.metadata.get("proposer"), "filters": []}
        prov.update(provenance or {})
        with self.transaction():
            cur = self._conn.execute(
                "INSERT OR IGNORE INTO tasks (task_id, origin, parent_id, proposer, status, created_at, "
                "task_json, provenance_json) VALUES (?, ?, ?, ?, 'active', ?, ?, ?)",
                (task.task_id, task.origin, task.parent_id, prov.get("proposer"), time.time(),
                 task.to_json(), json.dumps(prov, sort_keys=True, default=str)),
            )
        return cur.rowcount == 1

    def add_many(self, tasks: Iterable[Task | dict[str, Any]]) -> int:
        """Add tasks in one transaction; returns how many were new."""
        with self.transaction():
            return sum(self.add(t) for t in tasks)

    def get(self, task_id: str) -> Task:
        row = self._one("SELECT task_json FROM tasks WHERE task_id = ?", task_id)
        if row is None:
            raise KeyError(f"task {task_id!r} is not in the pool")
        return Task.from_json(row[0])

    def provenance(self, task_id: str) -> dict[str, Any]:
        row = self._one("SELECT provenance_json FROM tasks WHERE task_id = ?", task_id)
        if row is None:
            raise KeyError(f"task {task_id!r} is not in the pool")
        return json.loads(row[0])

    def update_provenance(self, task_id: str, **changes: Any) -> None:
        with self.transaction():
            prov = {**self.provenance(task_id), **changes}
            self._conn.execute("UPDATE tasks SET provenance_json = ? WHERE task_id = ?",
                               (json.dumps(prov, sort_keys=True, default=str), task_id))

    def set_status(self, task_id: str, status: str) -> None:
        """``active`` tasks are sampled; any other status (``retired``...) keeps the record only."""
        if not isinstance(status, str) or not status:
            raise ValueError(f"status must be a non-empty string, got {status!r}")
        with self.transaction():
            cur = self._conn.execute("UPDATE tasks SET status = ? WHERE task_id = ?", (status, task_id))
        if cur.rowcount == 0:
            raise KeyError(f"task {task_id!r} is not in the pool")

    def __contains__(self, task_id: object) -> bool:
        return isinstance(task_id, str) and self._one("SELECT 1 FROM tasks WHERE task_id = ?", task_id) is not None

    def __len__(self) -> int:
        return int(self._one("SELECT COUNT(*) FROM tasks")[0])

    def ids(self, origin: str | None = None, status: str | None = "active") -> list[str]:
        """Task ids in insertion order, optionally of one origin and/or status."""
        sql, args = "SELECT task_id FROM tasks WHERE 1=1", []
        if origin is not None:
            sql, args = sql + " AND origin = ?", [*args, origin]
        if status is not None:
            sql, args = sql + " AND status = ?", [*args, status]
        with self._lock:
            return [r[0] for r in self._conn.execute(sql + " ORDER BY rowid", args)]

    def tasks(self, origin: str | None = None, status: str | None = "active") -> list[Task]:
        sql, args = "SELECT task_json FROM tasks WHERE 1=1", []
        if origin is not None:
            sql, args = sql + " AND origin = ?", [*args, origin]
        if status is not None:
            sql, args = sql + " AND status = ?", [*args, status]
        with self._lock:
            return [Task.from_json(r[0]) for r in self._conn.execute(sql + " ORDER BY rowid", args)]

    # -- outcomes ------------------------------------------------------------------------
    def record_outcome(self, task_id: str, success: bool | float, source: str = "train") -> None:
        """Append one observation (``True``/``1.0`` pass ... ``0.0`` fail) to a task's history."""
        value = float(success)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"an outcome is in [0, 1], got {success!r} for task {task_id!r}")
        if task_id not in self:
            raise KeyError(f"task {task_id!r} is not in the pool")
        with self.transaction():
            self._conn.execute("INSERT INTO outcomes (task_id, success, source, at) VALUES (?, ?, ?, ?)",
                               (task_id, value, source, time.time()))

    def history(self, task_id: str) -> list[float]:
        """Every outcome of a task, oldest first."""
        with self._lock:
            return [r[0] for r in self._conn.execute(
                "SELECT success FROM outcomes WHERE task_id = ? ORDER BY seq", (task_id,))]

    def pass_rate(self, task_id: str, window: int | None = None) -> float | None:
        """Mean of the last ``window`` outcomes (all when ``None``); ``None`` without any."""
        hist = self.history(task_id)
        if window is not None:
            hist = hist[-window:]
        return sum(hist) / len(hist) if hist else None

    def histories(self, task_ids: Iterable[str] | None = None) -> dict[str, list[float]]:
        """Outcome histories of many tasks in one query (all active tasks by default)."""
        wanted = None if task_ids is None else set(task_ids)
        out: dict[str, list[float]] = {t: [] for t in (self.ids() if wanted is None else wanted)}
        with self._lock:
            for tid, s in self._conn.execute("SELECT task_id, success FROM outcomes ORDER BY seq"):
                if tid in out:
                    out[tid].append(s)
        return out

    # -- meta (resumable synthesis state) -------------------------------------------------
    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self._one("SELECT value_json FROM meta WHERE key = ?", key)
        return default if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any) -> None:
        with self.transaction():
            self._conn.execute("INSERT OR REPLACE INTO meta (key, value_json) VALUES (?, ?)",
                               (key, json.dumps(value, sort_keys=True, default=str)))

    # -- reporting -----------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Counts by origin, status and proposer, outcomes recorded, mean pass rate of tried tasks."""
        with self._lock:
            by_origin = dict(self._conn.execute("SELECT origin, COUNT(*) FROM tasks GROUP BY origin ORDER BY origin"))
            by_status = dict(self._conn.execute("SELECT status, COUNT(*) FROM tasks GROUP BY status ORDER BY status"))
            by_proposer = dict(self._conn.execute(
                "SELECT COALESCE(proposer, 'seed'), COUNT(*) FROM tasks GROUP BY proposer ORDER BY proposer"))
            n_out = self._conn.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]
            rates = [r[0] for r in self._conn.execute("SELECT AVG(success) FROM outcomes GROUP BY task_id")]
        return {
            "tasks": sum(by_origin.values()),
            "by_origin": by_origin,
            "by_status": by_status,
            "by_proposer": by_proposer,
            "outcomes": int(n_out),
            "tried_tasks": len(rates),
            "mean_pass_rate": (sum(rates) / len(rates)) if rates else None,
        }

    def export_jsonl(self, path: str | Path, origin: str | None = None) -> int:
        """Write the active tasks (with provenance under ``metadata.provenance``) atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        n = 0
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                for task in self.tasks(origin=origin):
                    record = task.to_dict()
                    record["metadata"] = {**record["metadata"], "provenance": self.provenance(task.task_id),
                                          "pass_history": self.history(task.task_id)}
                    fh.write(json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n")
                    n += 1
                fh.flush()
                os.fsync(fh.fileno())
            # mkstemp makes the file private (0600); an exported task list is an ordinary file.
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return n

    def _one(self, sql: str, *args: Any) -> tuple | None:
        with self._lock:
            return self._conn.execute(sql, args).fetchone()
