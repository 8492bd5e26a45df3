"""The LLM summarizer: experiences extracted from successful, failed and contrasting episodes.

* ``LLMSummarizer`` - for the trajectories of one task: split them by outcome, ask the model for
  insights from the successes, from the failures and from the best-versus-worst contrast, have the
  model validate each candidate, and return the valid ones as :class:`Experience` records.
* ``parse_insights`` - the robust parser of the model's JSON (code fences, prose around it,
  single objects, wrapper keys, ``experience`` or ``content``).
* The prompts: ``SUCCESS_PROMPT``, ``FAILURE_PROMPT``, ``COMPARATIVE_PROMPT``, ``VALIDATION_PROMPT``.

Model output is hostile input: a reply that is not JSON, a field of the wrong type, an oversized
text or a failed request (``LLMError``) drops that candidate (counted in ``stats``), never raises.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from evolver_gym.core import Trajectory
from evolver_gym.core.llm import ChatClient, LLMError

from .record import Experience
from .wrapper import strip_experience

__all__ = ["LLMSummarizer", "parse_insights", "SUCCESS_PROMPT", "FAILURE_PROMPT", "COMPARATIVE_PROMPT",
           "VALIDATION_PROMPT"]

logger = logging.getLogger(__name__)

_SYSTEM = ("You distil reusable experience from an agent's episodes. Experience must transfer to other "
           "tasks of the same kind: describe situations and strategies, not this task's literal values.")
_FORMAT = """Answer with a JSON array of 1 to {max_insights} objects and nothing else:
[{{"when_to_use": "the kind of task or situation where this applies (one sentence)",
  "experience": "the concrete strategy, instruction or precaution (1-3 sentences)",
  "tags": ["short", "keywords"], "confidence": 0.0-1.0}}]"""

SUCCESS_PROMPT = """Task: {instruction}

The agent SUCCEEDED (score {score}) with this trajectory:
{trajectory}

What did it do that made it succeed? Extract the reusable steps and decisions.
""" + _FORMAT

FAILURE_PROMPT = """Task: {instruction}

The agent FAILED (score {score}) with this trajectory:
{trajectory}

What went wrong, and what should an agent do instead next time? Extract precautions.
""" + _FORMAT

COMPARATIVE_PROMPT = """Task: {instruction}

Best attempt (score {best_score}):
{best}

Worst attempt (score {worst_score}):
{worst}

Compare the two. Which decisions made the difference? Extract what to do and what to avoid.
""" + _FORMAT

VALIDATION_PROMPT = """Judge whether this experience is correct, actionable and reusable for other tasks of the
same kind (not tied to one task's literal values).

When to use: {when_to_use}
Experience: {content}

It was extracted from episodes of the task: {instruction}

Answer with one JSON object and nothing else:
{{"is_valid": true or false, "score": 0.0-1.0, "reason": "one sentence"}}"""

_DECODER = json.JSONDecoder()
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def _json_values(text: str) -> list[Any]:
    """Every top-level JSON value found in ``text`` (fenced blocks first, then anywhere)."""
    chunks = _FENCE.findall(text) or [text]
    found: list[Any] = []
    for chunk in chunks:
        i = 0
        while i < len(chunk):
            j = min([p for p in (chunk.find("[", i), chunk.find("{", i)) if p >= 0], default=-1)
            if j < 0:
                break
            try:
                value, end = _DECODER.raw_decode(chunk, j)
            except json.JSONDecodeError:
                i = j + 1
                continue
            found.append(value)
            i = end
    return found


def parse_insights(text: str) -> list[dict[str, Any]]:
    """The ``{"when_to_use", "content", "tags", "confidence"}`` dicts in a model reply.

    Accepts a JSON array, a single object, or an object wrapping the array under ``insights``,
    ``experiences`` or ``items``; ``experience`` is read as ``content``. Anything unusable is skipped.
    """
    if not isinstance(text, str):
        return []
    items: list[Any] = []
    for value in _json_values(text):
        if isinstance(value, dict):
            for key in ("insights", "experiences", "items"):
                if isinstance(value.get(key), list):
                    value = value[key]
                    break
        items += value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        when = item.get("when_to_use")
        content = item.get("experience", item.get("content"))
        if not isinstance(when, str) or not isinstance(content, str) or not when.strip() or not content.strip():
            continue
        tags = item.get("tags")
        tags = [str(x) for x in tags if isinstance(x, (str, int, float))][:8] if isinstance(tags, list) else []
        try:
            confidence = min(1.0, max(0.0, float(item.get("confidence", 0.5))))
        except (TypeError, ValueError):
            confidence = 0.5
        out.append({"when_to_use": when.strip(), "content": content.strip(), "tags": tags,
                    "confidence": confidence})
    return out


def _verdict(text: str) -> tuple[bool, float, str] | None:
    for value in _json_values(text if isinstance(text, str) else ""):
        if isinstance(value, dict) and ("is_valid" in value or "score" in value):
            valid = value.get("is_valid", True)
            valid = valid if isinstance(valid, bool) else str(valid).strip().lower() in ("true", "yes", "1")
            try:
                score = min(1.0, max(0.0, float(value.get("score", 1.0 if valid else 0.0))))
            except (TypeError, ValueError):
                return None
            return valid, score, str(value.get("reason", ""))[:300]
    return None


class LLMSummarizer:
    """AgentEvolver-style experience extraction with validation, through any ``ChatClient``.

    Args:
        client: The model to ask.
        success_threshold: Score at or above which an episode counts as a success (or ``success``).
        validate: Ask the model to validate each candidate before it is returned.
        validation_threshold: Minimum validation score kept.
        max_insights: Insights asked for per prompt.
        max_obs_chars: Characters of each observation shown to the model.
        max_steps: Steps of a trajectory shown (the last ones are kept).

    Attributes:
        stats: Counters: ``requests``, ``llm_errors``, ``unparsable``, ``invalid``, ``rejected``, ``kept``.
        last_failure: The reason of the latest failed request, unusable reply or refused insight
            (each is also logged as a warning).

    Example:
        >>> summarizer = LLMSummarizer(client)                                   # doctest: +SKIP
        >>> summarizer.summarize(trajectories_of_one_task)                        # doctest: +SKIP
        [Experience(when_to_use='...', content='...', ...)]
    """

    def __init__(self, client: ChatClient, *, success_threshold: float = 1.0, validate: bool = True,
                 validation_threshold: float = 0.5, max_insights: int = 3, max_obs_chars: int = 600,
                 max_steps: int = 30) -> None:
        if not isinstance(client, ChatClient):
            raise TypeError(f"client must implement chat/chat_batch, got {type(client).__name__}")
        if not 0.0 <= validation_threshold <= 1.0:
            raise ValueError(f"validation_threshold must lie in [0, 1], got {validation_threshold!r}")
        if not isinstance(max_insights, int) or not 1 <= max_insights <= 10:
            raise ValueError(f"max_insights must be an int in [1, 10], got {max_insights!r}")
        self.client, self.success_threshold, self.validate = client, float(success_threshold), bool(validate)
        self.validation_threshold, self.max_insights = float(validation_threshold), max_insights
        self.max_obs_chars, self.max_steps = int(max_obs_chars), int(max_steps)
        self.stats = dict.fromkeys(("requests", "llm_errors", "unparsable", "invalid", "rejected", "kept"), 0)
        self.last_failure: str | None = None

    def render(self, t: Trajectory) -> str:
        """A trajectory as the model sees it: observations (experience blocks removed) and actions."""
        steps = t.steps[-self.max_steps:]
        skipped = len(t.steps) - len(steps)
        lines = [f"(first {skipped} steps omitted)"] if skipped else []
        for n, s in enumerate(steps, skipped + 1):
            obs = strip_experience(s.observation).strip()
            if len(obs) > self.max_obs_chars:
                obs = obs[: self.max_obs_chars] + " ..."
            lines.append(f"Step {n}\n  Observation: {obs}\n  Action: {s.action}")
        lines.append(f"Outcome: {'success' if t.success else 'failure'}, score {t.score:.3f}")
        return "\n".join(lines)

    def _ask(self, prompts: list[str]) -> list[str | None]:
        if not prompts:
            return []
        convs = [[{"role": "system", "content": _SYSTEM}, {"role": "user", "content": p}] for p in prompts]
        self.stats["requests"] += len(convs)
        try:
            return list(self.client.chat_batch(convs))
        except LLMError:
            # A batch fails as a whole: retry one by one so one bad request costs one answer.
            out: list[str | None] = []
            for conv in convs:
                try:
                    out.append(self.client.chat(conv))
                except LLMError as exc:
                    self._failed("llm_errors", f"request failed: {exc}")
                    out.append(None)
            return out

    def _failed(self, counter: str, reason: str) -> None:
        """Count a failure, remember it as ``last_failure`` and log it (a summary of 0 says why)."""
        self.stats[counter] += 1
        self.last_failure = reason[:300]
        logger.warning("LLMSummarizer: %s", self.last_failure)

    def summarize(self, trajectories: Sequence[Trajectory]) -> list[Experience]:
        """Validated experiences from the trajectories of one task (an empty list on total failure)."""
        trajs = [t for t in trajectories if t.steps]
        if not trajs:
            return []
        task = trajs[0].task
        if any(t.task.task_id != task.task_id for t in trajs):
            raise ValueError(f"LLMSummarizer.summarize takes trajectories of one task, got task ids "
                             f"{sorted({t.task.task_id for t in trajs})}")
        good = [t for t in trajs if t.success or t.score >= self.success_threshold]
        bad = [t for t in trajs if t not in good]
        prompts: list[tuple[str, bool]] = []
        fmt = {"instruction": task.instruction, "max_insights": self.max_insights}
        if good:
            best = max(good, key=lambda t: t.score)
            prompts.append((SUCCESS_PROMPT.format(trajectory=self.render(best), score=best.score, **fmt), True))
        if bad:
            worst = min(bad, key=lambda t: t.score)
            prompts.append((FAILURE_PROMPT.format(trajectory=self.render(worst), score=worst.score, **fmt), False))
        ranked = sorted(trajs, key=lambda t: t.score)
        if len(trajs) >= 2 and ranked[-1].score > ranked[0].score:  # soft comparison: best vs worst
            prompts.append((COMPARATIVE_PROMPT.format(best=self.render(ranked[-1]), best_score=ranked[-1].score,
                                                      worst=self.render(ranked[0]), worst_score=ranked[0].score,
                                                      **fmt), bool(good)))
        candidates: list[Experience] = []
        best_score = max(t.score for t in trajs)
        for (_, from_success), reply in zip(prompts, self._ask([p for p, _ in prompts])):
            if reply is None:
                continue
            insights = parse_insights(reply)
            if not insights:
                self._failed("unparsable", f"reply has no usable insight JSON: {reply[:120]!r}")
            for ins in insights[: self.max_insights]:
                try:
                    candidates.append(Experience(
                        when_to_use=ins["when_to_use"], content=ins["content"], env_id=task.env_id,
                        source_task_id=task.task_id, success=from_success, score=best_score,
                        metadata={"summarizer": "llm", "tags": ins["tags"], "confidence": ins["confidence"]}))
                except (ValueError, TypeError) as exc:
                    self._failed("invalid", f"insight refused: {exc}")
        kept = self._validated(candidates, task.instruction) if self.validate else candidates
        self.stats["kept"] += len(kept)
        return kept

    def _validated(self, candidates: list[Experience], instruction: str) -> list[Experience]:
        prompts = [VALIDATION_PROMPT.format(when_to_use=c.when_to_use, content=c.content, instruction=instruction)
                   for c in candidates]
        kept = []
        for cand, reply in zip(candidates, self._ask(prompts)):
            verdict = _verdict(reply) if reply is not None else None
            if verdict is None or not verdict[0] or verdict[1] < self.validation_threshold:
                self.stats["rejected"] += 1  # unvalidated advice is not stored
                continue
            cand.metadata["validation"] = {"score": verdict[1], "reason": verdict[2]}
            kept.append(cand)
        return kept
