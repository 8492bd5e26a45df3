"""A summarizer that needs no language model: successful episodes become reusable recipes.

* ``OfflineSummarizer`` - for WebShop, a shopping recipe with the task-specific values generalised
  (how to phrase the search, which title cues to check, which options to set, when to buy); for
  other environments, the successful action sequence with literal values replaced by placeholders.

Only successful episodes are summarised: a recipe from a failure would teach the failure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from evolver_gym.core import Trajectory

from .record import Experience

__all__ = ["OfflineSummarizer", "generalise"]

_ACTION = re.compile(r"^\s*(search|click)\[(.*)\]\s*$", re.IGNORECASE | re.DOTALL)
_ASIN = re.compile(r"^[a-z0-9]{10}$", re.IGNORECASE)
_NAV = {"back to search", "< prev", "next >", "description", "features", "reviews", "attributes"}
_SIZE = re.compile(r"\b(x*-?small|medium|x*-?large|\d+(\.\d+)?( wide| narrow)?|\d*x+l|one size|"
                   r"pack of \d+|\d+(\.\d+)? ?(ounce|oz|count|pound|lb|inch|ml|gram|g|ft|feet)\b.*)$")
_COLORS = {"black", "white", "red", "blue", "green", "pink", "purple", "yellow", "orange", "brown", "grey",
           "gray", "beige", "navy", "gold", "silver", "ivory", "khaki", "multicolor", "clear", "rose"}
_NUMBER = re.compile(r"\$?\d+(?:[.,]\d+)?")
_QUOTED = re.compile(r"(\"[^\"]*\"|'[^']*')")


def generalise(text: str) -> str:
    """Replace literal values (quoted strings, numbers, prices) by placeholders."""
    text = _QUOTED.sub("<value>", text)
    return _NUMBER.sub("<number>", text)


def _option_kind(value: str) -> str:
    v = value.lower().strip()
    if any(w in _COLORS for w in re.findall(r"[a-z]+", v)):
        return "color"
    if _SIZE.search(v):
        return "size/quantity"
    return "style/flavor"


def _parse(action: str) -> tuple[str, str]:
    m = _ACTION.match(action or "")
    return (m.group(1).lower(), m.group(2).strip()) if m else ("", "")


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
            webshop = "webshop" in t.task.env_id.lower() or any(_parse(s.action)[0] == "search" for s in t.steps)
            exp = self._webshop(t) if webshop else self._generic(t)
            if exp is not None:
                out.append(exp)
        return out

    # -- WebShop -------------------------------------------------------------------------
    def _webshop(self, t: Trajectory) -> Experience | None:
        goal: dict[str, Any] = t.task.goal or {}
        searches = [arg for kind, arg in map(_parse, t.actions) if kind == "search" and arg]
        clicks = [arg for kind, arg in map(_parse, t.actions) if kind == "click" and arg]
        if not searches or not any(c.lower() == "buy now" for c in clicks):
            return self._generic(t)
        query = searches[-1].lower()
        ptype = str(goal.get("query") or goal.get("product_type") or "").strip().lower()
        attributes = [str(a).lower() for a in goal.get("attributes", []) if str(a).strip()]
        raw_options = goal.get("goal_options", [])
        options = [str(v) for v in (raw_options.values() if isinstance(raw_options, dict) else raw_options)]
        item_clicks = [c for c in clicks if c.lower() not in _NAV and c.lower() != "buy now"]
        asin_seen = False
        chosen: list[str] = []
        for c in item_clicks:  # options are the clicks after the product was opened
            if _ASIN.match(c):
                asin_seen = True
            elif asin_seen:
                chosen.append(c.lower())
        options = options or chosen
        kinds = sorted({_option_kind(o) for o in options})
        if not ptype:  # no goal: the product type is the search minus option and price words
            drop = set(" ".join(chosen).split())
            ptype = " ".join(w for w in query.split() if w not in drop and not _NUMBER.fullmatch(w))[:60] or query
        category = str(goal.get("category") or "").strip().lower()
        has_price = "price" in t.task.instruction.lower() or float(goal.get("price_upper", 1e6) or 1e6) < 1e6

        attr_txt = ", ".join(attributes[:4])
        when = f"Shopping on WebShop for a {ptype}" + (f" ({category})" if category else "")
        if attr_txt:
            when += f" that must be {attr_txt}"
        if kinds:
            when += f", choosing its {' and '.join(kinds)}"
        if has_price:
            when += ", under a price limit"
        q_words = [w for w in query.split() if w in ptype.split() or any(w in a.split() for a in attributes)]
        search_tip = (f"Search with the product type first, then one or two required attributes "
                      f"(for example search[{' '.join(q_words) or ptype}]); leave colors, sizes and the price "
                      f"out of the query.")
        steps = [
            search_tip,
            f"On the results page, open an item whose title names the {ptype}"
            + (f" and mentions the required attributes ({attr_txt})" if attr_txt else "")
            + ("; skip items priced above the limit" if has_price else "") + ".",
        ]
        if kinds:
            steps.append(f"On the item page, click the requested {' and '.join(kinds)} value(s) exactly as "
                         f"listed, once each (text pages do not show which option is selected).")
        steps.append("Click Buy Now as soon as the title matches and the options are set; reading "
                     "Description, Features or Reviews only costs steps.")
        n_steps = len(t.steps)
        content = " ".join(f"{i}. {s}" for i, s in enumerate(steps, 1)) + f" (This took {n_steps} steps.)"
        return Experience(when_to_use=when, content=content, env_id=t.task.env_id, source_task_id=t.task.task_id,
                          success=True, score=t.score,
                          metadata={"summarizer": "offline-webshop", "product_type": ptype, "category": category,
                                    "option_kinds": kinds})

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
