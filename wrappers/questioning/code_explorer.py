"""Model-free exploration of code-as-action environments (AppWorld's protocol: Python against ``apis``).

* ``ApiDoc`` - one API as ``api_docs.show_api_doc`` describes it (app, name, method, parameters).
* ``discover_api_docs`` - reads every API's documentation through the environment itself (the
  ``api_docs`` app), so the explorer needs nothing but the env and its ``profile()``.
* ``is_code_env`` - whether an environment takes Python cells against an ``apis`` object.
* ``CodeExplorer`` - a seeded random API explorer: logs in to every app with the supervisor's
  account passwords, reads (lists, shows, searches) and then changes the world (creates, updates,
  deletes) with arguments taken from what earlier calls returned or from a small word bank.

Every cell calls one API and prints its response, so later cells can pick ids, emails and titles
from what the world showed; cells are plain literal code, so a hindsight task's reference (the
cells that ran) replays exactly. The explorer is generic over the API documentation; what is
AppWorld's convention (the ``supervisor`` app holds the profile and passwords, ``login`` returns an
``access_token``, APIs that must not be explored) sits in :class:`AppConventions`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evolver_gym.core import Task

__all__ = ["ApiDoc", "AppConventions", "CodeExplorer", "discover_api_docs", "is_code_env"]


@dataclass(frozen=True)
class ApiDoc:
    """One API: ``apis.<app>.<name>(**params)``; ``params`` as ``api_docs`` lists them."""

    app: str
    name: str
    method: str
    params: tuple[dict[str, Any], ...]

    @property
    def writes(self) -> bool:
        return self.method.upper() != "GET"

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> ApiDoc:
        return cls(
            str(doc["app_name"]),
            str(doc["api_name"]),
            str(doc.get("method", "GET")),
            tuple(dict(p) for p in doc.get("parameters", [])),
        )


@dataclass(frozen=True)
class AppConventions:
    """What the explorer assumes about the world beyond its API docs (AppWorld's conventions).

    Attributes:
        supervisor_app: The app with the user's profile and account passwords (no login needed).
        passwords_api / profile_api: Its APIs listing ``{"account_name", "password"}`` and the profile.
        login_api: Each app's login API (``username``, ``password`` -> ``{"access_token"}``).
        token_param: The parameter that carries the access token.
        failure_prefix: How the observation of a cell that raised begins.
        skip: APIs never explored (they end the episode, lock the explorer out, or only read docs).
        skip_apps: Apps never explored.
    """

    supervisor_app: str = "supervisor"
    passwords_api: str = "show_account_passwords"
    profile_api: str = "show_profile"
    login_api: str = "login"
    token_param: str = "access_token"
    failure_prefix: str = "Execution failed"
    skip: frozenset[str] = frozenset(
        {"login", "logout", "change_password", "complete_task", "show_active_task"}
    )
    skip_apps: frozenset[str] = frozenset({"api_docs"})


APPWORLD = AppConventions()


def is_code_env(env: Any) -> bool:
    """True for an env whose actions are Python cells against ``apis`` (AppWorld style, code mode)."""
    base = getattr(env, "unwrapped", env)
    if getattr(base, "action_mode", "code") != "code":
        return False
    try:
        ops = base.profile().get("operations", {}) if hasattr(base, "profile") else {}
    except Exception:  # a profile that cannot be built says nothing about the action protocol
        return False
    return isinstance(ops, dict) and "api_docs" in ops


_DOCS_CELL = """import json
names = [d["name"] for d in apis.api_docs.show_api_descriptions(app_name={app!r})][{start}:{stop}]
docs = [apis.api_docs.show_api_doc(app_name={app!r}, api_name=n) for n in names]
print(json.dumps([[d["app_name"], d["api_name"], d["method"], d["parameters"]] for d in docs]))"""
_DOCS_PER_CELL = 16  # APIs whose docs one cell prints (fewer when the output is cut at the env's cap)


def discover_api_docs(
    env: Any, task: Task | dict | None = None, apps: Sequence[str] | None = None
) -> list[ApiDoc]:
    """Every API's documentation, read through the env's ``api_docs`` app (a cell per 16 APIs of an app,
    fewer where an env's output cap would cut the reply: AppWorld's own apps document every parameter).

    ``apps`` defaults to the apps in ``profile()["operations"]``; ``task`` is the episode the
    cells run in (default: the env's first ``train`` task). Raises ``RuntimeError`` naming the app
    whose documentation could not be read.
    """
    base = getattr(env, "unwrapped", env)
    apps = list(apps if apps is not None else base.profile().get("operations", {}))
    task = task if task is not None else base.tasks("train")[0]
    env.reset(options={"task": Task.from_dict(task).public() if isinstance(task, (Task, dict)) else task})
    docs: list[ApiDoc] = []
    for app in apps:
        start, size = 0, _DOCS_PER_CELL
        while True:
            obs, _, term, trunc, info = env.step(_DOCS_CELL.format(app=app, start=start, stop=start + size))
            if term or trunc:
                env.reset(options={"task": Task.from_dict(task).public()})
            if not info.get("action_valid", False):
                raise RuntimeError(f"could not read the API docs of app {app!r}: {obs[-300:]}")
            try:
                rows = json.loads(obs.strip())
            except ValueError:  # cut at the output cap: ask for fewer at once
                if size == 1:
                    raise RuntimeError(f"the API docs of app {app!r} do not fit in one observation: "
                                       f"{obs[-300:]}") from None
                size = max(1, size // 2)
                continue
            docs.extend(
                ApiDoc.from_doc({"app_name": row[0], "api_name": row[1], "method": row[2], "parameters": row[3]})
                for row in rows
            )
            if len(rows) < size:
                break
            start += size
    return docs


# -- values seen in responses -------------------------------------------------------------------
_PAIR = re.compile(r'"(\w+)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false)')


def _harvest(text: str) -> list[tuple[str, Any]]:
    """``(key, scalar)`` pairs in a printed JSON response (tolerates truncated output)."""
    try:
        data = json.loads(text.strip())
    except ValueError:
        return [(k, json.loads(v)) for k, v in _PAIR.findall(text)]
    out: list[tuple[str, Any]] = []

    def walk(x: Any, key: str | None) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, k)
        elif isinstance(x, list):
            for v in x:  # "song_ids": [1, 2] are song_id values
                walk(v, key[:-1] if key and key.endswith("_ids") else key)
        elif key is not None and x is not None:
            out.append((key, x))

    walk(data, None)
    return out


_WORDS = (
    "budget weekend garden recipe travel meeting birthday gym reading project groceries concert "
    "movie summer review plan ideas piano coffee hiking finance reminder school music dinner"
).split()
_FIRST = ("Avery Jordan Morgan Riley Casey Quinn Rowan Sage Emery Harper").split()
_LAST = ("Lindqvist Okafor Moreau Tanaka Alvarez Novak Brennan Castillo Iyer Sorensen").split()
_DAYS = ("monday tuesday wednesday thursday friday saturday sunday").split()
_TEXT_PARAMS = ("title", "content", "message", "body", "subject", "description", "label", "name", "query")


class CodeExplorer:
    """Seeded random exploration of an ``apis`` world, one API call per Python cell.

    Episode shape: a login cell (passwords and profile from the supervisor app, a token per app
    whose ``login`` API is documented), then reads and writes at random, novel APIs first; once
    ``writes`` write calls succeeded (drawn per episode from ``writes_range``) the explorer ends the
    episode, so every exploration makes a small, describable change.

    Args:
        docs: The API documentation (see :func:`discover_api_docs`).
        conventions: World conventions (:data:`APPWORLD` by default).
        write_prob: Chance that a step (after the first read) calls a write API.
        optional_prob: Chance to fill an optional parameter the explorer can fill.
        writes_range: ``(low, high)`` successful writes per episode, drawn uniformly.

    Example:
        >>> token = {"name": "access_token", "type": "string", "required": True}
        >>> docs = [ApiDoc("notes", "login", "POST", ({"name": "username", "description": "Your email."},)),
        ...         ApiDoc("notes", "create_note", "POST", (token, {"name": "title", "required": True}))]
        >>> ex = CodeExplorer(docs)
        >>> ex.reset(Task("t", "evolver/AppWorld-v0", "x"), np.random.default_rng(0))
        >>> "login" in ex("prompt", {})
        True
        >>> ex("['notes']", {"action_valid": True}).splitlines()[0]
        "r1 = apis.notes.create_note(access_token=tokens['notes'], title='Birthday movie')"
    """

    def __init__(
        self,
        docs: Sequence[ApiDoc | dict[str, Any]],
        conventions: AppConventions = APPWORLD,
        *,
        write_prob: float = 0.5,
        optional_prob: float = 0.3,
        writes_range: tuple[int, int] = (1, 2),
    ):
        if not docs:
            raise ValueError("CodeExplorer needs API docs, got none")
        for name, p in (("write_prob", write_prob), ("optional_prob", optional_prob)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"CodeExplorer.{name} must be in [0, 1], got {p!r}")
        lo, hi = writes_range
        if not 1 <= lo <= hi:
            raise ValueError(f"CodeExplorer.writes_range must satisfy 1 <= low <= high, got {writes_range!r}")
        self.conventions = conventions
        self.docs = [d if isinstance(d, ApiDoc) else ApiDoc.from_doc(d) for d in docs]
        cv = conventions
        self.login_apps = sorted({d.app for d in self.docs if d.name == cv.login_api})
        self.login_user = {d.app: self._username_key(d) for d in self.docs if d.name == cv.login_api}
        self.candidates = [d for d in self.docs if d.name not in cv.skip and d.app not in cv.skip_apps]
        self.write_prob, self.optional_prob, self.writes_range = write_prob, optional_prob, (lo, hi)
        self.rng = np.random.default_rng(0)
        self._reset_state()

    @classmethod
    def from_env(cls, env: Any, **kwargs: Any) -> CodeExplorer:
        """A code explorer for ``env``, its API docs read through the env's ``api_docs`` app."""
        return cls(discover_api_docs(env), **kwargs)

    def _username_key(self, login: ApiDoc) -> str:
        # The login doc says what the username is ("Your phone number." / "Your email address.").
        desc = " ".join(
            str(p.get("description", "")) for p in login.params if p.get("name") == "username"
        ).lower()
        return "phone_number" if "phone" in desc else "email"

    def _reset_state(self) -> None:
        self.seen: dict[tuple[str, str], list[Any]] = {}
        self.own: set[Any] = set()
        self.called: set[tuple[str, str]] = set()
        self.pending: ApiDoc | None = None
        self.cell = 0
        self.reads = 0
        self.writes_done = 0
        self.writes_goal = 1

    def reset(self, task: Task, rng: np.random.Generator) -> None:
        self.rng = rng
        self._reset_state()
        self.writes_goal = int(rng.integers(self.writes_range[0], self.writes_range[1] + 1))

    # -- observation bookkeeping --------------------------------------------------------------
    def _remember(self, app: str, observation: str) -> None:
        for key, value in _harvest(observation):
            bucket = self.seen.setdefault((app, key), [])
            if value not in bucket:
                bucket.append(value)

    def _values(self, app: str, name: str) -> list[Any]:
        """Values seen for parameter ``name``: in ``app`` first, then anywhere."""
        keys = [name]
        if name.endswith("email") or name == "recipient":
            keys = [k for (_, k) in self.seen if k.endswith("email")]
        local = [v for k in keys for v in self.seen.get((app, k), []) if v not in self.own]
        return local or [v for (a, k), vs in self.seen.items() if k in keys for v in vs if v not in self.own]

    # -- argument filling ---------------------------------------------------------------------
    def _pick(self, values: Sequence[Any]) -> Any:
        return values[int(self.rng.integers(len(values)))]

    def _words(self, lo: int, hi: int) -> str:
        k = int(self.rng.integers(lo, hi + 1))
        return " ".join(_WORDS[int(i)] for i in self.rng.choice(len(_WORDS), size=k, replace=False))

    def _fill(self, app: str, p: dict[str, Any], writes: bool = True) -> tuple[bool, str]:
        """``(ok, python_literal_or_expression)`` for one parameter."""
        name, typ = str(p.get("name")), str(p.get("type", "string"))
        if name == self.conventions.token_param:
            return (app in self.login_apps), f"tokens[{app!r}]"
        choices = _choices(p)
        if choices:
            return True, repr(self._pick(choices))
        if name == "page_index":
            return True, "0"
        if name == "page_limit":
            return True, str(int(self.rng.integers(5, 21)))
        seen = self._values(app, name)
        if name.endswith("_id") or name.endswith("email") or name == "recipient":
            return (bool(seen), repr(self._pick(seen)) if seen else "")
        if name == "phone_number":
            if seen and self.rng.random() < 0.8:
                return True, repr(self._pick(seen))
            return True, repr("555" + "".join(str(int(d)) for d in self.rng.integers(0, 10, 7)))
        lo, hi = _bounds(p)
        if typ == "integer":
            return True, str(
                int(self.rng.integers(int(lo if lo is not None else 1), int(hi if hi is not None else 5) + 1))
            )
        if typ == "number":
            return True, repr(float(self._pick([5.0, 7.5, 10.0, 12.0, 20.0, 25.0, 40.0])))
        if typ == "boolean":
            return True, repr(bool(self.rng.random() < 0.5))
        if typ == "list":
            if "day" in name:
                return True, repr(sorted({self._pick(_DAYS) for _ in range(2)}, key=_DAYS.index))
            words = [w for w in self._values(app, name) if isinstance(w, str)] or list(_WORDS)
            return True, repr(sorted({self._pick(words) for _ in range(int(self.rng.integers(1, 3)))}))
        if not writes and typ == "string" and seen:
            return True, repr(self._pick(seen))  # a read filters best by a value the world has
        if name.endswith("_at"):
            year = next((v[:4] for v in seen if isinstance(v, str) and re.match(r"\d{4}-", v)), "2024")
            return True, repr(f"{year}-{int(self.rng.integers(1, 13)):02d}-01T00:00:00")
        if name == "time":
            return True, repr(f"{int(self.rng.integers(5, 23)):02d}:{self._pick(['00', '15', '30', '45'])}")
        if "date" in name or name == "birthday":
            base = [v for v in seen if isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v)]
            year = base[0][:4] if base else "2024"
            return True, repr(
                f"{year}-{int(self.rng.integers(1, 13)):02d}-{int(self.rng.integers(1, 29)):02d}"
            )
        if name == "first_name":
            return True, repr(self._pick(_FIRST))
        if name == "last_name":
            return True, repr(self._pick(_LAST))
        if name == "query":
            pool = [w for v in self._values(app, "title") if isinstance(v, str) for w in v.split()[:1]]
            return True, repr(self._pick(pool) if pool else self._pick(_WORDS))
        if any(t in name for t in _TEXT_PARAMS):
            text = self._words(1, 3) if name in ("title", "subject", "label", "name") else self._words(4, 8)
            return True, repr(text.capitalize())
        return True, repr(self._words(1, 2))

    def _call(self, doc: ApiDoc) -> str | None:
        """The call expression for ``doc``, or None when a required argument cannot be filled."""
        args = []
        for p in doc.params:
            required = bool(p.get("required"))
            if not required and (
                p.get("name") not in ("access_token",) and self.rng.random() >= self.optional_prob
            ):
                continue
            ok, lit = self._fill(doc.app, p, doc.writes)
            if not ok:
                if required:
                    return None
                continue
            args.append(f"{p['name']}={lit}")
        return f"apis.{doc.app}.{doc.name}({', '.join(args)})"

    def _login_cell(self) -> str:
        cv = self.conventions
        sup = f"apis.{cv.supervisor_app}"
        lines = [
            f'passwords = {{a["account_name"]: a["password"] for a in {sup}.{cv.passwords_api}()}}',
            f"me = apis.{cv.supervisor_app}.{cv.profile_api}()",
            "tokens = {}",
        ]
        for app in self.login_apps:
            lines.append(
                f"tokens[{app!r}] = apis.{app}.{cv.login_api}(username=me[{self.login_user[app]!r}], "
                f"password=passwords[{app!r}])[{cv.token_param!r}]"
            )
        lines.append("print(sorted(tokens))")
        return "\n".join(lines)

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        if self.cell == 0:
            self.cell = 1
            # The first observation introduces the user: their own email and phone are not targets
            # for messages, money or friend requests (such calls fail and change nothing).
            self.own = {w.strip(".,;:()[]'\"") for w in observation.split()}
            return self._login_cell()
        # A cell that raised (an API error) ran validly but did nothing worth remembering.
        ok = bool(info.get("action_valid", True)) and not observation.lstrip().startswith(
            self.conventions.failure_prefix
        )
        if self.pending is not None:
            if ok:
                self._remember(self.pending.app, observation)
                if self.pending.writes:
                    self.writes_done += 1
            self.pending = None
        if self.writes_done >= self.writes_goal:
            raise StopIteration  # a small change is made: end the exploration here
        want_write = self.reads > 0 and self.rng.random() < self.write_prob
        for writes in (want_write, not want_write):
            pool = [d for d in self.candidates if d.writes == writes]
            calls = [(d, c) for d in pool if (c := self._call(d)) is not None]
            if not calls:
                continue
            fresh = [dc for dc in calls if (dc[0].app, dc[0].name) not in self.called] or calls
            # App first, then API: apps with many APIs of one kind do not crowd out the others.
            app = self._pick(sorted({d.app for d, _ in fresh}))
            doc, call = self._pick([dc for dc in fresh if dc[0].app == app])
            self.called.add((doc.app, doc.name))
            self.pending = doc
            self.reads += not doc.writes
            var = f"r{self.cell}"
            self.cell += 1
            return f"{var} = {call}\nprint({var})"
        raise StopIteration  # nothing callable (no docs left): end the exploration


def _choices(p: dict[str, Any]) -> list[Any]:
    for c in p.get("constraints") or []:
        m = re.match(r"value in (\[.*\])$", str(c))
        if m:
            try:
                return list(ast.literal_eval(m.group(1)))
            except (ValueError, SyntaxError):
                return []
    return []


def _bounds(p: dict[str, Any]) -> tuple[float | None, float | None]:
    lo = hi = None
    for c in p.get("constraints") or []:
        m = re.match(r"value ([<>]=) (-?\d+(?:\.\d+)?)$", str(c))
        if m:
            lo, hi = (float(m.group(2)), hi) if m.group(1) == ">=" else (lo, float(m.group(2)))
    return lo, hi
