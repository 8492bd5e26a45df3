"""Scoring synthetic tasks that the environment cannot check: a reference-based, banded LLM judge.

* ``JudgeResult`` - score in [0, 1], success, reason, the raw reply.
* ``ReferenceJudge`` - asks a ``ChatClient`` to grade an episode against the task's reference.
* ``parse_reward`` - reads ``<reward>NN</reward>`` (or a last resort number) from a reply.
* ``needs_judge`` - whether a task is graded by the judge rather than by the environment.

Bands as in AgentEvolver: achieved 60-100, not achieved 0-40, 41-59 forbidden (a reply in the
forbidden band is snapped to the nearest band edge). A success is a score >= 0.6. A runaway
repetition (the same action three times in a row) caps the score at 0.2 whatever the model says,
because a model judge is easily talked into rewarding loops.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from evolver_gym.core import Task, Trajectory
from evolver_gym.core.llm import ChatClient, LLMError

from .prompts import judge_messages

__all__ = ["JudgeResult", "ReferenceJudge", "needs_judge", "parse_reward"]

_REWARD = re.compile(r"<\s*reward\s*>\s*(-?\d+(?:\.\d+)?)\s*<\s*/\s*reward\s*>", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d+)?)(?![\w.])")


def needs_judge(task: Task) -> bool:
    """A task is judge-graded when its metadata says ``grader == "judge"``."""
    return task.origin == "synthetic" and task.metadata.get("grader") == "judge"


def parse_reward(text: str) -> float | None:
    """The grade in [0, 100] from a judge reply, banded; ``None`` when there is none.

    Example:
        >>> parse_reward("looks right <reward>85</reward>"), parse_reward("<reward>50</reward>")
        (85.0, 40.0)
        >>> parse_reward("no grade here") is None
        True
    """
    if not isinstance(text, str):
        return None
    found = _REWARD.findall(text)
    if found:
        value = float(found[-1])
    else:
        tail = text.strip().splitlines()[-1] if text.strip() else ""
        numbers = [float(n) for n in _NUMBER.findall(tail) if 0 <= float(n) <= 100]
        if not numbers:
            return None
        value = numbers[-1]
    value = min(max(value, 0.0), 100.0)
    if 40 < value < 60:  # forbidden band: snap to the nearest edge (50 counts as not achieved)
        value = 60.0 if value > 50 else 40.0
    return value


def _runaway(traj: Trajectory, repeats: int = 3) -> bool:
    run, last = 0, None
    for a in traj.actions:
        run = run + 1 if a == last else 1
        last = a
        if run >= repeats:
            return True
    return False


@dataclass
class JudgeResult:
    score: float
    success: bool
    reason: str
    raw: str = ""


class ReferenceJudge:
    """Grades an episode of a synthetic task against its reference solution with an LLM.

    Args:
        client: The judge model.
        attempts: Extra requests when a reply carries no grade (model output is unreliable;
            transport retries are the client's business).
        success_threshold: Score at or above which the task counts as achieved.

    Example:
        >>> class Fixed:
        ...     def chat(self, messages, **kw): return "achieved <reward>90</reward>"
        ...     def chat_batch(self, convs, **kw): return [self.chat(c) for c in convs]
        >>> from evolver_gym.core import Task, Trajectory, Step
        >>> t = Task("x/1", "toy", "open the door", origin="synthetic", reference=["open[door]"])
        >>> ReferenceJudge(Fixed()).score(t, Trajectory(task=t, steps=[Step("", "open[door]")])).score
        0.9
    """

    def __init__(self, client: ChatClient, *, attempts: int = 2, success_threshold: float = 0.6,
                 **chat_overrides: Any):
        if not isinstance(client, ChatClient):
            raise TypeError(f"ReferenceJudge.client must implement ChatClient (chat, chat_batch), got {type(client)}")
        if not isinstance(attempts, int) or attempts < 1:
            raise ValueError(f"ReferenceJudge.attempts must be a positive int, got {attempts!r}")
        if not 0.0 < success_threshold <= 1.0:
            raise ValueError(f"ReferenceJudge.success_threshold must be in (0, 1], got {success_threshold!r}")
        self.client = client
        self.attempts = attempts
        self.success_threshold = success_threshold
        self.chat_overrides = {"temperature": 0.0, **chat_overrides}

    def score(self, task: Task, traj: Trajectory) -> JudgeResult:
        """Grade one episode. Raises :class:`LLMError` when the model fails or never grades."""
        if not traj.steps:
            return JudgeResult(0.0, False, "no steps taken")
        messages = judge_messages(task.instruction, task.reference, traj)
        reply = ""
        for _ in range(self.attempts):
            reply = self.client.chat(messages, **self.chat_overrides)
            grade = parse_reward(reply)
            if grade is not None:
                value = grade / 100.0
                reason = "graded"
                if _runaway(traj) and value > 0.2:
                    value, reason = 0.2, "capped: runaway repetition"
                return JudgeResult(value, value >= self.success_threshold, reason, reply)
        raise LLMError(f"judge reply carried no <reward> grade after {self.attempts} attempts: {reply[:200]!r}",
                       kind="unparsable")
