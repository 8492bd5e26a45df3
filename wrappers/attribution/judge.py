"""The LLM judge: outcome-conditioned, step-level GOOD/BAD labels (AgentEvolver's ADCA judge).

* ``JUDGE_SYSTEM_PROMPT`` - the evaluator's instructions: labels conditioned on whether the
  episode succeeded, judged step by step, with guardrails against labelling everything alike.
* ``build_judge_messages`` - the chat messages for one trajectory: the task, each step's action
  and the observation it produced, and the overall score in [-1, 1] with its sign.
* ``parse_verdicts`` - robust parsing of ``Step i Judgment: GOOD|BAD`` lines (markdown and case
  tolerated; a reply of exactly one bare verdict per step is accepted too).
* ``LLMJudgeAttributor`` - one model call per trajectory, many trajectories per ``chat_batch``;
  a parse or request failure falls back to the outcome's sign for every step, and is counted.

The judge sees only what the acting policy saw (the public instruction, observations, actions)
plus the final outcome: never ``info["progress"]``, the evaluation breakdown or the task's
reference solution.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from evolver_gym.core import Trajectory
from evolver_gym.core.llm import ChatClient, LLMError, Message

from .base import AttributionResult, Attributor, StepLabel, outcome_positive, outcome_score

__all__ = ["JUDGE_SYSTEM_PROMPT", "LLMJudgeAttributor", "build_judge_messages", "parse_verdicts"]

JUDGE_SYSTEM_PROMPT = """\
You are an expert process reward evaluator. You perform step-level attribution: given an agent's \
task, every step it took (its ACTION and the OBSERVATION that came back) and the OVERALL \
PERFORMANCE SCORE of the whole episode, you decide for each step whether it was GOOD or BAD for \
that outcome.

The overall score lies in [-1, 1]. A score above 0 means the episode SUCCEEDED; 0 or below means \
it FAILED. Use the score only as context: judge every step on its own merits.

If the episode SUCCEEDED:
- GOOD: the step directly advanced the outcome, or enabled later successful steps (it created \
needed state, gathered information that was used later, narrowed the search, or correctly \
finalized the result).
- BAD: the step was irrelevant, redundant, later undone, or counterproductive.

If the episode FAILED:
- GOOD only if the step genuinely reduced the distance to a correct solution (it established a \
precondition that later steps relied on, visibly corrected an earlier mistake, or prevented \
things from getting worse).
- BAD: the step had no effect, produced output that was never used, repeated an earlier step, \
impeded progress, or finalized a wrong result.

Guardrails:
- Do not give every step the same label unless the trajectory truly warrants it.
- A step whose output was unused or discarded is BAD.
- Finalizing a wrong result is BAD.

Answer for EVERY step, in order, exactly in this format:
Step 1 Analysis: <one or two sentences>
Step 1 Judgment: GOOD or BAD
Step 2 Analysis: ...
Step 2 Judgment: GOOD or BAD
"""

_JUDGMENT = re.compile(
    r"step\W{0,3}(\d+)\W{0,3}(?:judg(?:e)?ment|verdict|label)\W{0,6}(good|bad)\b", re.IGNORECASE)
_ANALYSIS = re.compile(r"step\W{0,3}(\d+)\W{0,3}analysis\W{0,6}(.*?)(?=\n\s*\W{0,3}step\W{0,3}\d+|\Z)",
                       re.IGNORECASE | re.DOTALL)
_BARE = re.compile(r"\b(GOOD|BAD)\b")


def _clip(text: str, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit // 2] + "\n...[trimmed]...\n" + text[-limit // 2:]


def _strip_experience(text: str, trajectory: Trajectory) -> str:
    """The first observation without an injected experience block (the judge grades the agent,
    not the retrieved hints)."""
    exp = trajectory.metadata.get("reset_info", {}).get("experience") or {}
    span = exp.get("span") or [0, 0]
    try:
        start, end = int(span[0]), int(span[1])
    except (TypeError, ValueError, IndexError):
        return text
    if 0 <= start < end <= len(text) and text[start:end] == exp.get("text"):
        return text[:start] + text[end:]
    return text


def build_judge_messages(trajectory: Trajectory, *, max_chars: int = 2000,
                         system_prompt: str = JUDGE_SYSTEM_PROMPT) -> list[Message]:
    """The judge's messages for one trajectory (steps numbered from 1)."""
    steps = trajectory.steps
    score = outcome_score(trajectory)
    sign = "positive" if outcome_positive(trajectory) else "negative"
    parts = [f"TASK:\n{_clip(trajectory.task.instruction, max_chars)}\n"]
    if steps:
        first = _strip_experience(steps[0].observation, trajectory)
        parts.append(f"INITIAL OBSERVATION:\n{_clip(first, max_chars)}\n")
    final_obs = trajectory.metadata.get("final_observation")
    for i, step in enumerate(steps):
        if i + 1 < len(steps):
            result = steps[i + 1].observation
        else:
            result = final_obs if isinstance(final_obs, str) else "(the episode ended)"
        parts.append(f">>> EVAL-STEP {i + 1} <<<\n<|ACTION|>\n{_clip(step.action, max_chars)}\n<|/ACTION|>\n"
                     f"<|OBSERVATION|>\n{_clip(result, max_chars)}\n<|/OBSERVATION|>\n")
    parts.append(f"OVERALL PERFORMANCE SCORE: {score:+.2f} ({sign}; the episode "
                 f"{'SUCCEEDED' if sign == 'positive' else 'FAILED'})\n")
    parts.append(f"Judge all {len(steps)} steps. Reply with 'Step i Analysis: ...' and "
                 f"'Step i Judgment: GOOD' or 'Step i Judgment: BAD' for i = 1..{len(steps)}.")
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": "\n".join(parts)}]


def parse_verdicts(text: str, n_steps: int) -> list[tuple[str, str]] | None:
    """``[(label, reason), ...]`` for steps 1..n_steps, or ``None`` when the reply cannot be read.

    ``Step i Judgment: GOOD|BAD`` lines are read first (the first verdict of a step wins; steps
    beyond ``n_steps`` are ignored). If some step has none, a reply holding exactly ``n_steps``
    bare GOOD/BAD words is read in order. Anything else is a parse failure.
    """
    if not isinstance(text, str) or n_steps <= 0:
        return [] if n_steps == 0 else None
    verdicts: dict[int, str] = {}
    for m in _JUDGMENT.finditer(text):
        k = int(m.group(1))
        if 1 <= k <= n_steps and k not in verdicts:
            verdicts[k] = m.group(2).upper()
    reasons = {int(m.group(1)): " ".join(m.group(2).split())[:300] for m in _ANALYSIS.finditer(text)}
    if len(verdicts) == n_steps:
        return [(verdicts[k], reasons.get(k, "")) for k in range(1, n_steps + 1)]
    bare = _BARE.findall(text)
    if len(bare) == n_steps:
        return [(label, "bare verdict") for label in bare]
    return None


class LLMJudgeAttributor(Attributor):
    """Step labels from a language model, one call per trajectory.

    Args:
        client: Any :class:`~evolver_gym.core.llm.ChatClient` (the ``attributor`` role).
        max_chars: Each action/observation block is trimmed to this many characters.
        system_prompt: Replaces :data:`JUDGE_SYSTEM_PROMPT`.
        temperature: Sent with every request (0: the judge should be deterministic).

    ``counts`` holds ``trajectories``, ``parsed``, ``fallbacks``, ``parse_failures`` and
    ``llm_failures`` over the judge's lifetime.

    Example:
        >>> from evolver_gym.core import Step, Task, Trajectory
        >>> from evolver_gym.core.llm.testing import ScriptedLLMServer
        >>> t = Trajectory(Task("t/0", "demo", "buy socks"), [Step("home", "search[socks]")], success=True, score=1.0)
        >>> with ScriptedLLMServer(replies=["Step 1 Analysis: found them.\\nStep 1 Judgment: GOOD"]) as server:
        ...     LLMJudgeAttributor(server.client(role="attributor")).attribute(t).to_info()["labels"][0]["label"]
        'GOOD'
    """

    name = "llm-judge"

    def __init__(self, client: ChatClient, *, max_chars: int = 2000, system_prompt: str = JUDGE_SYSTEM_PROMPT,
                 temperature: float | None = 0.0) -> None:
        if not (hasattr(client, "chat") and hasattr(client, "chat_batch")):
            raise TypeError(f"client must be a ChatClient (chat and chat_batch), got {type(client).__name__}")
        if not isinstance(max_chars, int) or max_chars < 50:
            raise ValueError(f"max_chars must be an int >= 50, got {max_chars!r}")
        self.client = client
        self.max_chars = max_chars
        self.system_prompt = system_prompt
        self.temperature = temperature
        self._lock = threading.Lock()
        self.counts = {"trajectories": 0, "parsed": 0, "fallbacks": 0, "parse_failures": 0, "llm_failures": 0}

    def messages(self, trajectory: Trajectory) -> list[Message]:
        return build_judge_messages(trajectory, max_chars=self.max_chars, system_prompt=self.system_prompt)

    def attribute(self, trajectory: Trajectory) -> AttributionResult:
        return self.attribute_batch([trajectory])[0]

    def attribute_batch(self, trajectories: list[Trajectory]) -> list[AttributionResult]:
        todo = [i for i, t in enumerate(trajectories) if t.steps]
        replies: list[str | None] = [None] * len(trajectories)
        errors: dict[int, str] = {}
        if todo:
            overrides: dict[str, Any] = {} if self.temperature is None else {"temperature": self.temperature}
            try:
                texts = self.client.chat_batch([self.messages(trajectories[i]) for i in todo], **overrides)
                for i, text in zip(todo, texts):
                    replies[i] = text
            except LLMError as exc:
                # A batch error carries the replies that did arrive; the others fall back below.
                partial = getattr(exc, "results", None) or [None] * len(todo)
                sub = getattr(exc, "errors", None) or [exc] * len(todo)
                for i, text, err in zip(todo, partial, sub):
                    replies[i] = text
                    if text is None:
                        errors[i] = f"{getattr(err, 'kind', 'error')}: {err}"[:300]
        results = []
        for i, traj in enumerate(trajectories):
            results.append(self._result(traj, replies[i], errors.get(i)))
        return results

    def _result(self, trajectory: Trajectory, reply: str | None, error: str | None) -> AttributionResult:
        n = len(trajectory.steps)
        with self._lock:
            self.counts["trajectories"] += 1
        if n == 0:
            return AttributionResult(self.name, [])
        if reply is None:
            with self._lock:
                self.counts["llm_failures"] += 1
                self.counts["fallbacks"] += 1
            return self.fallback(trajectory, reason=f"judge request failed ({error}); outcome's sign")
        parsed = parse_verdicts(reply, n)
        if parsed is None:
            with self._lock:
                self.counts["parse_failures"] += 1
                self.counts["fallbacks"] += 1
            return self.fallback(trajectory, reason="judge reply unreadable; outcome's sign")
        with self._lock:
            self.counts["parsed"] += 1
        labels = [StepLabel(i, label, reason=reason) for i, (label, reason) in enumerate(parsed)]
        return AttributionResult(self.name, labels)
