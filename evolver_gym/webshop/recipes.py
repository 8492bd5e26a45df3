"""What WebShop offers a learner beyond its pages: flawed demonstrations and experience recipes.

* ``flawed_plan`` - a plausible but flawed variant of an oracle plan (imperfect SFT demonstrations).
* ``experience_recipe`` - a successful episode as a reusable shopping recipe (the offline summarizer's
  WebShop parsing).

Both are reached through ``WebShopEnv`` (``flawed_plan``, ``experience_recipe``), so trainers and
summarizers stay environment-agnostic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core import Trajectory

__all__ = ["flawed_plan", "experience_recipe"]

_ACTION = re.compile(r"^\s*(search|click)\[(.*)\]\s*$", re.IGNORECASE | re.DOTALL)
_ASIN = re.compile(r"^[a-z0-9]{10}$", re.IGNORECASE)
_NAV = {"back to search", "< prev", "next >", "description", "features", "reviews", "attributes"}
_SIZE = re.compile(r"\b(x*-?small|medium|x*-?large|\d+(\.\d+)?( wide| narrow)?|\d*x+l|one size|"
                   r"pack of \d+|\d+(\.\d+)? ?(ounce|oz|count|pound|lb|inch|ml|gram|g|ft|feet)\b.*)$")
_COLORS = {"black", "white", "red", "blue", "green", "pink", "purple", "yellow", "orange", "brown", "grey",
           "gray", "beige", "navy", "gold", "silver", "ivory", "khaki", "multicolor", "clear", "rose"}
_NUMBER = re.compile(r"\$?\d+(?:[.,]\d+)?")


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


def flawed_plan(actions: list[str], info: dict[str, Any], rng: np.random.Generator) -> list[str]:
    """A plausible but flawed variant of an oracle plan, re-planned after its first action.

    ``info`` is the step info after the first action (the results page): the flawed plan buys a
    different product from the results, forgets an option, or buys without choosing any, the way a
    half-trained agent would. ``evolver sft`` calls it as ``WebShopEnv.flawed_plan``.

    Example:
        >>> import numpy as np
        >>> plan = ["search[red shoes]", "click[b0000000001]", "click[red]", "click[buy now]"]
        >>> flawed = flawed_plan(plan, {"available_actions": {"clickables": ["b0000000002"]}},
        ...                      np.random.default_rng(0))
        >>> flawed != plan and flawed[0] == plan[0] and flawed[-1] == "click[buy now]"
        True
    """
    clickables_after_search: Sequence[str] = info.get("available_actions", {}).get("clickables", [])
    searches = [i for i, a in enumerate(actions) if a.startswith("search[")]
    if not searches or searches[0] + 1 >= len(actions):
        return actions[: max(1, len(actions) - 1)]  # generic: stop one step short
    first = searches[0] + 1
    target = actions[first]
    products = [f"click[{c}]" for c in clickables_after_search
                if f"click[{c}]" != target and c not in {"back to search", "next >", "< prev"}]
    options = actions[first + 1:-1]
    kind = rng.integers(3)
    if kind == 0 and products:  # buy a different product from the results, same option clicks
        return actions[:first] + [products[int(rng.integers(min(len(products), 5)))]] + options + [actions[-1]]
    if kind == 1 and options:  # forget one option
        drop = int(rng.integers(len(options)))
        return actions[:first + 1] + options[:drop] + options[drop + 1:] + [actions[-1]]
    return actions[:first + 1] + [actions[-1]]  # buy without choosing any option


def experience_recipe(t: Trajectory) -> dict[str, Any] | None:
    """A shopping recipe from a successful episode, the task's values generalised; ``None`` if it is not one.

    Returns ``when_to_use`` (what retrieval embeds), ``content`` (the advice) and ``metadata``. The
    offline summarizer of ``wrappers.navigation`` calls it as ``WebShopEnv.experience_recipe``.
    """
    goal: dict[str, Any] = t.task.goal or {}
    searches = [arg for kind, arg in map(_parse, t.actions) if kind == "search" and arg]
    clicks = [arg for kind, arg in map(_parse, t.actions) if kind == "click" and arg]
    if not searches or not any(c.lower() == "buy now" for c in clicks):
        return None
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
    return {"when_to_use": when, "content": content,
            "metadata": {"summarizer": "offline-webshop", "product_type": ptype, "category": category,
                         "option_kinds": kinds}}
