"""Scenario framework: templates that make 3 related tasks each, the splits, and task start states.

* ``Draft`` - a scratch copy of the world a template queries and adds setup rows to.
* ``TaskSpec`` - what a template returns: instruction, answer, tests, reference code, difficulty.
* ``scenario`` - decorator registering a template; ``TEMPLATES`` holds them.
* ``SPLITS`` - which templates (and variants) make each split's scenarios (the ``goal`` scheme).
* ``split_table`` - the same for a split scheme: ``goal`` (``SPLITS``: dev and test_normal use the
  train templates with other parameters) or ``scenario`` (whole templates held out of train).
* ``build_tasks`` - every task of a split for a world seed, as ``evolver_gym.core.Task`` records.
* ``start_state`` - the start databases of a task: base world plus the task's setup.
* ``PREAMBLE`` - the login/paging helper cell every reference solution begins with.

Task ids follow AppWorld: ``<scenario_id>_<n>`` with ``n`` in 1..3, so SGC groups by the prefix.
The expected answer and the expected changes are computed by the template from the database
directly (SQL), independently of the reference solution, which is code against ``apis`` that a
test runs through the sandbox to show that the tests are passable.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from evolver_gym.core.seeding import make_random
from evolver_gym.core.task import Task

from .db import AppDatabases, build_base_databases
from .evaluation import label_tests
from .world import World, generate_world

__all__ = [
    "Draft",
    "TaskSpec",
    "scenario",
    "TEMPLATES",
    "SPLITS",
    "SPLIT_SCHEMES",
    "split_table",
    "build_tasks",
    "start_state",
    "world_bundle",
    "PREAMBLE",
    "MISSED_PAGE_PREAMBLE",
    "NOW_CODE",
    "ENV_ID",
    "login",
    "retry",
]

ENV_ID = "evolver/AppWorld-v0"

PREAMBLE = """passwords = {a["account_name"]: a["password"] for a in apis.supervisor.show_account_passwords()}
profile = apis.supervisor.show_profile()
logins = {"phone": apis.phone.login, "music": apis.music.login, "payments": apis.payments.login,
          "notes": apis.notes.login, "todo": apis.todo.login, "mail": apis.mail.login}

def login(app):
    username = profile["phone_number"] if app == "phone" else profile["email"]
    return logins[app](username=username, password=passwords[app])["access_token"]

def all_pages(fn, **kwargs):
    results, page = [], 0
    while True:
        batch = fn(page_index=page, page_limit=20, **kwargs)
        if not batch:
            return results
        results += batch
        page += 1
"""
# the "missed page" perturbation: a solution that reads only the first (default-size) page
MISSED_PAGE_PREAMBLE = PREAMBLE.replace(
    "def all_pages(fn, **kwargs):",
    "def all_pages(fn, **kwargs):\n    return fn(**kwargs)\n\ndef unused(fn, **kwargs):",
)
NOW_CODE = """import datetime
clock = apis.phone.show_current_date_time(access_token=login("phone"))
now = datetime.datetime.fromisoformat(clock["date"] + "T" + clock["time"])
today = now.date()
"""


def login(app: str) -> str:
    """Reference-code line that logs in to ``app`` and binds the token to ``<app>_token``."""
    return f"{app}_token = login({app!r})\n"


@dataclass
class TaskSpec:
    """One task as a template builds it."""

    instruction: str
    reference: str
    tests: list[dict[str, Any]]
    answer: Any = None
    allowed: dict[str, dict[str, Any]] = field(default_factory=dict)
    perturbations: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)


class Draft:
    """Scratch copy of the start state a template reads and extends with setup rows."""

    def __init__(self, world: World, base: AppDatabases):
        self.world = world
        self.dbs = base.copy()
        self.setup: list[dict[str, Any]] = []
        self.now = world.now
        self.today = world.now.date()

    def q(self, app: str, sql: str, params: tuple | list = ()) -> list[dict[str, Any]]:
        return self.dbs.query(app, sql, params)

    def insert(self, app: str, table: str, **row: Any) -> int:
        rid = self.dbs.insert(app, table, row)
        self.setup.append({"op": "insert", "app": app, "table": table, "row": {"id": rid, **row}})
        return rid

    def update(self, app: str, table: str, rid: int, **fields: Any) -> None:
        for col, val in fields.items():
            self.dbs.execute(app, f"UPDATE {table} SET {col} = ? WHERE id = ?", (val, rid))
        self.setup.append({"op": "update", "app": app, "table": table, "id": rid, "fields": fields})

    def ts(self, delta: dt.timedelta = dt.timedelta()) -> str:
        return (self.now + delta).replace(microsecond=0).isoformat()

    def contacts(self, relationship: str | None = None) -> list[dict[str, Any]]:
        rows = self.q("phone", "SELECT * FROM contacts WHERE owner_id = 1 ORDER BY id")
        return [
            r for r in rows if relationship is None or relationship in (r["relationships"] or "").split(",")
        ]

    def user_id(self, app: str, email: str) -> int:
        return self.q(app, "SELECT id FROM users WHERE email = ?", (email,))[0]["id"]


@dataclass
class Template:
    name: str
    apps: tuple[str, ...]
    difficulty: int
    build: Callable[[Draft, random.Random], TaskSpec]


TEMPLATES: dict[str, Template] = {}


def scenario(name: str, apps: tuple[str, ...], difficulty: int) -> Callable:
    """Register ``fn(draft, rnd) -> TaskSpec`` as a scenario template."""
    if difficulty not in (1, 2, 3):
        raise ValueError(f"difficulty must be 1, 2 or 3, got {difficulty!r}")

    def wrap(fn: Callable[[Draft, random.Random], TaskSpec]) -> Callable:
        TEMPLATES[name] = Template(name, apps, difficulty, fn)
        return fn

    return wrap


def _ensure_templates() -> None:
    from . import scenarios_cross, scenarios_mail, scenarios_single  # noqa: F401  (registers templates)


# split -> [(template, variant)]; variants give different parameters, hence different scenarios
_SEEN = [
    "contact_relationship_count",
    "playlist_minutes",
    "note_code_lookup",
    "create_alarm",
    "disable_early_alarms",
    "like_album_songs",
    "genre_playlist",
    "overdue_tasks",
    "sent_to_person",
    "pay_texted_amount",
    "approve_requests_by_relationship",
    "split_bill",
    "postpone_tasks",
    "checklist_to_tasks",
    "birthday_note",
    "most_played_artist",
]
_CHALLENGE = ["unread_from_sender", "pay_emailed_invoice", "reply_latest_email", "email_relationship_group"]
SPLITS: dict[str, list[tuple[str, str]]] = {
    "train": [(t, "a") for t in _SEEN],
    "dev": [(t, "b") for t in _SEEN[::2]],
    "test_normal": [(t, "c") for t in _SEEN],
    "test_challenge": [(t, v) for v in ("a", "b") for t in _CHALLENGE],
}


SPLIT_SCHEMES = ("goal", "scenario")
_HELD_OUT = 4  # templates held out for dev, and as many for test_normal, in the scenario scheme


def split_table(scheme: str = "goal", seed: int = 0) -> dict[str, list[tuple[str, str]]]:
    """Which ``(template, variant)`` pairs make each split's scenarios under ``scheme``.

    ``goal``: :data:`SPLITS`, every dev and test_normal template is also a train template (with other
    parameters). ``scenario``: the 16 seen templates are shuffled with ``seed``; 4 make dev (2
    variants), 4 others test_normal (4 variants) and the other 8 train (2 variants), so no dev or
    test template is trained on; test_challenge (the held-out mail app) is the same in both.

    Example:
        >>> table = split_table("scenario", seed=0)
        >>> {s: len(v) for s, v in table.items()}
        {'train': 16, 'dev': 8, 'test_normal': 16, 'test_challenge': 8}
        >>> {t for t, _ in table["train"]} & {t for s in ("dev", "test_normal") for t, _ in table[s]}
        set()
    """
    if scheme not in SPLIT_SCHEMES:
        raise ValueError(f"split_scheme must be one of {SPLIT_SCHEMES}, got {scheme!r}")
    if scheme == "goal":
        return SPLITS
    seen = sorted(_SEEN)
    make_random(seed, "appworld-split", scheme).shuffle(seen)
    dev, test, train = seen[:_HELD_OUT], seen[_HELD_OUT : 2 * _HELD_OUT], seen[2 * _HELD_OUT :]
    return {
        "train": [(t, v) for v in "ab" for t in train],
        "dev": [(t, v) for v in "ab" for t in dev],
        "test_normal": [(t, v) for v in "abcd" for t in test],
        "test_challenge": SPLITS["test_challenge"],
    }


@lru_cache(maxsize=4)
def world_bundle(seed: int) -> tuple[World, AppDatabases]:
    """The world of ``seed`` and its base databases (cached per process; treat as read-only)."""
    world = generate_world(seed)
    return world, build_base_databases(world)


def apply_setup(dbs: AppDatabases, setup: list[dict[str, Any]]) -> None:
    for op in setup:
        if op["op"] == "insert":
            dbs.insert(op["app"], op["table"], op["row"])
        else:
            for col, val in op["fields"].items():
                dbs.execute(op["app"], f"UPDATE {op['table']} SET {col} = ? WHERE id = ?", (val, op["id"]))


def start_state(task: Task, into: AppDatabases | None = None) -> AppDatabases:
    """The task's start databases: the base world of ``task.seed`` plus the task's setup rows."""
    _, base = world_bundle(task.seed)
    dbs = base.copy(into)
    apply_setup(dbs, task.goal.get("setup", []))
    return dbs


def _finish(spec: TaskSpec, draft: Draft, tmpl: Template) -> dict[str, Any]:
    tests = list(spec.tests)
    if spec.answer is not None:
        tests.insert(0, {"kind": "answer", "expected": spec.answer, "requirement": "the answer is correct"})
    tests.append(
        {
            "kind": "no_collateral",
            "allowed": spec.allowed,
            "requirement": "no other records or fields changed (no collateral damage)",
        }
    )
    tests = label_tests(tests, draft.dbs)
    if not any(t["label"] == "no_op_fail" for t in tests):
        raise RuntimeError(f"template {tmpl.name} made a task a do-nothing agent passes: {spec.instruction}")
    return {
        "setup": draft.setup,
        "tests": tests,
        "answer": spec.answer,
        "datetime": draft.now.isoformat(),
        "supervisor": {
            k: draft.world.supervisor[k] for k in ("first_name", "last_name", "email", "phone_number")
        },
        "scenario": tmpl.name,
        "apps": list(tmpl.apps),
        "params": spec.params,
    }


@lru_cache(maxsize=32)
def _split_tasks(split: str, seed: int, scheme: str = "goal") -> tuple[Task, ...]:
    _ensure_templates()
    table = split_table(scheme, seed)
    if split not in table:
        raise ValueError(f"unknown AppWorld split {split!r}; splits: {sorted(table)}")
    world, base = world_bundle(seed)
    out = []
    # A task is made from (seed, split, template, variant) alone, id included: the same id is the same
    # task in every scheme.
    for name, variant in table[split]:
        tmpl = TEMPLATES[name]
        sid = hashlib.blake2b(f"{seed}/{split}/{name}/{variant}".encode(), digest_size=4).hexdigest()[:7]
        seen: set[str] = set()
        n, attempt = 0, 0
        while n < 3:
            attempt += 1
            if attempt > 30:
                raise RuntimeError(f"template {name} could not make 3 distinct tasks")
            draft = Draft(world, base)
            rnd = make_random(seed, "appworld-task", split, name, variant, attempt)
            try:
                spec = tmpl.build(draft, rnd)
            except _Retry:
                continue
            if spec.instruction in seen:
                continue
            seen.add(spec.instruction)
            n += 1
            goal = _finish(spec, draft, tmpl)
            out.append(
                Task(
                    task_id=f"{sid}_{n}",
                    env_id=ENV_ID,
                    instruction=spec.instruction,
                    split=split,
                    seed=seed,
                    goal=goal,
                    reference=[PREAMBLE, spec.reference],
                    difficulty=tmpl.difficulty,
                    metadata={
                        "scenario_id": sid,
                        "template": name,
                        "variant": variant,
                        "apps": list(tmpl.apps),
                        "perturbations": spec.perturbations,
                    },
                )
            )
    return tuple(out)


class _Retry(Exception):
    """Raised by a template when its random draw does not make a good task; another draw is tried."""


def retry(reason: str) -> None:
    raise _Retry(reason)


def build_tasks(split: str, seed: int = 0, scheme: str = "goal") -> list[Task]:
    """All tasks of ``split`` under split scheme ``scheme`` in the world of ``seed`` (deterministic;
    cached per process)."""
    return list(_split_tasks(split, int(seed), scheme))
