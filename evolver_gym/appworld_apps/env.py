"""``evolver/AppWorldApps-v0``: agent code in the project's sandbox, API calls served by AppWorld's real apps.

* ``AppWorldAppsEnv`` - the embedded env's interface (code or tool actions, state tests over the database
  diff, ``tasks``/``profile``/``oracle``/``hindsight_task``) over the 9 real apps and their 457 APIs.
* ``evaluate_diff`` - a task's tests over the real apps' diff (the embedded kinds plus ``changed_where``
  and ``removed_where``, which name rows by content instead of by id).
"""

from __future__ import annotations

import json
import re
from typing import Any

import gymnasium as gym

from evolver_gym.appworld.apis import INT64_MAX, INT64_MIN, _wide_int
from evolver_gym.appworld.db import TableDiff
from evolver_gym.appworld.env import render_prompt
from evolver_gym.appworld.evaluation import Evaluation, _field_ok, evaluate_tests, evaluation_report
from evolver_gym.appworld.guard import ApiLimits, CallGuard, printable
from evolver_gym.appworld.sandbox import Sandbox, SandboxConfig
from evolver_gym.appworld.tools import parse_tool_call
from evolver_gym.core.spaces import UnicodeText
from evolver_gym.core.task import Task
from evolver_gym.core.trajectory import Trajectory

from .backend import AppsServer, AppsServerError
from .tasks import ENV_ID, SPLIT_SCHEMES, SPLITS, TEMPLATES, build_tasks, held_out_apps, no_collateral, task_apps

__all__ = ["AppWorldAppsEnv", "evaluate_diff"]

_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
_IGNORED = {"supervisor.tasks"}  # the answer channel, not world state


def _diffs(raw: list[dict[str, Any]]) -> list[TableDiff]:
    out = []
    for d in raw:
        td = TableDiff(
            d["app"],
            d["table"],
            added=list(d["added"]),
            removed=list(d["removed"]),
            updated={int(k): v for k, v in d["updated"].items()},
        )
        td.end_rows = {int(k): v for k, v in d["end_rows"].items()}
        td.start_rows = {int(k): v for k, v in d["start_rows"].items()}
        out.append(td)
    return out


def evaluate_diff(
    tests: list[dict[str, Any]], diffs: list[TableDiff], answer: Any = None, difficulty: int | None = None
) -> Evaluation:
    """Evaluate ``tests`` against the real apps' ``diffs`` and the final ``answer``.

    Example:
        >>> d = TableDiff("phone", "alarms", added=[4], end_rows={4: {"time": "07:00", "label": "Run"}})
        >>> test = {"kind": "added", "app": "phone", "table": "alarms", "where": {"time": "07:00"}}
        >>> evaluate_diff([test], [d]).success
        True
        >>> evaluate_diff([{"kind": "answer", "expected": 3}], [], answer=2).success
        False
    """
    diffs = [d for d in diffs if d.name not in _IGNORED]
    by_name = {d.name: d for d in diffs}
    ev = Evaluation(difficulty=difficulty)
    for test in tests:
        entry = {"requirement": test.get("requirement", test["kind"]), "label": test.get("label")}
        kind = test["kind"]
        if kind in ("changed_where", "removed_where"):
            d = by_name.get(f"{test['app']}.{test['table']}")
            rows = (
                (
                    [d.end_rows[i] for i in d.updated]
                    if kind == "changed_where"
                    else [d.start_rows[i] for i in d.removed]
                )
                if d
                else []
            )
            hits = [r for r in rows if all(_field_ok(r.get(k), v) for k, v in test["where"].items())]
            reason = (
                None
                if len(hits) == int(test.get("count", 1))
                else (f"{len(hits)} {'changed' if kind == 'changed_where' else 'removed'} row(s) match {test['where']}")
            )
        else:
            sub = evaluate_tests([test], None, None, answer=answer, diffs=diffs)
            reason = None if sub.passes else sub.failures[0]["trace"]
        if reason is None:
            ev.passes.append(entry)
        else:
            ev.failures.append({**entry, "trace": reason})
    return ev


class AppWorldAppsEnv(gym.Env[str, str]):
    """AppWorld's 9 real apps (457 APIs, the package's own api docs) on a generated world, driven by code.

    ## Description
    The installed ``appworld==0.1.3.post1`` package runs in its own process (its dependencies conflict
    with this project's) on a seeded world built from its own models and factories (people with
    contacts, playlists, payments and cards, notes, todos, mail threads, files, carts and orders,
    shared expenses). The agent's code runs in this project's OS-isolated sandbox; only its API calls
    reach the apps, after the host's :class:`~evolver_gym.appworld.guard.CallGuard`.

    ## Action Space / Observation Space
    As ``evolver/AppWorld-v0``: a Python cell (``action_mode="code"``) or one JSON tool call
    ``{"name": "spotify__login", "arguments": {...}}`` (``"tool"``); text observations, capped.

    ## Rewards
    ``1.0`` at the end when every test passes, else ``0.0``; ``info["evaluation"]["pass_share"]`` is the dense variant.

    ## Episode End
    Terminated by ``apis.supervisor.complete_task(...)``; truncated after ``max_steps``.

    ## Information
    Every step: ``task`` (public view), ``instruction``, ``step``, ``action_valid``, ``allowed_actions`` (always
    ``None``: any code or tool call may be submitted), ``progress`` (privileged: share of the
    do-nothing-failing tests passing now), ``error`` (when invalid),
    ``fault`` (sandbox fault), ``interpreter_restarted``. At the end: ``success``, ``score``, ``evaluation``.

    ## Arguments
    ``split``, ``split_scheme`` (``goal``/``scenario``/``app``: what dev and test hold out whole, see
    :mod:`.tasks`), ``seed`` (world seed), ``max_steps``, ``action_mode``,
    ``timeout_s``, ``cpu_s``, ``memory_mb``, ``max_output_chars``, ``api_limits``, ``python`` (the appworld
    interpreter; default :func:`~evolver_gym.appworld_apps.backend.find_python`). ``num_calls`` counts the API
    calls this env has sent to the apps (past the host's checks; integers wider than 64 bits get a 422 there).

    Example (needs ``bash scripts/setup.sh appworld-apps``; the first use builds the world, about a minute)::

        env = gym.make("evolver/AppWorldApps-v0", split="train")
        obs, info = env.reset(options={"index": 0})
        obs, r, term, trunc, info = env.step("print(apis.api_docs.show_api_descriptions(app_name='spotify'))")
    """

    metadata = {"render_modes": ["ansi"]}
    solves_is_costly = True

    def __init__(
        self,
        split: str = "train",
        seed: int = 0,
        split_scheme: str = "goal",
        max_steps: int = 40,
        action_mode: str = "code",
        timeout_s: float = 10.0,
        cpu_s: float | None = None,
        memory_mb: int = 256,
        max_output_chars: int = 20000,
        render_mode: str | None = None,
        api_limits: ApiLimits | None = None,
        python: str | None = None,
    ):
        if split not in SPLITS:
            raise ValueError(f"split must be one of {list(SPLITS)}, got {split!r}")
        if split_scheme not in SPLIT_SCHEMES:
            raise ValueError(f"split_scheme must be one of {SPLIT_SCHEMES}, got {split_scheme!r}")
        if action_mode not in ("code", "tool"):
            raise ValueError(f"action_mode must be 'code' or 'tool', got {action_mode!r}")
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.split, self.seed, self.split_scheme, self.max_steps = split, int(seed), split_scheme, max_steps
        self.action_mode, self.render_mode, self.python = action_mode, render_mode, python
        self.sandbox_config = SandboxConfig(
            wall_s=float(timeout_s),
            cpu_s=float(cpu_s or timeout_s),
            memory_mb=int(memory_mb),
            max_output=int(max_output_chars),
        )
        self.api_limits = api_limits or ApiLimits()
        self.sandbox_config.max_request_bytes = self.api_limits.max_request_bytes
        self._guard = CallGuard(self.api_limits)
        self.action_space = UnicodeText(200_000, examples=("print(apis.api_docs.show_app_descriptions())",))
        self.observation_space = UnicodeText(1_000_000)
        self._obs_limit = min(self.sandbox_config.max_output + 4_000, self.observation_space.max_length)
        self._server: AppsServer | None = None
        self._world: dict[str, Any] | None = None
        self._sandbox: Sandbox | None = None
        self._task: Task | None = None
        self._steps, self._done, self._last_obs = 0, False, ""
        self._hindsight_env: AppWorldAppsEnv | None = None
        self.num_calls = 0  # API calls this env has sent to the apps (past the host's checks)

    # -- the world ------------------------------------------------------------------------------------
    @property
    def server(self) -> AppsServer:
        if self._server is None:
            self._server = AppsServer(self.python)
            self._world = self._server.open_world(self.seed)
        return self._server

    @property
    def world(self) -> dict[str, Any]:
        """The facts of the generated world (people, songs, notes, ...), as the server built it."""
        self.server  # noqa: B018  (starts the server and opens the world)
        return self._world

    def tasks(self, split: str | None = None) -> list[Task]:
        """Every task of ``split`` (default: this env's) in this env's world."""
        return build_tasks(self.world, split or self.split, self.split_scheme)

    def _choose(self, options: dict[str, Any]) -> Task:
        if "task" in options:
            task = Task.from_dict(options["task"])
            if "tests" not in task.goal:
                raise ValueError(f"task {task.task_id!r} has no goal['tests']; it is not an AppWorld task")
            return task
        if "task_id" in options:
            for split in SPLITS:
                for t in build_tasks(self.world, split, self.split_scheme):
                    if t.task_id == options["task_id"]:
                        return t
            raise ValueError(f"unknown task_id {options['task_id']!r} for world seed {self.seed}")
        tasks = self.tasks(options.get("split", self.split))
        if "index" in options:
            index = int(options["index"])
            if not 0 <= index < len(tasks):
                raise ValueError(f"index must be in [0, {len(tasks)}), got {index!r}")
            return tasks[index]
        return tasks[int(self.np_random.integers(len(tasks)))]

    # -- gym API --------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        task = self._choose(dict(options or {}))
        if task.seed != self.seed:
            raise ValueError(f"task {task.task_id!r} belongs to world seed {task.seed}, this env runs seed {self.seed}")
        self.server.request("reset", task={"instruction": task.instruction, "setup": task.goal.get("setup", [])})
        self._task = task
        self._guard.reset()
        if self.action_mode == "code":
            if self._sandbox is None:
                self._sandbox = Sandbox(self.sandbox_config)
            self._sandbox.reset(seed=100)
        self._steps, self._done = 0, False
        self._last_obs = render_prompt(task)
        return self._last_obs, self._info(True)

    def _info(self, valid: bool, error: str | None = None, fault: str | None = None, restarted: bool = False) -> dict:
        info = {
            "task": self._task.public(),
            "instruction": self._task.instruction,
            "step": self._steps,
            "action_valid": valid,
            "allowed_actions": None,  # any code or tool call may be submitted
            "progress": self._progress(),
        }
        if error is not None:
            info["error"] = error
        if fault is not None:
            info["fault"] = fault
        if restarted:
            info["interpreter_restarted"] = True
        return info

    def _handler(self, app: str, api: str, kwargs: dict[str, Any]) -> tuple[int, Any]:
        refused = self._guard.check(kwargs)
        if refused is not None:
            return refused
        for name, value in kwargs.items():  # the databases store 64-bit integers: wider ones are a client error
            wide = _wide_int(value)
            if wide is not None:
                return 422, {
                    "message": f"Parameter '{name}' holds an integer of {wide.bit_length()} bits; integers must be "
                    f"64-bit integers (between {INT64_MIN} and {INT64_MAX})."
                }
        self.num_calls += 1
        try:
            reply = self.server.request("call", app=app, api=api, kwargs=kwargs)
        except AppsServerError as e:
            return 500, {"message": f"The app server failed: {e}"}
        return self._guard.reply(reply["status"], reply["body"])

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._task is None:
            raise RuntimeError("call reset() before step()")
        if action is None:
            raise TypeError("step() needs an action (a string), got None")
        if self._done:
            return (
                "The episode has ended; call reset().",
                0.0,
                True,
                False,
                self._info(False, "step after the episode ended"),
            )
        self._steps += 1
        restarted, fault = False, None
        if not isinstance(action, str):
            obs, valid, error = (
                f"Invalid action: expected a string, got {type(action).__name__}.",
                False,
                "action is not a string",
            )
        elif len(action) > self.action_space.max_length:
            error = f"the action has {len(action)} characters (at most {self.action_space.max_length})"
            obs, valid = f"Invalid action: {error}.", False
        elif self.action_mode == "code":
            obs, valid, error, fault, restarted = self._step_code(action)
        else:
            obs, valid, error = self._step_tool(action)
        obs = printable(obs, self._obs_limit)
        terminated = self._task_completed()
        truncated = not terminated and self._steps >= self.max_steps
        info = self._info(valid, error and printable(error, 300), fault, restarted)
        reward = 0.0
        if terminated or truncated:
            self._done = True
            ev = self.evaluate()
            info.update(success=ev["success"], score=float(ev["success"]), evaluation=ev)
            reward = float(ev["success"])
        self._last_obs = obs
        return obs, reward, terminated, truncated, info

    def _step_code(self, action: str) -> tuple[str, bool, str | None, str | None, bool]:
        fenced = _FENCE.findall(action)
        code = "\n".join(fenced) if fenced else action
        self.server.request("begin")
        result = self._sandbox.execute(code, self._handler)
        if not result.ok:
            self.server.request("rollback")  # a contained fault leaves the world as it was before the step
        out = result.output
        bad = (
            out == "No code available to execute."
            or out.startswith("Execution failed. Traceback:\nSyntax error")
            or not result.ok
        )
        err = (f"sandbox fault: {result.fault}" if result.fault else out.splitlines()[-1][:300]) if bad else None
        return out, not bad, err, result.fault, result.restarted

    def _step_tool(self, action: str) -> tuple[str, bool, str | None]:
        try:
            app, api, kwargs = parse_tool_call(action)
        except ValueError as e:
            return f"Invalid tool call: {e}", False, str(e)
        status, body = self._handler(app, api, kwargs)
        text = json.dumps(body, indent=2 if len(json.dumps(body)) >= 100 else None)
        if len(text) > self.sandbox_config.max_output:
            extra = len(text) - self.sandbox_config.max_output
            text = text[: self.sandbox_config.max_output] + f"\n...[output truncated: {extra} more characters]"
        return (text if status == 200 else f"Response status code is {status}:\n{text}"), True, None

    # -- evaluation -----------------------------------------------------------------------------------
    evaluation_report = staticmethod(evaluation_report)  # TGC/SGC for `evolver eval`

    def diffs(self) -> list[TableDiff]:
        """Every table the episode changed so far (``supervisor.tasks`` included)."""
        return _diffs(self.server.request("diff")["diffs"])

    def _task_completed(self) -> bool:
        return self.server.request("task_state")["status"] is not None

    def _answer(self) -> Any:
        raw = self.server.request("task_state")["answer"]
        try:
            return None if raw in (None, "") else json.loads(raw)
        except ValueError:
            return raw

    def _progress(self) -> float:
        """Privileged: the share of the task's do-nothing-failing tests that pass now."""
        tests = [t for t in self._task.goal["tests"] if t.get("label") == "no_op_fail"]
        if not tests:
            return 1.0
        ev = evaluate_diff(tests, self.diffs(), self._answer())
        return len(ev.passes) / len(tests)

    def evaluate(self) -> dict[str, Any]:
        """The task's tests on the current state (AppWorld's ``world.evaluate()``)."""
        return evaluate_diff(self._task.goal["tests"], self.diffs(), self._answer(), self._task.difficulty).to_dict()

    # -- helpers ---------------------------------------------------------------------------------------
    def oracle(self, task: Task | dict | None = None) -> list[str]:
        """The reference code cells of ``task`` (default: the current one)."""
        if self.action_mode != "code":
            raise NotImplementedError("oracle() returns code cells; use action_mode='code'")
        task = Task.from_dict(task) if task is not None else self._task
        return list(task.reference)

    def api_catalog(self) -> dict[str, list[dict[str, Any]]]:
        """Every API the apps serve (``app -> [{name, method, path, parameters}]``), from the package's api docs."""
        return self.server.request("apis")["apis"]

    def profile(self) -> dict[str, Any]:
        """Operations (every API with its description from the api docs), scenarios, splits, the apps each
        split holds out (``held_out_apps``), sandbox layers."""
        cat = self.api_catalog()
        out = {
            "env_id": ENV_ID,
            "operations": {app: {a["name"]: a["description"] for a in apis} for app, apis in cat.items()},
            "scenarios": {name: {"apps": list(t.apps), "difficulty": t.difficulty} for name, t in TEMPLATES.items()},
            "splits": {s: len(build_tasks(self.world, s, self.split_scheme)) for s in SPLITS},
            "split_scheme": self.split_scheme,
            "held_out_apps": held_out_apps(self.world, self.split_scheme),
        }
        if self.action_mode == "code":
            if self._sandbox is None:
                self._sandbox = Sandbox(self.sandbox_config)
            out["sandbox"] = self._sandbox.profile()
        return out

    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI-style function schemas of every API, from the package's api docs."""
        json_types = {"string", "integer", "number", "boolean", "array", "object"}
        out = []
        for app, apis in self.api_catalog().items():
            for a in apis:
                props = {
                    p["name"]: {
                        **({"type": p["type"]} if p["type"] in json_types else {}),
                        "description": p["description"],
                    }
                    for p in a["parameters"]
                }
                out.append(
                    {
                        "type": "function",
                        "function": {
                            "name": f"{app}__{a['name']}",
                            "description": a["description"],
                            "parameters": {
                                "type": "object",
                                "properties": props,
                                "required": [p["name"] for p in a["parameters"] if p["required"]],
                            },
                        },
                    }
                )
        return out

    def hindsight_task(self, trajectory: Trajectory) -> Task | None:
        """A checkable task stating the changes ``trajectory`` made (None when it changed nothing)."""
        if self._hindsight_env is None:
            self._hindsight_env = AppWorldAppsEnv(
                split=self.split, seed=self.seed, max_steps=10_000, python=self.python
            )
        env = self._hindsight_env
        env.reset(options={"task": trajectory.task})
        cells = []
        for act in trajectory.actions:
            if env._done:
                break
            _, _, _, _, info = env.step(act)
            if info["action_valid"]:
                cells.append(act)
        diffs = [d for d in env.diffs() if d.name not in _IGNORED]
        if not diffs:
            return None
        tests, parts = [], []
        for d in diffs:
            for i in d.added:
                row = {
                    k: v
                    for k, v in d.end_rows[i].items()
                    if k not in ("id", "created_at", "updated_at") and not isinstance(v, (list, dict))
                }
                tests.append(
                    {
                        "kind": "added",
                        "app": d.app,
                        "table": d.table,
                        "where": row,
                        "count": 1,
                        "requirement": f"a {d.table} row added",
                        "label": "no_op_fail",
                    }
                )
            for i, cols in d.updated.items():
                fields = {c: d.end_rows[i][c] for c in cols if c not in ("updated_at",)}
                if fields:
                    tests.append(
                        {
                            "kind": "updated",
                            "app": d.app,
                            "table": d.table,
                            "id": i,
                            "fields": fields,
                            "requirement": f"{d.table} {i} updated",
                            "label": "no_op_fail",
                        }
                    )
            if d.removed:
                tests.append(
                    {
                        "kind": "removed",
                        "app": d.app,
                        "table": d.table,
                        "ids": d.removed,
                        "requirement": f"{d.table} {d.removed} removed",
                        "label": "no_op_fail",
                    }
                )
            parts.append(
                f"{len(d.added)} added, {len(d.updated)} changed, {len(d.removed)} removed in {d.app} {d.table}"
            )
        tests.append(no_collateral(*(d.name for d in diffs)))
        if not env._done:
            cells.append("apis.supervisor.complete_task()")
        parent = trajectory.task if isinstance(trajectory.task, Task) else Task.from_dict(trajectory.task)
        return parent.derive(
            instruction="Make these changes: " + "; ".join(parts) + ".",
            goal={**parent.goal, "tests": tests, "scenario": f"hindsight:{parent.goal.get('scenario')}"},
            reference=cells,
            proposer="hindsight",
        )

    # -- the leakage interface (``wrappers.questioning.LeakageGuard``) ---------------------------------
    def split_unit(self, task: Task | dict) -> str | None:
        """What the split scheme holds out whole that ``task`` lies in: its scenario template under
        ``scenario``; under ``app``, a held-out app it touches (``app:<name>``, dev's, test_normal's or
        ``gmail``), None when it touches only train apps; None under ``goal``."""
        task = Task.from_dict(task)
        if self.split_scheme == "scenario":
            return task.goal.get("scenario")
        if self.split_scheme == "app":
            held = set().union(*held_out_apps(self.world, "app").values()) & task_apps(task)
            return f"app:{min(held)}" if held else None
        return None

    def target_key(self, task: Task | dict) -> str | None:
        """What ``task`` checks: its world seed, setup calls and tests, less their wording."""
        task = Task.from_dict(task)
        if "tests" not in task.goal:
            return None
        tests = sorted(
            json.dumps({k: v for k, v in t.items() if k not in ("requirement", "label")}, sort_keys=True, default=str)
            for t in task.goal["tests"]
        )
        return json.dumps([task.seed, task.goal.get("setup", []), tests], sort_keys=True, default=str)

    def target_buckets(self, task: Task | dict, as_solver: bool = False) -> set[str]:
        """Keys ``solves(solver, task)`` needs both to share: the apps a task requires changes in (``app:<name>``)
        and ``"answer"`` when it checks one; as a solver, the apps its reference logs in to, and ``"answer"``
        when it may hand one over."""
        task = Task.from_dict(task)
        if not as_solver:
            tests = task.goal.get("tests", [])
            keys = {f"app:{t['app']}" for t in tests if t.get("kind") not in ("answer", "no_collateral")}
            return keys | ({"answer"} if any(t.get("kind") == "answer" for t in tests) else set())
        code = "\n".join(map(str, task.reference))
        keys = {f"app:{app}" for app in re.findall(r"apis\.(\w+)\.login\(", code)}
        return keys | ({"answer"} if re.search(r"complete_task\(\s*answer\s*=", code) else set())

    def solves(self, solver: Task | dict, task: Task | dict) -> bool:
        """Whether ``solver``'s reference cells, run from ``task``'s start state, pass ``task``'s tests."""
        solver, task = Task.from_dict(solver), Task.from_dict(task)
        if not solver.reference or "tests" not in task.goal:
            return False
        if self._hindsight_env is None:
            self._hindsight_env = AppWorldAppsEnv(
                split=self.split, seed=self.seed, max_steps=10_000, python=self.python
            )
        env = self._hindsight_env
        env.reset(options={"task": task})
        for cell in solver.reference:
            if env._done:
                break
            env.step(str(cell))
        return bool(env.evaluate()["success"])

    def render(self) -> str | None:
        return self._last_obs if self.render_mode == "ansi" else None

    def close(self) -> None:
        for attr in ("_sandbox", "_server", "_hindsight_env"):
            obj = getattr(self, attr)
            if obj is not None:
                obj.close()
                setattr(self, attr, None)
        super().close()
