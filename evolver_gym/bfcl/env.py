"""``evolver/BFCL-v0``: BFCL-v3 multi-turn function calling, on the data, classes and checker of ``bfcl-eval``.

* ``BFCLEnv`` - one entry per episode: user turns, Python-style calls run on the package's simulated API
  classes, hand-backs that end a turn, the package's multi-turn checker as the reward.
* ``render_system_prompt`` - BFCL's default prompting system prompt with the given function docs.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym

from evolver_gym.core.spaces import UnicodeText
from evolver_gym.core.task import Task
from evolver_gym.core.trajectory import Trajectory

from .package import CATEGORIES, checker, decoder, step_limit
from .parsing import BLOCKED_PREFIX, ParsedAction, parse_action
from .runtime import CallTimeout, LiveEntry, call_deadline, run_checker, unique_model_name
from .tasks import (
    ENV_ID,
    HANDBACK,
    SPLIT_SCHEMES,
    SPLITS,
    build_tasks,
    check_categories,
    held_out_classes,
    hindsight_entry,
    keyword_call,
    oracle_actions,
    split_of,
    split_table,
    task_entry,
)

__all__ = ["BFCLEnv", "check_prompt_format", "default_prompt_format", "render_system_prompt"]

_REFUSED_RESULT = ("Error during execution: this call is not allowed (call only the listed functions, "
                   "with literal arguments).")


def default_prompt_format() -> str:
    """BFCL's default prompt format: Python calls, no tags, JSON docs, plaintext, classic style."""
    return __import__("bfcl_eval.constants.default_prompts", fromlist=["x"]).DEFAULT_SYSTEM_PROMPT_FORMAT


def check_prompt_format(prompt_format: str) -> str:
    """``prompt_format`` if BFCL parses it and it asks for Python calls without tags (what the env decodes)."""
    try:
        ret_fmt, tag, doc_fmt, prompt_fmt, style = decoder().parse_prompt_variation_params(str(prompt_format))
        decoder().formulate_system_prompt(str(prompt_format), [])
    except Exception as exc:
        raise ValueError(f"prompt_format must be a BFCL format string such as {default_prompt_format()!r}, "
                         f"got {prompt_format!r} ({exc})") from None
    if ret_fmt != "python" or tag:
        raise ValueError(f"prompt_format must ask for Python calls without tags (ret_fmt=python&"
                         f"tool_call_tag=False): the env decodes those; got {prompt_format!r}")
    return str(prompt_format)


def render_system_prompt(functions: list[dict[str, Any]], prompt_format: str | None = None) -> str:
    """BFCL's system prompt for ``functions`` (default format: Python calls, JSON function docs, plaintext,
    classic style; ``func_doc_fmt=python`` gives docs about 2.4 times shorter)."""
    return decoder().formulate_system_prompt(prompt_format or default_prompt_format(), functions)


def _printable(text: str, limit: int) -> str:
    if not text.replace("\n", "").replace("\t", "").isprintable():
        text = "".join(c if c.isprintable() or c in "\n\t" else c.encode("unicode_escape").decode("ascii")
                       for c in text)
    if len(text) > limit:
        note = f"\n...[observation truncated: {len(text)} characters]"
        text = text[: limit - len(note)] + note
    return text


def _failed(result: str) -> bool:
    if result.startswith("Error during execution"):
        return True
    try:
        value = json.loads(result)
    except ValueError:
        return False
    return isinstance(value, dict) and "error" in value


class BFCLEnv(gym.Env[str, str]):
    """BFCL-v3 multi-turn (base, miss_func, miss_param, long_context): 800 entries of ``bfcl-eval``.

    ## Description
    Each entry is a conversation of 1-8 user turns over one or two of eight simulated APIs (a file system,
    a car, a trading bot, travel booking, messaging, a social network, support tickets, maths), from the
    entry's initial state. Within a turn the model may call functions over several steps; a reply
    without calls hands the turn back and the next user turn comes. ``miss_param`` turns lack a needed
    value (the right reply is a question, no call); in ``miss_func`` a function is withheld until the
    turn that reveals it.

    ## Action Space
    Text: BFCL's prompting format, ``[func_name(param=value, ...), ...]``, decoded by the package's own
    ``default_decode_execute_prompting`` (keyword arguments only, as in BFCL). Any reply that decodes to
    no call (prose, a question, an empty list) ends the turn. Model output never runs as code: see
    :mod:`evolver_gym.bfcl.parsing` for what is refused.

    ## Observation Space
    Text. On reset: BFCL's system prompt with the function docs of the entry's classes (a ``miss_func``
    function left out), then the first user turn. After a step with calls: the results, in BFCL's
    prompting format (``repr`` of ``[{"role": "tool", "name": call, "content": result}, ...]``). After a
    hand-back: the next user turn (with the revealed docs on a ``miss_func`` turn, in BFCL's words).

    ## Rewards
    On the final step, ``1.0`` if the package's ``multi_turn_checker`` passes the episode's decoded calls
    (every turn's end state equals the ground truth's, and its results include the ground truth's), else
    ``0.0``.

    ## Episode End
    Terminated after the hand-back of the last turn. Truncated when a turn takes more than BFCL's step cap
    of calling steps (20: the 21st is forced to quit; as in BFCL, the episode is then scored on the turns
    played, which fails as ``force_terminated`` unless it was the last turn), or when a step's calls run
    past ``step_timeout_s`` (reward 0, ``info["fault"] = "timeout"``).

    ## Information
    Every step: ``task`` (public), ``instruction``, ``step``, ``turn`` (the turn now being played),
    ``turn_step`` (calling steps in it), ``action_valid``, ``allowed_actions`` (always ``None``: any text is
    a reply), ``handback`` (the reply ended a turn), ``handback_reason``, ``calls`` and ``results`` (what
    ran), ``error`` (invalid or refused replies),
    ``progress`` (privileged: the share of all turns whose end state matched the ground truth's; the turn
    being played counts while the live state equals its ground-truth end state, so the calling step that
    completes a turn's changes is the one whose progress rises). At the end: ``success``, ``score``,
    ``evaluation`` (``valid``, ``error_type``, ``error_message``, ``turn_state_passed``).

    ## Arguments
    ``split`` (``train``/``dev``/``test``), ``categories`` (any of the four), ``split_scheme`` (``entry``:
    held-out scenarios; ``class``: held-out API classes), ``seed`` (the split draw),
    ``max_steps_per_turn`` (BFCL's 20), ``step_timeout_s`` (wall time for one step's calls),
    ``max_observation_chars``, ``prompt_format`` (a BFCL format string with Python calls and no tags, e.g.
    ``ret_fmt=python&tool_call_tag=False&func_doc_fmt=python&prompt_fmt=plaintext&style=classic`` for
    docs about 2.4 times shorter; default: BFCL's default, JSON docs).

    ## Version History
    * v0: first version, on ``bfcl-eval==2026.3.23``.

    Example:
        >>> env = BFCLEnv(split="train", categories=("base",))
        >>> obs, info = env.reset(options={"task_id": "bfcl/multi_turn_base_0"})
        >>> obs, r, term, trunc, info = env.step("[cd(folder='document'), ls()]")
        >>> info["calls"], info["turn"]
        (["cd(folder='document')", 'ls()'], 0)
        >>> obs, r, term, trunc, info = env.step("Done.")
        >>> info["handback"], info["turn"], info["progress"]
        (True, 1, 0.0)
        >>> env.close()
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, split: str = "train", categories: tuple[str, ...] | list[str] | str = CATEGORIES,
                 split_scheme: str = "entry", seed: int = 0, max_steps_per_turn: int | None = None,
                 step_timeout_s: float | None = 10.0, max_observation_chars: int = 200_000,
                 prompt_format: str | None = None, render_mode: str | None = None):
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if split_scheme not in SPLIT_SCHEMES:
            raise ValueError(f"split_scheme must be one of {SPLIT_SCHEMES}, got {split_scheme!r}")
        if max_steps_per_turn is not None and (not isinstance(max_steps_per_turn, int) or max_steps_per_turn < 1):
            raise ValueError(f"max_steps_per_turn must be a positive int or None, got {max_steps_per_turn!r}")
        if step_timeout_s is not None and not (isinstance(step_timeout_s, (int, float)) and step_timeout_s > 0):
            raise ValueError(f"step_timeout_s must be a positive number or None, got {step_timeout_s!r}")
        if not isinstance(max_observation_chars, int) or max_observation_chars < 1_000:
            raise ValueError(f"max_observation_chars must be an int of at least 1000, got {max_observation_chars!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.split, self.split_scheme, self.seed = split, split_scheme, int(seed)
        self.categories = check_categories(categories)
        self.max_steps_per_turn = max_steps_per_turn or step_limit()
        self.step_timeout_s = step_timeout_s
        self.render_mode = render_mode
        self.prompt_format = check_prompt_format(prompt_format) if prompt_format is not None else None
        self.action_space = UnicodeText(100_000, examples=("[pwd()]", HANDBACK))
        self.observation_space = UnicodeText(max_observation_chars)
        self._task: Task | None = None
        self._entry: dict[str, Any] = {}
        self._truth: list[list[str]] = []
        self._live: LiveEntry | None = None
        self._truth_live: LiveEntry | None = None
        self._done = True
        self._last_obs = ""
        self._hindsight_env: BFCLEnv | None = None

    # -- tasks -----------------------------------------------------------------------------------
    def tasks(self, split: str | None = None) -> list[Task]:
        """Every task of ``split`` (default: this env's) in this env's categories and split scheme."""
        return build_tasks(split or self.split, self.categories, self.split_scheme, self.seed)

    def _find(self, task_id: str) -> Task:
        prefix = "bfcl/multi_turn_"
        if not task_id.startswith(prefix) or not task_id.rsplit("_", 1)[-1].isdigit():
            raise ValueError(f"unknown BFCL task_id {task_id!r} (seed tasks are 'bfcl/<entry id>')")
        index = int(task_id.rsplit("_", 1)[-1])
        category = task_id[len(prefix):].rsplit("_", 1)[0]
        if category not in CATEGORIES or not 0 <= index < 200:
            raise ValueError(f"unknown BFCL task_id {task_id!r}")
        split = split_of(index, self.split_scheme, self.seed)
        for task in build_tasks(split, (category,), self.split_scheme, self.seed):
            if task.task_id == task_id:
                return task
        raise ValueError(f"unknown BFCL task_id {task_id!r}")

    def _choose(self, options: dict[str, Any]) -> Task:
        if "task" in options:
            task = Task.from_dict(options["task"])
            if "entry_id" not in task.goal and "entry" not in task.goal:
                raise ValueError(f"task {task.task_id!r} is not a BFCL task: its goal has no 'entry_id' or 'entry'")
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

    # -- gym API ---------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        task = self._choose(dict(options or {}))
        self._close_live()
        self._task = task
        self._entry, self._truth = task_entry(task)
        if len(self._truth) != len(self._entry["question"]):
            raise ValueError(f"task {task.task_id!r}: {len(self._entry['question'])} user turns but "
                             f"{len(self._truth)} ground-truth turns")
        name = unique_model_name()
        self._live = LiveEntry(self._entry, name)
        self._truth_live = LiveEntry(self._entry, f"{name}_truth")
        self._methods = set(self._live.methods)
        self._turn, self._turn_steps, self._steps = 0, 0, 0
        self._decoded: list[list[list[str]]] = [[]]
        self._raw: list[list[str]] = [[]]
        self._turn_passed: list[bool] = []
        self._done = False
        self._provisional = self._start_turn_truth()
        head = render_system_prompt(self._entry.get("function", []), self.prompt_format)
        self._last_obs = _printable(f"{head}\n\n{self._turn_message(0)}", self.observation_space.max_length)
        return self._last_obs, self._info(True)

    def _turn_message(self, turn: int) -> str:
        holdout = self._entry.get("missed_function", {}).get(str(turn))
        if holdout:  # BFCL's own words for a turn that reveals withheld functions
            prompts = __import__("bfcl_eval.constants.default_prompts", fromlist=["x"])
            return prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING.format(functions=holdout)
        return "\n\n".join(str(m.get("content", "")) for m in self._entry["question"][turn])

    def _state_matches(self) -> bool:
        """Whether the live state equals the ground truth's at the end of the current turn."""
        try:
            with call_deadline(self.step_timeout_s):
                return bool(checker().state_checker(self._live.instances, self._truth_live.instances)["valid"])
        except CallTimeout:
            return False

    def _start_turn_truth(self) -> bool:
        """Advance the ground-truth instances to the end of the current turn; whether the state matches."""
        try:
            with call_deadline(self.step_timeout_s):
                self._truth_live.execute(self._truth[self._turn])
        except CallTimeout:
            return False
        return self._state_matches()

    def _progress(self) -> float:
        # Finished turns count by their end state; the current turn counts while its state matches, so the
        # step that completes a turn's changes is the one whose progress rises.
        current = len(self._turn_passed) == self._turn < len(self._truth) and self._provisional
        return (sum(self._turn_passed) + bool(current)) / max(1, len(self._truth))

    def _info(self, action_valid: bool, **extra: Any) -> dict[str, Any]:
        info = {"task": self._task.public(), "instruction": self._task.instruction, "step": self._steps,
                "turn": self._turn, "turn_step": self._turn_steps, "action_valid": action_valid,
                "allowed_actions": None,  # any reply: function calls or a message
                "progress": self._progress()}
        info.update({k: v for k, v in extra.items() if v is not None})
        return info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._task is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            return ("The conversation has ended; call reset().", 0.0, True, False,
                    self._info(False, error="step after the episode ended"))
        self._steps += 1
        if not isinstance(action, str):
            parsed = ParsedAction(handback=True, refused=True,
                                  reason=f"the action is not a string: {type(action).__name__}")
        elif len(action) > self.action_space.max_length:
            limit = self.action_space.max_length
            parsed = ParsedAction(handback=True, refused=True,
                                  reason=f"the reply has {len(action)} characters (at most {limit})")
        else:
            self._raw[self._turn].append(action)
            parsed = parse_action(action, self._methods)
        if parsed.handback:
            return self._hand_back(parsed)
        return self._call(parsed.calls)

    def _call(self, calls: list[str]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._decoded[self._turn].append(calls)
        try:
            with call_deadline(self.step_timeout_s):
                results = self._live.execute(calls)
        except CallTimeout:
            return self._finish(self._info(True, calls=calls, fault="timeout"),
                                {"valid": False, "error_type": "evolver:call_timeout",
                                 "error_message": f"the calls ran past step_timeout_s={self.step_timeout_s}"},
                                "The calls took too long; the conversation is over.", truncated=True)
        shown = [_REFUSED_RESULT if c.startswith(BLOCKED_PREFIX) else r for c, r in zip(calls, results)]
        self._turn_steps += 1
        self._provisional = self._state_matches()
        info = self._info(True, calls=calls, results=shown, handback=False)
        if any(c.startswith(BLOCKED_PREFIX) for c in calls):
            info["error"] = "some calls were refused: only the listed functions run, with literal arguments"
        if self._turn_steps > self.max_steps_per_turn:
            return self._finish(info, None, f"Model has been forced to quit after {self.max_steps_per_turn} steps.",
                                truncated=True)
        text = decoder().format_execution_results_prompting({}, shown, {"model_responses_decoded": calls})
        self._last_obs = _printable(text, self.observation_space.max_length)
        return self._last_obs, 0.0, False, False, info

    def _hand_back(self, parsed: ParsedAction) -> tuple[str, float, bool, bool, dict[str, Any]]:
        # The turn ends: its end state against the ground truth's (for progress), then the next turn.
        self._turn_passed.append(self._state_matches())
        extra = {"handback": True, "handback_reason": parsed.reason}
        if parsed.refused:
            extra["error"] = parsed.reason
        self._turn += 1
        self._turn_steps = 0
        if self._turn == len(self._truth):
            self._turn -= 1  # the info names the last turn played
            info = self._info(not parsed.refused, **extra)
            self._turn += 1
            return self._finish(info, None, "The conversation has ended.", truncated=False)
        self._decoded.append([])
        self._raw.append([])
        self._provisional = self._start_turn_truth()
        info = self._info(not parsed.refused, **extra)
        self._last_obs = _printable(self._turn_message(self._turn), self.observation_space.max_length)
        return self._last_obs, 0.0, False, False, info

    def _finish(self, info: dict[str, Any], verdict: dict[str, Any] | None, obs: str,
                truncated: bool) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if verdict is None:
            # A forced quit keeps the turns played so far, the quitting one included (as BFCL's inference
            # does): short of the last turn, the runner's verdict is force_terminated; on it, the checker's.
            try:
                with call_deadline(None if self.step_timeout_s is None else 10 * self.step_timeout_s):
                    verdict = run_checker(self._entry, self._truth, self._decoded, f"{self._live.model_name}_check")
            except CallTimeout:
                verdict = {"valid": False, "error_type": "evolver:call_timeout",
                           "error_message": "the checker's replay ran past its deadline"}
        self._done = True
        success = bool(verdict.get("valid"))
        info["progress"] = self._progress()
        info.update(success=success, score=float(success), evaluation={
            "valid": success, "error_type": verdict.get("error_type"),
            "error_message": str(verdict.get("error_message", ""))[:500] or None,
            "turn_state_passed": list(self._turn_passed), "turns": len(self._truth)})
        self._last_obs = obs
        self._close_live()
        return obs, float(success), not truncated, truncated, info

    # -- helpers for proposers, attribution and evaluation -------------------------------------------
    def decoded_turns(self) -> list[list[list[str]]]:
        """The decoded calls of this episode so far, turn -> step -> calls (what the checker is given)."""
        return json.loads(json.dumps(self._decoded))

    def raw_turns(self) -> list[list[str]]:
        """The replies of this episode so far, turn -> step (BFCL's ``result`` field of an inference run)."""
        return json.loads(json.dumps(self._raw))

    def oracle(self, task: Task | dict | None = None) -> list[str]:
        """The ground truth as replies: each turn's calls in one reply (keyword arguments), then a hand-back."""
        task = Task.from_dict(task) if task is not None else self._task
        if task is None:
            raise ValueError("oracle() needs a task (or a reset env)")
        if task.reference:
            return list(task.reference)
        return oracle_actions(task_entry(task)[1])

    def reference_policies(self) -> dict[str, Any]:
        """Baselines as ``policy(observation, info) -> reply`` (what ``evolver play`` scores): ``oracle`` (the
        ground truth's replies), ``random`` (:class:`~evolver_gym.bfcl.policies.RandomCaller`, seeded by the
        task id) and ``do_nothing`` (a hand-back every turn)."""
        from evolver_gym.core.seeding import make_rng

        from .policies import RandomCaller

        def oracle(observation: str, info: dict[str, Any]) -> str:
            plan = self.oracle()
            return plan[info["step"]] if info["step"] < len(plan) else HANDBACK

        state: dict[str, Any] = {}

        def random(observation: str, info: dict[str, Any]) -> str:
            if info["step"] == 0:
                state["caller"] = RandomCaller(make_rng("bfcl-random", info["task"]["task_id"]))
            return state["caller"](observation, info)

        return {"oracle": oracle, "random": random, "do_nothing": lambda observation, info: HANDBACK}

    def profile(self) -> dict[str, Any]:
        """The API classes of the train split and their function docs (for explorers and proposers: under
        the ``class`` scheme the held-out classes are left out), and the splits."""
        from .package import function_docs

        classes = sorted({c for t in self.tasks("train") for c in t.goal["involved_classes"]})
        return {
            "env_id": ENV_ID,
            "entities": classes,
            "operations": {c: {d["name"]: d.get("description", "") for d in function_docs(c)} for c in classes},
            "function_docs": {c: function_docs(c) for c in classes},
            "action_syntax": "[func_name(param=value, ...), ...] calls functions; a reply without calls ends the turn",
            "categories": list(self.categories),
            "splits": {s: len(v) * len(self.categories) for s, v in split_table(self.split_scheme, self.seed).items()},
            "split_scheme": self.split_scheme,
            "held_out_classes": held_out_classes(self.split_scheme, self.seed),
            "max_steps_per_turn": self.max_steps_per_turn,
        }

    def hindsight_task(self, trajectory: Trajectory) -> Task | None:
        """A task on the trajectory's start state whose ground truth is the calls it made that succeeded,
        turn by turn (None when none did). Its user turns name those calls; the checker checks it."""
        if self._hindsight_env is None:
            self._hindsight_env = BFCLEnv(split=self.split, categories=self.categories,
                                          split_scheme=self.split_scheme, seed=self.seed,
                                          max_steps_per_turn=10_000, step_timeout_s=self.step_timeout_s,
                                          prompt_format=self.prompt_format)
        env = self._hindsight_env
        parent = trajectory.task
        env.reset(options={"task": parent})
        entry = env._entry
        turns: list[list[str]] = [[] for _ in entry["question"]]
        for action in trajectory.actions:
            if env._done:
                break
            turn = env._turn
            _, _, _, _, info = env.step(action)
            for call, result in zip(info.get("calls", []), info.get("results", [])):
                if not call.startswith(BLOCKED_PREFIX) and not _failed(result):
                    turns[turn].append(call)
        texts = ["Call " + ", then ".join(calls) + "." for calls in turns]
        synthetic = hindsight_entry(entry, turns, texts)
        if synthetic is None:
            return None
        truth = synthetic.pop("ground_truth")
        return parent.derive(
            instruction=synthetic["question"][0][0]["content"],
            goal={"entry": synthetic, "ground_truth": truth, "category": "hindsight",
                  "involved_classes": list(entry["involved_classes"])},
            reference=oracle_actions(truth), proposer="hindsight",
            metadata={"source": "hindsight", "turns": len(truth)})

    # -- the leakage interface (``wrappers.questioning.LeakageGuard``) -------------------------------
    def target_key(self, task: Task | dict) -> str | None:
        """What ``task`` checks: its start state (classes and initial configuration) and its ground-truth
        calls turn by turn (keyword form), less the wording of its user turns."""
        task = Task.from_dict(task)
        try:
            entry, truth = task_entry(task)
        except ValueError:
            return None
        calls = [[keyword_call(c) for c in turn] for turn in truth if turn]
        return json.dumps([sorted(entry["involved_classes"]), entry["initial_config"], calls], sort_keys=True,
                          default=str)

    def split_unit(self, task: Task | dict) -> str | None:
        """Under the ``class`` scheme, a held-out class ``task`` involves (held out whole), else None."""
        if self.split_scheme != "class":
            return None
        held = held_out_classes(self.split_scheme, self.seed)
        classes = set(Task.from_dict(task).goal.get("involved_classes", [])) & set(held["dev"] + held["test"])
        return f"class:{min(classes)}" if classes else None

    def render(self) -> str | None:
        return self._last_obs if self.render_mode == "ansi" else None

    def _close_live(self) -> None:
        for live in (self._live, self._truth_live):
            if live is not None:
                live.close()
        self._live = self._truth_live = None

    def close(self) -> None:
        self._close_live()
        if self._hindsight_env is not None:
            self._hindsight_env.close()
            self._hindsight_env = None
        super().close()
