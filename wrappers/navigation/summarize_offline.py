"""A summarizer that needs no language model: successful episodes become reusable recipes.

* ``OfflineSummarizer`` - the environment's own recipe where its class offers ``experience_recipe``
  (WebShop: how to phrase the search, which title cues to check, which options to set, when to buy);
  for other environments, the successful action sequence with literal values replaced by placeholders.

Only successful episodes are summarised: a recipe from a failure would teach the failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from evolver_gym.core import Trajectory

from .record import Experience

__all__ = ["OfflineSummarizer", "generalise"]

_NUMBER = re.compile(r"\$?\d+(?:[.,]\d+)?")
_QUOTED = re.compile(r"(\"[^\"]*\"|'[^']*')")


def generalise(text: str) -> str:
    """Replace literal values (quoted strings, numbers, prices) by placeholders."""
    text = _QUOTED.sub("<value>", text)
    return _NUMBER.sub("<number>", text)


def _env_recipe(env_id: str) -> Callable[[Trajectory], dict[str, Any] | None] | None:
    """The registered environment's own ``experience_recipe``, if it has one."""
    try:
        spec = gym.spec(env_id)
    except gym.error.Error:
        return None
    creator = load_env_creator(spec.entry_point) if isinstance(spec.entry_point, str) else spec.entry_point
    return getattr(creator, "experience_recipe", None)


class OfflineSummarizer:
    """Recipes from successful trajectories, no LLM needed.

    Args:
        min_score: Episodes scoring below this (and not marked successful) are skipped.
        max_steps: Longest action list kept in a generic recipe.

    Example:
        >>> from evolver_gym.core import Step, Task
        >>> t = Trajectory(Task("w/0", "evolver/WebShop-v0", "i need a red cotton t-shirt, size large",
        ...     goal={"query": "t-shirt", "attributes": ["cotton"], "goal_options": ["red", "large"]}),
        ...     steps=[Step("", "search[red cotton t-shirt]"), Step("", "click[B000000001]"),
        ...            Step("", "click[red]"), Step("", "click[large]"), Step("", "click[buy now]")],
        ...     success=True, score=1.0)
        >>> exp = OfflineSummarizer().summarize([t])[0]
        >>> "t-shirt" in exp.when_to_use and "large" not in exp.content
        True
    """

    def __init__(self, min_score: float = 1.0, max_steps: int = 12) -> None:
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        self.min_score, self.max_steps = float(min_score), max_steps

    def summarize(self, trajectories: Sequence[Trajectory]) -> list[Experience]:
        """One experience per distinct task among the successful trajectories (best one each)."""
        best: dict[str, Trajectory] = {}
        for t in trajectories:
            if not (t.success or t.score >= self.min_score) or not t.steps:
                continue
            if t.task.task_id not in best or t.score > best[t.task.task_id].score:
                best[t.task.task_id] = t
        out = []
        for t in best.values():
            recipe = _env_recipe(t.task.env_id)
            found = recipe(t) if recipe is not None else None
            exp = (Experience(when_to_use=found["when_to_use"], content=found["content"], env_id=t.task.env_id,
                              source_task_id=t.task.task_id, success=True, score=t.score,
                              metadata=dict(found.get("metadata", {}))) if found else self._generic(t))
            if exp is not None:
                out.append(exp)
        return out

    # -- any environment -------------------------------------------------------------------
    def _generic(self, t: Trajectory) -> Experience | None:
        actions: list[str] = []
        for a in t.actions:
            g = generalise(a.strip())[:200]
            if g and (not actions or actions[-1] != g):  # repeated identical actions add nothing
                actions.append(g)
        if not actions:
            return None
        shown = actions[: self.max_steps]
        more = f" (+{len(actions) - len(shown)} more steps)" if len(actions) > len(shown) else ""
        when = f"Tasks like: {generalise(t.task.instruction.strip())[:300]}"
        content = "A sequence of actions that solved a task of this kind: " + " -> ".join(shown) + more
        return Experience(when_to_use=when, content=content, env_id=t.task.env_id, source_task_id=t.task.task_id,
                          success=True, score=t.score, metadata={"summarizer": "offline-generic"})
