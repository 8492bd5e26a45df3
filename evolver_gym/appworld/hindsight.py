"""Hindsight tasks: the state changes a trajectory made, turned into a checkable task.

* ``hindsight_from_diff`` - a synthetic ``Task`` whose tests require exactly the given changes.
"""

from __future__ import annotations

from typing import Any

from evolver_gym.core.task import Task

from .db import AppDatabases, TableDiff
from .evaluation import label_tests

__all__ = ["hindsight_from_diff"]

_VOLATILE = {
    "id",
    "created_at",
    "updated_at",
    "added_at",
    "liked_at",
    "sent_at",
    "resolved_at",
    "completed_at",
}


def _describe(fields: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in fields.items())


def hindsight_from_diff(
    task: Task, diffs: list[TableDiff], start: AppDatabases, reference: list[str] | None = None
) -> Task | None:
    """A task requiring the changes in ``diffs`` (on ``task``'s start state), or None if there are none.

    ``reference`` is the code that makes the changes (default: ``task``'s own reference).
    """
    if not diffs:
        return None
    tests: list[dict[str, Any]] = []
    lines, allowed = [], {}
    for d in diffs:
        allowed[d.name] = {
            "added": bool(d.added),
            "updated": list(d.updated),
            "removed": list(d.removed),
            "fields": sorted({f for fs in d.updated.values() for f in fs}) or None,
        }
        for rid in d.added:
            where = {k: v for k, v in d.end_rows[rid].items() if k not in _VOLATILE}
            tests.append(
                {
                    "kind": "added",
                    "app": d.app,
                    "table": d.table,
                    "where": where,
                    "requirement": f"a {d.table} record with {_describe(where)} is added",
                }
            )
            lines.append(f"In the {d.app} app, add a {d.table} record with {_describe(where)}.")
        for rid, changed in d.updated.items():
            fields = {k: d.end_rows[rid][k] for k in changed if k not in _VOLATILE}
            if not fields:
                continue
            tests.append(
                {
                    "kind": "updated",
                    "app": d.app,
                    "table": d.table,
                    "id": rid,
                    "fields": fields,
                    "requirement": f"{d.name} record {rid} has {_describe(fields)}",
                }
            )
            lines.append(f"In the {d.app} app, change {d.table} record {rid} so that {_describe(fields)}.")
        if d.removed:
            tests.append(
                {
                    "kind": "removed",
                    "app": d.app,
                    "table": d.table,
                    "ids": list(d.removed),
                    "requirement": f"{d.name} records {d.removed} are removed",
                }
            )
            lines.append(f"In the {d.app} app, delete the {d.table} records with ids {d.removed}.")
    if not tests:
        return None
    tests.append({"kind": "no_collateral", "allowed": allowed, "requirement": "nothing else changed"})
    goal = {
        **{k: v for k, v in task.goal.items() if k not in ("tests", "answer")},
        "answer": None,
        "tests": label_tests(tests, start),
    }
    return task.derive(
        instruction=" ".join(lines),
        goal=goal,
        reference=list(task.reference if reference is None else reference),
        proposer="hindsight",
        metadata={"source": "hindsight"},
    )
