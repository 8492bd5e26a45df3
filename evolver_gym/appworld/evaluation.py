"""State-based evaluation: task tests over the database diff, and the TGC / SGC metrics.

* ``evaluate_tests`` - run a task's tests on (start, end) databases; returns an ``Evaluation``.
* ``Evaluation`` - passes, failures, success, pass share, difficulty (AppWorld's ``TestTracker`` shape).
* ``label_tests`` - mark each test ``no_op_pass`` / ``no_op_fail`` by evaluating the untouched start state.
* ``compute_metrics`` - TGC and SGC in percent, overall and per difficulty, over many results.

Tests are JSON dicts (so a task is scored from its ``goal`` alone) of these kinds:

* ``answer`` - the answer given to ``supervisor.complete_task`` matches ``expected`` (numbers within
  0.01, text case- and space-insensitive, lists as multisets);
* ``added`` - exactly ``count`` rows added to ``app.table`` whose fields match ``where``;
* ``updated`` - row ``id`` of ``app.table`` now has the field values in ``fields``;
* ``removed`` - rows ``ids`` of ``app.table`` are gone;
* ``no_collateral`` - nothing changed outside ``allowed`` (``{"app.table": {"added": bool,
  "updated": [ids] | "*", "removed": [ids] | "*", "fields": [names] | None}}``).

A field matcher is a plain value (equality after normalisation) or ``{"$lines": [...]}`` (the
text's non-empty lines equal these, in any order) or ``{"$contains": "..."}``.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .db import AppDatabases, TableDiff, diff_databases

__all__ = [
    "evaluation_report",
    "Evaluation",
    "evaluate_tests",
    "label_tests",
    "compute_metrics",
    "normalize_answer",
    "answer_matches",
]

# the answer channel and the task record are not world state
_IGNORED = {"supervisor.active_task"}


def normalize_answer(value: Any) -> Any:
    """Numbers to rounded floats, text to lower-case single-spaced strings, lists to sorted lists."""
    if isinstance(value, str):
        text = " ".join(value.strip().lower().split())
        try:
            return round(float(text.replace("$", "").replace(",", "")), 2)
        except ValueError:
            return {"yes": "yes", "true": "yes", "no": "no", "false": "no"}.get(text, text)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return round(float(value), 2)
    if isinstance(value, (list, tuple)):
        return sorted((normalize_answer(v) for v in value), key=lambda v: json.dumps(v))
    return value


def answer_matches(predicted: Any, expected: Any) -> bool:
    a, b = normalize_answer(predicted), normalize_answer(expected)
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, abs_tol=0.011)
    return a == b


def _field_ok(actual: Any, want: Any) -> bool:
    if isinstance(want, dict) and "$lines" in want:
        got = sorted(" ".join(x.split()).lower() for x in str(actual or "").splitlines() if x.strip())
        return got == sorted(" ".join(str(x).split()).lower() for x in want["$lines"])
    if isinstance(want, dict) and "$contains" in want:
        return str(want["$contains"]).lower() in str(actual or "").lower()
    if isinstance(want, (int, float)) and not isinstance(want, bool) and isinstance(actual, (int, float)):
        return math.isclose(float(actual), float(want), abs_tol=0.011)
    if isinstance(want, str) and isinstance(actual, str):
        return " ".join(actual.split()).lower() == " ".join(want.split()).lower()
    return actual == want


@dataclass
class Evaluation:
    """Result of one task's tests, in the shape of AppWorld's ``TestTracker.to_dict()``."""

    passes: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    difficulty: int | None = None

    @property
    def num_tests(self) -> int:
        return len(self.passes) + len(self.failures)

    @property
    def success(self) -> bool:
        return not self.failures and bool(self.passes)

    @property
    def pass_share(self) -> float:
        return len(self.passes) / self.num_tests if self.num_tests else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "difficulty": self.difficulty,
            "num_tests": self.num_tests,
            "pass_count": len(self.passes),
            "fail_count": len(self.failures),
            "pass_share": self.pass_share,
            "pass_percentage": 100.0 * self.pass_share,
            "passes": self.passes,
            "failures": self.failures,
        }


def _check(test: dict[str, Any], diffs: dict[str, TableDiff], answer: Any) -> str | None:
    """None if the test passes, else the reason it fails."""
    kind = test["kind"]
    name = f"{test.get('app')}.{test.get('table')}"
    d = diffs.get(name)
    if kind == "answer":
        return (
            None
            if answer_matches(answer, test["expected"])
            else f"answer {answer!r} != expected {test['expected']!r}"
        )
    if kind == "added":
        rows = [d.end_rows[i] for i in d.added] if d else []
        hits = [r for r in rows if all(_field_ok(r.get(k), v) for k, v in test["where"].items())]
        want = int(test.get("count", 1))
        return (
            None
            if len(hits) == want
            else f"{len(hits)} added row(s) in {name} match {test['where']}, expected {want}"
        )
    if kind == "updated":
        row = d.end_rows.get(test["id"]) if d and test["id"] in d.updated else None
        if row is None:
            return f"{name} row {test['id']} was not updated"
        bad = {k: row.get(k) for k, v in test["fields"].items() if not _field_ok(row.get(k), v)}
        return None if not bad else f"{name} row {test['id']} has {bad}, expected {test['fields']}"
    if kind == "removed":
        missing = [i for i in test["ids"] if not d or i not in d.removed]
        return None if not missing else f"{name} rows {missing} were not removed"
    if kind == "no_collateral":
        allowed = test.get("allowed", {})
        problems = []
        for tname, td in diffs.items():
            rule = allowed.get(tname)
            if rule is None:
                problems.append(f"{tname} changed (+{len(td.added)} ~{len(td.updated)} -{len(td.removed)})")
                continue
            if td.added and not rule.get("added", False):
                problems.append(f"rows added to {tname}")
            for key, ids in (("updated", list(td.updated)), ("removed", td.removed)):
                ok = rule.get(key, [])
                extra = [i for i in ids if ok != "*" and i not in ok]
                if extra:
                    problems.append(f"{tname} rows {extra[:5]} {key}")
            if rule.get("fields") is not None:
                wrong = {f for fs in td.updated.values() for f in fs} - set(rule["fields"])
                if wrong:
                    problems.append(f"{tname} fields {sorted(wrong)} changed")
        return None if not problems else "; ".join(problems)
    return f"unknown test kind {kind!r}"


def evaluate_tests(
    tests: list[dict[str, Any]],
    start: AppDatabases,
    end: AppDatabases,
    answer: Any = None,
    difficulty: int | None = None,
    diffs: list[TableDiff] | None = None,
) -> Evaluation:
    """Evaluate ``tests`` on the change from ``start`` to ``end`` with the given final ``answer``."""
    if diffs is None:
        diffs = diff_databases(start, end)
    by_name = {d.name: d for d in diffs if d.name not in _IGNORED}
    ev = Evaluation(difficulty=difficulty)
    for test in tests:
        try:
            reason = _check(test, by_name, answer)
        except Exception as e:  # a malformed test fails loudly instead of crashing the env
            reason = f"test error: {type(e).__name__}: {e}"
        entry = {"requirement": test.get("requirement", test["kind"]), "label": test.get("label")}
        if reason is None:
            ev.passes.append(entry)
        else:
            ev.failures.append({**entry, "trace": reason})
    return ev


def label_tests(tests: list[dict[str, Any]], start: AppDatabases) -> list[dict[str, Any]]:
    """Each test with ``label`` set by evaluating a do-nothing agent (end state = start, no answer)."""
    out = []
    for test in tests:
        ev = evaluate_tests([test], start, start, answer=None, diffs=[])
        out.append({**test, "label": "no_op_pass" if ev.passes else "no_op_fail"})
    return out


def compute_metrics(results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """TGC and SGC (percent) overall and per difficulty, as AppWorld computes them.

    ``results``: dicts with ``task_id`` (``<scenario>_<n>``), ``success`` and ``difficulty``.
    TGC = 100 * mean task success; SGC = 100 * mean over scenarios of min(task successes).

    Example:
        >>> compute_metrics([{"task_id": "a_1", "success": True, "difficulty": 1},
        ...                  {"task_id": "a_2", "success": False, "difficulty": 1},
        ...                  {"task_id": "b_1", "success": True, "difficulty": 2}])["overall"]
        {'num_tasks': 3, 'num_scenarios': 2, 'task_goal_completion': 66.67, 'scenario_goal_completion': 50.0}
    """
    results = list(results)

    def block(rs: list[dict[str, Any]]) -> dict[str, Any]:
        scen: dict[str, list[bool]] = defaultdict(list)
        for r in rs:
            scen[str(r["task_id"]).split(":")[0].rsplit("_", 1)[0]].append(bool(r["success"]))
        tgc = 100.0 * sum(bool(r["success"]) for r in rs) / len(rs) if rs else 0.0
        sgc = 100.0 * sum(min(v) for v in scen.values()) / len(scen) if scen else 0.0
        return {
            "num_tasks": len(rs),
            "num_scenarios": len(scen),
            "task_goal_completion": round(tgc, 2),
            "scenario_goal_completion": round(sgc, 2),
        }

    out = {"overall": block(results)}
    for level in (1, 2, 3):
        out[f"difficulty_{level}"] = block([r for r in results if r.get("difficulty") == level])
    return out


def evaluation_report(per_task: list[dict[str, Any]], final_infos: list[dict[str, Any]], k: int) -> dict[str, Any]:
    """``{"appworld": ...}`` for ``evolver eval``: TGC / SGC averaged over the k samples (``avg``) and of the
    best of k per task (``best``). ``per_task`` rows have ``task_id``, ``difficulty``, ``successes``."""

    samples = [
        compute_metrics(
            {"task_id": p["task_id"], "success": bool(p["successes"][j]), "difficulty": p["difficulty"]}
            for p in per_task
        )
        for j in range(k)
    ]
    avg = {
        block: {
            key: (
                round(sum(s[block][key] for s in samples) / k, 2)
                if "completion" in key
                else samples[0][block][key]
            )
            for key in samples[0][block]
        }
        for block in samples[0]
        if samples[0][block]["num_tasks"]
    }  # no empty difficulty blocks
    best = compute_metrics(
        {"task_id": p["task_id"], "success": bool(max(p["successes"])), "difficulty": p["difficulty"]}
        for p in per_task
    )
    best = {block: v for block, v in best.items() if v["num_tasks"]}
    return {"appworld": {
        "avg": avg,
        "best": best,
        "tgc": avg["overall"]["task_goal_completion"],
        "sgc": avg["overall"]["scenario_goal_completion"],
    }}
