"""BFCL multi-turn entries as ``Task`` records: splits, the oracle's calls, hindsight tasks.

* ``SPLIT_SCHEMES`` / ``SPLITS`` - ``entry`` (held-out entries) and ``class`` (held-out API classes).
* ``split_of`` / ``build_tasks`` - which split an entry is in, and every task of a split.
* ``task_entry`` - the BFCL entry and ground truth a task is played and checked on.
* ``oracle_actions`` - the ground truth as replies a model would write (keyword arguments), hand-backs between.
* ``hindsight_entry`` - a synthetic entry whose ground truth is the calls a trajectory made.

The four categories are variants of the same 200 scenarios (entry ``i`` of every category has the same
classes and initial state), so both schemes split the scenario index and keep its four variants together:

* ``entry``: the 200 indices shuffled from the seed, 120 train, 40 dev, 40 test.
* ``class``: two of the eight classes drawn from the seed are held out for test and one more for dev;
  an entry involving a test class is in test, else one involving the dev class is in dev, else train.

Example:
    >>> from evolver_gym.bfcl.tasks import build_tasks
    >>> tasks = build_tasks("dev", categories=("base",))
    >>> len(tasks), tasks[0].goal["category"]
    (40, 'base')
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import inspect
import json
from collections.abc import Sequence
from typing import Any

from evolver_gym.core.seeding import make_rng
from evolver_gym.core.task import Task

from .package import CATEGORIES, category_of, entries, entry_by_id, executor_config, ground_truth, populate

__all__ = ["ENV_ID", "HANDBACK", "SPLITS", "SPLIT_SCHEMES", "build_tasks", "check_categories", "held_out_classes",
           "hindsight_entry",
           "keyword_call", "oracle_actions", "split_of", "split_table", "task_entry"]

ENV_ID = "evolver/BFCL-v0"
SPLITS = ("train", "dev", "test")
SPLIT_SCHEMES = ("entry", "class")
#: The reply the oracle ends a turn with (any reply without calls does).
HANDBACK = "That is all I can do for this request."
_N_SCENARIOS = 200
_CLASSES = ("GorillaFileSystem", "MathAPI", "MessageAPI", "TicketAPI", "TradingBot", "TravelAPI",
            "TwitterAPI", "VehicleControlAPI")


def check_categories(categories: Sequence[str] | str) -> tuple[str, ...]:
    """``categories`` as a tuple, each one checked (a single name is accepted)."""
    if isinstance(categories, str):
        categories = (categories,)
    out = tuple(categories)
    bad = [c for c in out if c not in CATEGORIES]
    if not out or bad:
        raise ValueError(f"categories must be a non-empty subset of {CATEGORIES}, got {list(categories)!r}")
    return out


@functools.cache
def split_table(split_scheme: str = "entry", seed: int = 0) -> dict[str, tuple[int, ...]]:
    """Split -> the scenario indices it holds (the same in every category)."""
    if split_scheme not in SPLIT_SCHEMES:
        raise ValueError(f"split_scheme must be one of {SPLIT_SCHEMES}, got {split_scheme!r}")
    if split_scheme == "entry":
        order = [int(i) for i in make_rng(seed, "bfcl", "entry-split").permutation(_N_SCENARIOS)]
        return {"train": tuple(sorted(order[:120])), "dev": tuple(sorted(order[120:160])),
                "test": tuple(sorted(order[160:]))}
    drawn = [_CLASSES[int(i)] for i in make_rng(seed, "bfcl", "class-split").permutation(len(_CLASSES))]
    test, dev = set(drawn[:2]), {drawn[2]}
    table: dict[str, list[int]] = {s: [] for s in SPLITS}
    for i, entry in enumerate(entries("base")):
        classes = set(entry["involved_classes"])
        table["test" if classes & test else "dev" if classes & dev else "train"].append(i)
    return {s: tuple(v) for s, v in table.items()}


def held_out_classes(split_scheme: str = "class", seed: int = 0) -> dict[str, list[str]]:
    """Under the ``class`` scheme, the classes held out for dev and test (empty for ``entry``)."""
    if split_scheme != "class":
        return {"dev": [], "test": []}
    drawn = [_CLASSES[int(i)] for i in make_rng(seed, "bfcl", "class-split").permutation(len(_CLASSES))]
    return {"dev": [drawn[2]], "test": sorted(drawn[:2])}


def split_of(index: int, split_scheme: str = "entry", seed: int = 0) -> str:
    """The split holding scenario ``index``."""
    for split, indices in split_table(split_scheme, seed).items():
        if index in indices:
            return split
    raise ValueError(f"scenario index must be in [0, {_N_SCENARIOS}), got {index!r}")


def _user_text(turn: list[dict[str, Any]]) -> str:
    return "\n\n".join(str(m.get("content", "")) for m in turn if m.get("role") == "user")


@functools.cache
def _class_of_method() -> dict[str, Any]:
    config = executor_config()
    out: dict[str, Any] = {}
    for name in _CLASSES:
        cls = getattr(importlib.import_module(config.CLASS_FILE_PATH_MAPPING[name]), name)
        for method, func in inspect.getmembers(cls, inspect.isfunction):
            if not method.startswith("_"):
                out.setdefault(method, func)
    return out


def keyword_call(call: str, classes: Sequence[str] | None = None) -> str:
    """``call`` with positional arguments named from the method's signature (the decoder keeps only
    keyword arguments): ``sort('a.txt')`` -> ``sort(file_name='a.txt')``."""
    node = ast.parse(call, mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a plain call: {call!r}")
    if not node.args:
        return call
    func = _class_of_method().get(node.func.id)
    if func is None:
        raise ValueError(f"no API method named {node.func.id!r} for positional arguments in {call!r}")
    params = [p for p in inspect.signature(func).parameters if p != "self"]
    parts = [f"{params[i]}={ast.unparse(a)}" for i, a in enumerate(node.args)]
    parts += [f"{k.arg}={ast.unparse(k.value)}" for k in node.keywords]
    return f"{node.func.id}({', '.join(parts)})"


def oracle_actions(ground_truth_turns: list[list[str]]) -> list[str]:
    """The replies that play ``ground_truth_turns``: per turn, one reply with all its calls (when it has
    any), then :data:`HANDBACK`."""
    out = []
    for turn in ground_truth_turns:
        if turn:
            out.append("[" + ", ".join(keyword_call(c) for c in turn) + "]")
        out.append(HANDBACK)
    return out


def _task(category: str, index: int, split: str) -> Task:
    entry = _raw(category, index)
    gt = ground_truth(category)[entry["id"]]
    return Task(
        task_id=f"bfcl/{entry['id']}", env_id=ENV_ID, instruction=_user_text(entry["question"][0]), split=split,
        seed=0, origin="seed",
        goal={"entry_id": entry["id"], "category": category, "involved_classes": list(entry["involved_classes"])},
        reference=oracle_actions(gt),
        metadata={"index": index, "turns": len(entry["question"]),
                  "missed_function": sorted(entry.get("missed_function", {}))},
    )


@functools.cache
def _raw_table(category: str) -> tuple[dict[str, Any], ...]:
    return tuple(entries(category))


def _raw(category: str, index: int) -> dict[str, Any]:
    return _raw_table(category)[index]


@functools.cache
def _built(split: str, categories: tuple[str, ...], split_scheme: str, seed: int) -> tuple[Task, ...]:
    indices = split_table(split_scheme, seed)[split]
    return tuple(_task(c, i, split) for c in categories for i in indices)


def build_tasks(split: str, categories: Sequence[str] = CATEGORIES, split_scheme: str = "entry",
                seed: int = 0) -> list[Task]:
    """Every task of ``split``: category by category, scenario index ascending."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return list(_built(split, check_categories(categories), split_scheme, int(seed)))


def task_entry(task: Task) -> tuple[dict[str, Any], list[list[str]]]:
    """The BFCL entry (docs filled in, as BFCL's inference loads it) and ground truth of ``task``."""
    goal = task.goal
    if "entry" in goal:  # a synthetic (hindsight) task carries its own entry
        entry = populate(json.loads(json.dumps(goal["entry"])))
        return entry, [list(t) for t in goal["ground_truth"]]
    if "entry_id" not in goal:
        raise ValueError(f"task {task.task_id!r} is not a BFCL task: its goal has no 'entry_id' or 'entry'")
    entry_id = goal["entry_id"]
    return entry_by_id(entry_id), ground_truth(category_of(entry_id))[entry_id]


def hindsight_entry(entry: dict[str, Any], turns: list[list[str]], instructions: list[str]) -> dict[str, Any] | None:
    """A synthetic entry on ``entry``'s start state whose ground truth is ``turns`` (calls per turn) and whose
    user turns are ``instructions``; None when no turn has a call. Turns without calls are dropped. Every
    function of its classes is offered (no missed function). Its id keeps ``long_context`` when the parent
    has it (the executor loads long-context scenarios by that word in the id). The returned dict holds
    ``ground_truth`` beside the entry's keys."""
    kept = [(calls, text) for calls, text in zip(turns, instructions) if calls]
    if not kept:
        return None
    kind = "long_context" if "long_context" in entry["id"] else "base"
    digest = hashlib.blake2b(json.dumps([entry["id"], kept], sort_keys=True).encode(), digest_size=6).hexdigest()
    return {
        "id": f"multi_turn_{kind}_hindsight{digest}",
        "question": [[{"role": "user", "content": text}] for _, text in kept],
        "initial_config": entry["initial_config"],
        "involved_classes": list(entry["involved_classes"]),
        "ground_truth": [list(calls) for calls, _ in kept],
    }
