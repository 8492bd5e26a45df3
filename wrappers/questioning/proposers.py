"""Proposers: turn exploration trajectories into candidate tasks.

* ``Candidate`` - a proposed task plus its provenance (proposer, confidence, filters passed).
* ``HindsightProposer`` - no model needed: the environment's ``hindsight_task(trajectory)`` turns
  what an exploration achieved into a task with an environment-checkable goal; its templated
  instruction can be rephrased by an optional LLM (falling back to the template when the rewrite
  loses a detail).
* ``LLMProposer`` - AgentEvolver's manner: an LLM reads the trajectory and the tasks that exist
  already and writes ``<task>{"query", "confidence", "action_sequence"}</task>`` blocks; the tasks it
  proposes are graded by the judge (``metadata["grader"] = "judge"``).
* ``parse_task_blocks`` - tolerant parser of that format (model output is hostile input).

Each ``propose`` returns ``(candidates, reason)``; ``reason`` says why nothing came out, else ``None``.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evolver_gym.core import Task, Trajectory
from evolver_gym.core.llm import ChatClient, LLMError

from .prompts import proposer_messages, rephrase_messages

__all__ = ["Candidate", "HindsightProposer", "LLMProposer", "parse_task_blocks"]


@dataclass
class Candidate:
    """A proposed task on its way through the filters."""

    task: Task
    proposer: str
    confidence: float | None = None
    passed: list[str] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def provenance(self) -> dict[str, Any]:
        return {"parent_id": self.task.parent_id, "proposer": self.proposer, "confidence": self.confidence,
                "filters": list(self.passed), "grader": self.task.metadata.get("grader", "env"), **self.notes}


def _unwrapped(env: Any) -> Any:
    return getattr(env, "unwrapped", env)


class HindsightProposer:
    """Asks the environment what task a trajectory solved (no model needed).

    Args:
        env: The environment (wrapped or not) whose unwrapped ``hindsight_task`` is called.
        rephraser: Optional ``ChatClient`` that rewrites the templated instruction in natural words.
        fill_open_choices: Ask the environment to pin every choice the exploration left open (its
            ``hindsight_task`` must take the keyword; WebShop's draws the product's unchosen options).
    """

    name = "hindsight"

    def __init__(self, env: Any, rephraser: ChatClient | None = None, *, fill_open_choices: bool = False):
        hindsight_task = getattr(_unwrapped(env), "hindsight_task", None)
        if not callable(hindsight_task):
            raise TypeError(f"HindsightProposer needs an env with hindsight_task(trajectory), got {type(env)}")
        if rephraser is not None and not isinstance(rephraser, ChatClient):
            raise TypeError(f"HindsightProposer.rephraser must be a ChatClient or None, got {type(rephraser)}")
        if fill_open_choices and "fill_open_choices" not in inspect.signature(hindsight_task).parameters:
            raise ValueError(f"fill_open_choices=True needs an env whose hindsight_task takes fill_open_choices; "
                             f"{type(_unwrapped(env)).__name__}'s does not")
        self.env = env
        self.rephraser = rephraser
        self.fill_open_choices = fill_open_choices

    def propose(self, traj: Trajectory, existing: Sequence[str] = ()) -> tuple[list[Candidate], str | None]:
        options = {"fill_open_choices": True} if self.fill_open_choices else {}
        task = _unwrapped(self.env).hindsight_task(traj, **options)
        if task is None:
            return [], "trajectory achieved nothing checkable"
        task = Task.from_dict(task)
        parent = traj.task
        if task.origin != "synthetic" or task.task_id == parent.task_id:
            task = parent.derive(instruction=task.instruction, goal=task.goal,
                                 reference=task.reference or traj.actions, proposer=self.name)
        if not task.reference:
            task.reference = list(traj.actions)
        task.parent_id = task.parent_id or parent.task_id
        task.metadata = {**task.metadata, "proposer": self.name, "grader": "env"}
        notes: dict[str, Any] = {}
        if self.rephraser is not None:
            new, why = self._rephrase(task.instruction, task.goal)
            notes["rephrase"] = why
            if new is not None:
                task.metadata["template_instruction"] = task.instruction
                task.instruction = new
        return [Candidate(task, self.name, confidence=1.0, notes=notes)], None

    def _rephrase(self, instruction: str, goal: dict[str, Any]) -> tuple[str | None, str]:
        try:
            reply = self.rephraser.chat(rephrase_messages(instruction), temperature=0.7)
        except LLMError as exc:
            return None, f"kept template: llm error ({exc.kind})"
        text = (reply or "").strip().strip('"').strip()
        text = text.splitlines()[0].strip() if text else ""
        if not text or len(text) > 3 * len(instruction) + 40:
            return None, "kept template: empty or overlong rewrite"
        # A rewrite that drops a number (price, size, count) changes the task: keep the template.
        lost = set(re.findall(r"\d+(?:\.\d+)?", instruction)) - set(re.findall(r"\d+(?:\.\d+)?", text))
        # So does one that drops a goal value the template spelled out (product name, option...).
        lost |= {v for v in _leaf_strings(goal) if v.lower() in instruction.lower() and v.lower() not in text.lower()}
        if lost:
            return None, f"kept template: rewrite lost {sorted(lost)}"
        return text, "rephrased"


def _leaf_strings(x: Any) -> list[str]:
    if isinstance(x, str):
        return [x] if 0 < len(x) <= 80 else []
    if isinstance(x, dict):
        return [s for v in x.values() for s in _leaf_strings(v)]
    if isinstance(x, (list, tuple)):
        return [s for v in x for s in _leaf_strings(v)]
    return []


# -- LLM proposer -----------------------------------------------------------------------

_BLOCK = re.compile(r"<\s*task\s*>(.*?)(?:<\s*/\s*task\s*>|(?=<\s*task\s*>)|\Z)", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _loads_lenient(body: str) -> Any:
    body = _FENCE.sub("", body.strip()).strip()
    start, end = body.find("{"), body.rfind("}")
    if start >= 0 and end > start:
        body = body[start:end + 1]
    for attempt in (body, _TRAILING_COMMA.sub(r"\1", body)):
        try:
            return json.loads(attempt)
        except (json.JSONDecodeError, ValueError):
            pass
        try:  # single-quoted, Python-literal style
            return ast.literal_eval(attempt.replace("true", "True").replace("false", "False").replace("null", "None"))
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            pass
    # Last resort: pull the fields out one by one.
    out: dict[str, Any] = {}
    m = re.search(r"[\"']?query[\"']?\s*:\s*[\"'](.+?)[\"']\s*(?:,|\}|$)", body, re.DOTALL)
    if m:
        out["query"] = m.group(1)
    m = re.search(r"[\"']?confidence[\"']?\s*:\s*[\"']?([0-9.]+)", body)
    if m:
        out["confidence"] = m.group(1)
    m = re.search(r"[\"']?action_sequence[\"']?\s*:\s*(\[.*?\])", body, re.DOTALL)
    if m:
        try:
            out["action_sequence"] = json.loads(_TRAILING_COMMA.sub(r"\1", m.group(1)))
        except (json.JSONDecodeError, ValueError):
            out["action_sequence"] = re.findall(r"[\"'](.+?)[\"']", m.group(1))
    return out or None


def _actions(value: Any) -> list[str]:
    if isinstance(value, str):
        lines = [re.sub(r"^\s*(?:\d+[.)]|[-*])\s*", "", ln).strip() for ln in value.splitlines()]
        return [ln for ln in lines if ln]
    if isinstance(value, (list, tuple)):
        out = []
        for a in value:
            if isinstance(a, str) and a.strip():
                out.append(a.strip())
            elif isinstance(a, dict) and isinstance(a.get("action"), str):
                out.append(a["action"].strip())
        return out
    return []


def _confidence(value: Any) -> float:
    try:
        c = float(value)
    except (TypeError, ValueError):
        return 0.5
    if c != c:  # NaN
        return 0.5
    return min(max(c / 100.0 if c > 1.0 else c, 0.0), 1.0)


def parse_task_blocks(text: str) -> list[dict[str, Any]]:
    """Every well-enough-formed task in a proposer reply: ``{"query", "confidence", "action_sequence"}``.

    Tolerates code fences, single quotes, trailing commas, a missing closing tag, a bare JSON list
    of tasks and actions given as a numbered string. Blocks without a query are dropped.

    Example:
        >>> parse_task_blocks('<task>{"query": "buy a red hat", "confidence": 0.9, '
        ...                   '"action_sequence": ["search[red hat]", "click[buy now]",]}</task>')
        [{'query': 'buy a red hat', 'confidence': 0.9, 'action_sequence': ['search[red hat]', 'click[buy now]']}]
        >>> parse_task_blocks("I cannot help with that.")
        []
    """
    if not isinstance(text, str) or not text.strip():
        return []
    raws: list[Any] = [_loads_lenient(b) for b in _BLOCK.findall(text) if b.strip()]
    if not raws:  # no tags: maybe a JSON object or list of objects
        body = _FENCE.sub("", text.strip()).strip()
        try:
            data = json.loads(body)
            raws = data if isinstance(data, list) else [data]
        except (json.JSONDecodeError, ValueError):
            raws = [_loads_lenient(text)] if "query" in text else []
    out = []
    for raw in raws:
        if not isinstance(raw, dict):
            continue
        query = raw.get("query")
        if not isinstance(query, str) or not query.strip():
            continue
        out.append({"query": " ".join(query.split()), "confidence": _confidence(raw.get("confidence")),
                    "action_sequence": _actions(raw.get("action_sequence", raw.get("actions")))})
    return out


class LLMProposer:
    """Trajectory -> tasks with query, confidence and reference actions, written by an LLM.

    Args:
        client: The proposer model.
        profile: The environment's ``profile()`` (what exists and can be done).
        max_tasks: Most tasks asked for per trajectory.
        mask_seed_instruction: Hide the seed task's instruction inside the shown trajectory, so the
            model writes new tasks instead of restating the seed.
    """

    name = "llm"

    def __init__(self, client: ChatClient, profile: dict[str, Any] | None = None, *, max_tasks: int = 3,
                 mask_seed_instruction: bool = True, **chat_overrides: Any):
        if not isinstance(client, ChatClient):
            raise TypeError(f"LLMProposer.client must implement ChatClient, got {type(client)}")
        if not isinstance(max_tasks, int) or max_tasks < 1:
            raise ValueError(f"LLMProposer.max_tasks must be a positive int, got {max_tasks!r}")
        self.client = client
        self.profile = dict(profile or {})
        self.max_tasks = max_tasks
        self.mask_seed_instruction = mask_seed_instruction
        self.chat_overrides = chat_overrides

    def propose(self, traj: Trajectory, existing: Sequence[str] = ()) -> tuple[list[Candidate], str | None]:
        if not traj.steps:
            return [], "empty trajectory"
        mask = [traj.task.instruction] if self.mask_seed_instruction else []
        msgs = proposer_messages(self.profile, traj, existing, max_tasks=self.max_tasks, mask=mask)
        try:
            reply = self.client.chat(msgs, **self.chat_overrides)
        except LLMError as exc:
            return [], f"llm error ({exc.kind})"
        parsed = parse_task_blocks(reply)
        if not parsed:
            return [], "unparsable proposer output"
        parent = traj.task
        out = []
        for item in parsed[: self.max_tasks]:
            task = parent.derive(instruction=item["query"], goal=parent.goal, reference=item["action_sequence"],
                                 proposer=self.name, metadata={"grader": "judge", "confidence": item["confidence"]})
            out.append(Candidate(task, self.name, confidence=item["confidence"]))
        return out, None
