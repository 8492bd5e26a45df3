"""``evolver/AppWorld-v0``: a world of apps the agent drives by writing Python, judged on state.

* ``AppWorldEnv`` - code-as-action (or JSON tool calls) against ``apis``, in a sandboxed worker,
  evaluated by unit tests over the database diff, as AppWorld does.
"""

from __future__ import annotations

import json
import re
from typing import Any

import gymnasium as gym

from evolver_gym.core.seeding import derive_seed
from evolver_gym.core.spaces import UnicodeText
from evolver_gym.core.task import Task
from evolver_gym.core.trajectory import Trajectory

from . import apps as _apps  # noqa: F401  (registers every API)
from .apis import REGISTRY, AppContext, dispatch
from .db import SCHEMAS, AppDatabases, diff_databases
from .evaluation import evaluate_tests, evaluation_report
from .guard import ApiLimits, CallGuard, printable
from .hindsight import hindsight_from_diff
from .sandbox import Sandbox, SandboxConfig
from .tasks import ENV_ID, SPLIT_SCHEMES, SPLITS, build_tasks, split_table, start_state, world_bundle
from .tools import parse_tool_call, tool_schemas

__all__ = ["AppWorldEnv", "render_prompt"]

_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
_CHANGE_KINDS = ("added", "updated", "removed")
_UNCHECKED_WRITES = ("login", "logout", "complete_task")
_API_CALL = re.compile(r"apis\.(\w+)\.(\w+)\s*\(")
# A cell that may hand over an answer: ``complete_task(`` followed by anything but ``)`` or ``status=``.
_ANSWERS = re.compile(r"complete_task\(\s*(?!\)|status\s*=)")


def render_prompt(task: Task) -> str:
    """The first observation: who the user is, how to act, and the task."""
    sup = task.goal["supervisor"]
    return (
        f"You are an assistant acting on behalf of {sup['first_name']} {sup['last_name']} "
        f"(email {sup['email']}, phone {sup['phone_number']}). You act by writing Python code that calls app APIs "
        "through the `apis` object, e.g. `apis.api_docs.show_app_descriptions()`, "
        "`apis.api_docs.show_api_descriptions(app_name=...)`, `apis.api_docs.show_api_doc(app_name=..., "
        "api_name=...)`. Variables persist between steps; print what you want to see. Account passwords are in "
        "`apis.supervisor.show_account_passwords()`. When you are done, call "
        "`apis.supervisor.complete_task(answer=...)` (answer only for questions; status='fail' to give up).\n"
        f"Task: {task.instruction}"
    )


class AppWorldEnv(gym.Env[str, str]):
    """AppWorld-style apps (phone, music, payments, notes, todo, mail) driven by code, judged by state tests.

    ## Description
    A seeded world of people with accounts in six user apps plus ``api_docs`` and ``supervisor``
    (118 APIs). Each task asks for an answer and/or changes to the world; it is judged by tests over
    the difference between the start and end databases, including no-collateral-damage checks.

    ## Action Space
    ``action_mode="code"``: a Python cell (markdown fences are stripped) run in a persistent namespace
    with ``apis``. ``action_mode="tool"``: one JSON tool call ``{"name": "app__api", "arguments": {...}}``.

    ## Observation Space
    Text. Code cells give printed output, ``"Execution successful."``, ``"Execution failed.
    Traceback:\\n..."`` (long output truncated); tool calls give the JSON response or
    ``"Response status code is N:\\n{...}"``. Every observation is capped and has its non-printable
    characters escaped, so it always lies in ``observation_space``.

    ## Sandbox
    Each episode's cells run in a fresh interpreter forked from a clean zygote and confined by the
    OS (unprivileged uid, no network, no filesystem, seccomp, resource limits; ``profile()["sandbox"]``
    lists the active layers, ``docs/security.md`` the threat model). A timeout or crash kills the
    interpreter: the step is reported once (``info["fault"]``), its world changes are rolled back,
    nothing is re-run, and the next cell runs in a fresh interpreter whose observation says that
    earlier variables are gone (``info["interpreter_restarted"]``).

    ## Starting State
    The base world of ``seed`` plus the task's setup rows; time frozen at the task's date-time.

    ## Rewards
    ``1.0`` on the final step if every test passes, else ``0.0`` (``info["evaluation"]["pass_share"]``
    is the dense AgentEvolver variant).

    ## Episode End
    Terminated when ``apis.supervisor.complete_task`` is called; truncated after ``max_steps``.

    ## Information
    Every step: ``task`` (public), ``instruction``, ``step``, ``action_valid``, ``allowed_actions``
    (always ``None``: any code may be submitted), ``error`` (when invalid), ``progress`` (privileged:
    share of the do-nothing-failing tests now passing),
    ``fault`` (sandbox fault, if any: ``timeout``, ``crash``, ``memory``, ``recursion``, ``limit``,
    ``unsafe``), ``interpreter_restarted`` (when the cell ran in a fresh interpreter). At the end:
    ``success``, ``score`` (``1.0``/``0.0``),
    ``evaluation`` (passes, failures, pass_share, difficulty, ...).

    ## Arguments
    ``split`` (``train``/``dev``/``test_normal``/``test_challenge``), ``split_scheme`` (``goal``: dev and
    test_normal reuse the train scenario templates with other parameters; ``scenario``: whole templates
    held out of train, drawn from ``seed``; see docs/splits.md), ``seed`` (world seed),
    ``max_steps`` (40), ``action_mode`` (``code``/``tool``), ``timeout_s``, ``cpu_s``, ``memory_mb``,
    ``max_output_chars``, ``api_limits`` (:class:`~evolver_gym.appworld.guard.ApiLimits`: sizes of API
    arguments and replies, and the per-episode argument budget, enforced by the host in both modes).

    ## Version History
    * v0: first version.

    Example:
        >>> env = AppWorldEnv(split="train")
        >>> obs, info = env.reset(options={"split": "train", "index": 0})
        >>> obs, r, term, trunc, info = env.step("print(apis.api_docs.show_api_descriptions(app_name='notes')[0])")
        >>> info["action_valid"], obs.startswith("{")
        (True, True)
        >>> env.close()
    """

    metadata = {"render_modes": ["ansi"]}
    # ``solves`` replays a reference in the sandbox per pair: the synthesis leakage guard skips it by default.
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
    ):
        if split not in SPLITS:
            raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
        if split_scheme not in SPLIT_SCHEMES:
            raise ValueError(f"split_scheme must be one of {SPLIT_SCHEMES}, got {split_scheme!r}")
        if action_mode not in ("code", "tool"):
            raise ValueError(f"action_mode must be 'code' or 'tool', got {action_mode!r}")
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.split, self.seed, self.max_steps, self.action_mode = split, int(seed), max_steps, action_mode
        self.render_mode, self.split_scheme = render_mode, split_scheme
        self.sandbox_config = SandboxConfig(
            wall_s=float(timeout_s),
            cpu_s=float(cpu_s or timeout_s),
            memory_mb=int(memory_mb),
            max_output=int(max_output_chars),
        )
        self.api_limits = api_limits or ApiLimits()
        self.sandbox_config.max_request_bytes = self.api_limits.max_request_bytes
        self._guard = CallGuard(self.api_limits)
        example = (
            "print(apis.api_docs.show_app_descriptions())"
            if action_mode == "code"
            else '{"name": "api_docs__show_app_descriptions", "arguments": {}}'
        )
        self.action_space = UnicodeText(200_000, examples=(example,))
        self.observation_space = UnicodeText(1_000_000)
        # room for a traceback and notices around the capped output, and never past the space
        self._obs_limit = min(self.sandbox_config.max_output + 4_000, self.observation_space.max_length)
        self._sandbox: Sandbox | None = None
        self._dbs: AppDatabases | None = None
        self._start: AppDatabases | None = None
        self._ctx: AppContext | None = None
        self._task: Task | None = None
        self._steps = 0
        self._done = False
        self._last_obs = ""
        self._progress_cache: tuple[tuple[int, ...], float] | None = None
        self._hindsight_env: AppWorldEnv | None = None
        self._solves_cache: dict[tuple[Any, ...], bool] = {}

    # -- task lookup ---------------------------------------------------------------------------
    def tasks(self, split: str | None = None) -> list[Task]:
        """Every task of ``split`` (default: this env's split) in this env's world."""
        return build_tasks(split or self.split, self.seed, self.split_scheme)

    def _find(self, task_id: str) -> Task:
        # Ids are the same task in every scheme; this env's scheme is searched first.
        for scheme in sorted(SPLIT_SCHEMES, key=lambda s: s != self.split_scheme):
            for split in SPLITS:
                for t in build_tasks(split, self.seed, scheme):
                    if t.task_id == task_id:
                        return t
        raise ValueError(f"unknown AppWorld task_id {task_id!r} for world seed {self.seed}")

    def _choose(self, options: dict[str, Any]) -> Task:
        if "task" in options:
            task = Task.from_dict(options["task"])
            if "tests" not in task.goal:
                raise ValueError(f"task {task.task_id!r} has no goal['tests']; it is not an AppWorld task")
            return task
        if "task_id" in options:
            return self._find(str(options["task_id"]))
        tasks = self.tasks(options.get("split", self.split))
        if "index" in options:
            index = int(options["index"])
            if not 0 <= index < len(tasks):
                raise ValueError(f"index must be in [0, {len(tasks)}), got {index!r}")
            return tasks[index]
        return tasks[int(self.np_random.integers(len(tasks)))]

    # -- gym API -------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        task = self._choose(dict(options or {}))
        if task.seed != self.seed:
            world_bundle(task.seed)  # a task from another world seed still starts from its own world
        self._task = task
        self._dbs = start_state(task, into=self._dbs)
        self._dbs.insert(
            "supervisor",
            "active_task",
            {"task_id": task.task_id, "instruction": task.instruction, "status": "active", "answer": None},
        )
        self._start = self._dbs.copy(into=self._start)
        self._baseline = (
            self._dbs.change_counter()
        )  # apps whose counter moves since are the only ones to diff
        world, _ = world_bundle(task.seed)
        from datetime import datetime

        now = datetime.fromisoformat(task.goal.get("datetime", world.now.isoformat()))
        self._ctx = AppContext(
            self._dbs, now, supervisor_id=1, token_seed=derive_seed(task.seed, task.task_id)
        )
        self._guard.reset()
        if self.action_mode == "code":
            if self._sandbox is None:
                self._sandbox = Sandbox(self.sandbox_config)
            self._sandbox.reset(seed=100)  # AppWorld's fixed random_seed; the hash seed follows it
        self._steps, self._done, self._progress_cache = 0, False, None
        self._last_obs = render_prompt(task)
        return self._last_obs, self._info(action_valid=True)

    def _info(
        self, action_valid: bool, error: str | None = None, fault: str | None = None, restarted: bool = False
    ) -> dict[str, Any]:
        info = {
            "task": self._task.public(),
            "instruction": self._task.instruction,
            "step": self._steps,
            "action_valid": action_valid,
            "allowed_actions": None,  # any code may be submitted
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
        return self._guard.reply(*dispatch(self._ctx, app, api, kwargs))

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
                self._info(False, error="step after the episode ended"),
            )
        self._steps += 1
        restarted = False
        if not isinstance(action, str):
            obs, valid, error, fault = (
                f"Invalid action: expected a string, got {type(action).__name__}.",
                False,
                f"action is not a string: {type(action).__name__}",
                None,
            )
        elif len(action) > self.action_space.max_length:
            error = f"the action has {len(action)} characters (at most {self.action_space.max_length})"
            obs, valid, fault = f"Invalid action: {error}.", False, None
        elif self.action_mode == "code":
            obs, valid, error, fault, restarted = self._step_code(action)
        else:
            obs, valid, error, fault = self._step_tool(action)
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
        self._dbs.begin()
        result = self._sandbox.execute(code, self._handler)
        if result.ok:
            self._dbs.commit()
        else:
            self._dbs.rollback()  # a contained fault leaves the world as it was before the step
        out = result.output
        bad = (
            out == "No code available to execute."
            or out.startswith("Execution failed. Traceback:\nSyntax error")
            or not result.ok
        )
        err = None
        if bad:
            err = f"sandbox fault: {result.fault}" if result.fault else out.splitlines()[-1][:300]
        return out, not bad, err, result.fault, result.restarted

    def _step_tool(self, action: str) -> tuple[str, bool, str | None, str | None]:
        try:
            app, api, kwargs = parse_tool_call(action)
        except ValueError as e:
            return f"Invalid tool call: {e}", False, str(e), None
        self._dbs.begin()
        status, body = self._handler(app, api, kwargs)
        self._dbs.commit()
        text = json.dumps(body, indent=2 if len(json.dumps(body)) >= 100 else None)
        max_out = self.sandbox_config.max_output
        if len(text) > max_out:
            text = text[:max_out] + f"\n...[output truncated: {len(text) - max_out} more characters]"
        if status != 200:
            return f"Response status code is {status}:\n{text}", True, None, None
        return text, True, None, None

    # -- evaluation ----------------------------------------------------------------------------
    def _task_completed(self) -> bool:
        rows = self._dbs.query("supervisor", "SELECT status FROM active_task ORDER BY id DESC LIMIT 1")
        return bool(rows) and rows[0]["status"] != "active"

    def _answer(self) -> Any:
        rows = self._dbs.query("supervisor", "SELECT answer FROM active_task ORDER BY id DESC LIMIT 1")
        raw = rows[0]["answer"] if rows else None
        return None if raw is None else json.loads(raw)

    def evaluate(self) -> dict[str, Any]:
        """Run the task's tests on the current state (AppWorld's ``world.evaluate()``)."""
        ev = evaluate_tests(
            self._task.goal["tests"],
            self._start,
            self._dbs,
            answer=self._answer(),
            difficulty=self._task.difficulty,
        )
        return ev.to_dict()

    def _progress(self) -> float:
        if self._dbs is None:
            return 0.0
        counter = self._dbs.change_counter()
        if self._progress_cache and self._progress_cache[0] == counter:
            return self._progress_cache[1]
        tests = [t for t in self._task.goal["tests"] if t.get("label") == "no_op_fail"]
        changed = [app for app, a, b in zip(self._dbs.conns, self._baseline, counter) if a != b]
        ev = evaluate_tests(
            tests,
            self._start,
            self._dbs,
            answer=self._answer(),
            diffs=diff_databases(self._start, self._dbs, apps=changed),
        )
        value = len(ev.passes) / len(tests) if tests else 1.0
        self._progress_cache = (counter, value)
        return value

    # -- helpers for proposers, attribution and tool-calling models ----------------------------------
    evaluation_report = staticmethod(evaluation_report)  # TGC/SGC for `evolver eval`

    def oracle(self, task: Task | dict | None = None) -> list[str]:
        """The reference solution: code cells (code mode) that solve ``task`` (default: the current one)."""
        task = Task.from_dict(task) if task is not None else self._task
        if self.action_mode != "code":
            raise NotImplementedError("oracle() returns code cells; use action_mode='code'")
        return list(task.reference)

    def profile(self) -> dict[str, Any]:
        """What a task proposer needs to know: entities (tables), attributes (columns), operations (APIs).

        ``"sandbox"`` (code mode) lists the OS layers of the code sandbox: ``{"layers": {name: "on" |
        "off: reason"}, "active": [...]}``.
        """
        out = {
            "env_id": ENV_ID,
            "entities": {
                f"{app}.{t}": [c for c, _ in cols]
                for app, tables in SCHEMAS.items()
                for t, cols in tables.items()
            },
            "attributes": {app: sorted(tables) for app, tables in SCHEMAS.items()},
            "operations": {
                app: {n: s.description for n, s in specs.items()} for app, specs in REGISTRY.items()
            },
            "splits": {s: len(v) * 3 for s, v in split_table(self.split_scheme, self.seed).items()},
            "split_scheme": self.split_scheme,
        }
        if self.action_mode == "code":
            if self._sandbox is None:
                self._sandbox = Sandbox(self.sandbox_config)
            out["sandbox"] = self._sandbox.profile()
        return out

    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI-style function schemas of every API, for ``action_mode="tool"``."""
        return tool_schemas()

    def hindsight_task(self, trajectory: Trajectory) -> Task | None:
        """A checkable task stating the world changes ``trajectory`` made (None when it changed nothing)."""
        if self._hindsight_env is None:
            self._hindsight_env = AppWorldEnv(
                split=self.split, seed=self.seed, max_steps=10_000, timeout_s=self.sandbox_config.wall_s
            )
        env = self._hindsight_env
        env.reset(options={"task": trajectory.task})
        cells = []  # the reference: the cells that ran cleanly (failed ones changed nothing), then done
        for act in trajectory.actions:
            if env._done:
                break
            _, _, _, _, info = env.step(act)
            if info["action_valid"]:
                cells.append(act)
        diffs = [d for d in diff_databases(env._start, env._dbs) if d.name != "supervisor.active_task"]
        if not env._task_completed():
            cells.append("apis.supervisor.complete_task(status='success')")
        return hindsight_from_diff(trajectory.task, diffs, env._start, reference=cells)

    # -- the leakage interface (``wrappers.questioning.LeakageGuard``) -------------------------------
    def split_unit(self, task: Task | dict) -> str | None:
        """The scenario template of ``task`` under the ``scenario`` scheme (held out whole), else None."""
        task = Task.from_dict(task)
        return task.goal.get("scenario") if self.split_scheme == "scenario" else None

    def target_key(self, task: Task | dict) -> str | None:
        """What ``task`` checks: its start state (setup rows) and its tests, less their wording."""
        task = Task.from_dict(task)
        if "tests" not in task.goal:
            return None
        tests = sorted(json.dumps({k: v for k, v in t.items() if k not in ("requirement", "label")},
                                  sort_keys=True, default=str) for t in task.goal["tests"])
        return json.dumps([task.seed, task.goal.get("setup", []), tests], sort_keys=True, default=str)

    def target_buckets(self, task: Task | dict, as_solver: bool = False) -> set[str]:
        """Keys that ``solves(solver, task)`` needs ``target_buckets(solver, True)`` and
        ``target_buckets(task)`` to share.

        As a task: the apps its tests require changes in, and ``"answer"`` when it checks an answer.
        As a solver: the apps whose writing APIs its reference calls (``apis.<app>.<api>(`` with a
        method other than GET, except ``login``, ``logout`` and ``complete_task``, which change nothing
        the tests check), and ``"answer"`` when it may hand over one. A reference solves a task only
        by writing an app the task requires changes in, or by answering when it checks an answer.
        (Code that reaches APIs without naming them, e.g. through ``getattr``, is not seen.)
        """
        task = Task.from_dict(task)
        if not as_solver:
            tests = task.goal.get("tests", [])
            keys = {f"app:{t['app']}" for t in tests if t.get("kind") in _CHANGE_KINDS}
            return keys | ({"answer"} if any(t.get("kind") == "answer" for t in tests) else set())
        keys = set()
        for cell in map(str, task.reference):
            for app, api in _API_CALL.findall(cell):
                spec = REGISTRY.get(app, {}).get(api)
                if spec is not None and spec.method != "GET" and api not in _UNCHECKED_WRITES:
                    keys.add(f"app:{app}")
            if _ANSWERS.search(cell):
                keys.add("answer")
        return keys

    def solves(self, solver: Task | dict, task: Task | dict) -> bool:
        """Whether ``solver``'s reference cells, run from ``task``'s start state, pass ``task``'s tests."""
        solver, task = Task.from_dict(solver), Task.from_dict(task)
        if not solver.reference or "tests" not in task.goal:
            return False
        if any(t.get("kind") == "answer" for t in task.goal["tests"]) and not any(
                _ANSWERS.search(str(cell)) for cell in solver.reference):
            return False  # an answer is checked and the reference never gives one
        key = (tuple(map(str, solver.reference)), self.target_key(task))
        if key not in self._solves_cache:
            if self._hindsight_env is None:
                self._hindsight_env = AppWorldEnv(split=self.split, seed=self.seed, max_steps=10_000,
                                                  timeout_s=self.sandbox_config.wall_s)
            env = self._hindsight_env
            env.reset(options={"task": task})
            for cell in solver.reference:
                if env._done:
                    break
                env.step(str(cell))
            self._solves_cache[key] = bool(env.evaluate()["success"])
        return self._solves_cache[key]

    def render(self) -> str | None:
        return self._last_obs if self.render_mode == "ansi" else None

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
        if self._hindsight_env is not None:
            self._hindsight_env.close()
            self._hindsight_env = None
        super().close()
