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


# Reference columns that point at a person's account (the app's ``users`` table).
_PERSON_KEYS = {"owner", "user", "payer", "requester", "sender", "receiver", "friend"}
_LABEL_COLUMNS = ("title", "name", "subject", "label", "email")


def _noun(table: str) -> str:
    """``text_messages`` -> ``text message``; ``users`` -> ``account``."""
    if table == "users":
        return "account"
    word = table[:-3] + "y" if table.endswith("ies") else table[:-1] if table.endswith("s") else table
    return word.replace("_", " ")


class _Labels:
    """Human names of rows (``song 'Cobalt orbit' (id 280)``), looked up in the start state or the diff."""

    def __init__(self, start: AppDatabases, diffs: list[TableDiff]):
        self.start = start
        self.added = {(d.app, d.table): d.end_rows for d in diffs}

    def row(self, app: str, table: str, rid: Any) -> dict[str, Any] | None:
        try:
            rows = self.start.query(app, f"SELECT * FROM {table} WHERE id = ?", (rid,))
        except Exception:  # no such table in this app: the column is not a reference
            rows = []
        return rows[0] if rows else self.added.get((app, table), {}).get(rid)

    def name(self, app: str, table: str, rid: Any, noun: bool = True) -> str:
        row = self.row(app, table, rid)
        label = None
        if row is not None:
            if row.get("first_name") or row.get("last_name"):
                label = " ".join(str(row[k]) for k in ("first_name", "last_name") if row.get(k))
            else:
                label = next((row[c] for c in _LABEL_COLUMNS if row.get(c)), None)
        kind = "user" if table == "users" else _noun(table)
        if not noun:
            return f"{label!r} ({kind} {rid})" if label else f"{kind} {rid}"
        return f"{kind} {label!r} (id {rid})" if label else f"{kind} {rid}"

    def value(self, app: str, key: str, value: Any) -> str:
        if key.endswith("_id") and isinstance(value, int):
            base = key[:-3]
            for table in (f"{base}s", "users" if base in _PERSON_KEYS else ""):
                if table and self.row(app, table, value) is not None:
                    return self.name(app, table, value, noun=False)
        return repr(value)

    def fields(self, app: str, fields: dict[str, Any], joiner: str) -> str:
        parts = []
        for k, v in fields.items():
            if v in ("", None):
                continue  # empty defaults say nothing the tests do not already require
            name = k[:-3] if k.endswith("_id") else k
            parts.append(f"{name.replace('_', ' ')}{joiner}{self.value(app, k, v)}")
        return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1] if parts else ""


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
    labels = _Labels(start, diffs)
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
            noun = _noun(d.table)
            article = "an" if noun[0] in "aeiou" else "a"
            lines.append(f"In the {d.app} app, add {article} {noun} with {labels.fields(d.app, where, ' ')}.")
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
            what = labels.name(d.app, d.table, rid) if d.table != "users" else f"account (user {rid})"
            lines.append(
                f"In the {d.app} app, change the {what} so that its {labels.fields(d.app, fields, ' is ')}."
            )
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
            gone = [labels.name(d.app, d.table, rid) for rid in d.removed]
            lines.append(f"In the {d.app} app, delete the {', '.join(gone)}.")
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
