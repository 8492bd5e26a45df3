"""Reference policies for WebShop: the oracle and the rule baseline.

* ``oracle_actions`` - actions that buy the goal's product with the goal's options: search the
  instruction (or, if the target is not in the top 50, its title), page to it, click it, click each
  goal option, buy.
* ``rule_baseline`` - WebShop's rule baseline as a ``policy(obs, info) -> action``: search the
  instruction, click the first result, buy it.
"""

from __future__ import annotations

import re
from typing import Any

from .normalize import normalize_color, token_set_ratio
from .pages import PAGE_SIZE, option_name_of_click
from .search import document_text

__all__ = ["option_clicks", "oracle_actions", "rule_baseline", "search_arg"]


def search_arg(text: str) -> str:
    """``text`` made safe inside ``search[...]`` (brackets and newlines dropped)."""
    return " ".join(re.sub(r"[\[\]]", " ", text).split())


def option_clicks(product: dict[str, Any], goal_options: Any) -> list[str]:
    """Clicks that choose the goal's options on ``product``'s page, as many as can be chosen.

    A click lands in the *last* option dimension offering its value (see ``option_name_of_click``),
    so each goal option gets a matching value (exact, else a fuzzy match > 85 after colour
    normalisation) whose landing dimension no other click uses. When Color and Pattern Name both
    offer "black", a "black" goal colour can only be met by a value that lands in Color.
    """
    wanted = list(goal_options.values()) if isinstance(goal_options, dict) else list(goal_options)
    candidates = []
    for g in wanted:
        scored = {}
        for values in product["options"].values():
            for v in values:
                score = 101 if v == g else token_set_ratio(normalize_color(v), normalize_color(g))
                if score > 85:
                    scored[v] = max(score, scored.get(v, 0))
        ranked = sorted(scored, key=lambda v: -scored[v])
        candidates.append([(v, option_name_of_click(product["options"], v)) for v in ranked])

    def assign(i: int, used: frozenset[str]) -> list[str]:
        if i == len(candidates):
            return []
        best = assign(i + 1, used)  # this goal option left out
        for value, landing in candidates[i]:  # best-scored first; stop at the first full assignment
            if landing not in used:
                tried = [value, *assign(i + 1, used | {landing})]
                if len(tried) > len(best):
                    best = tried
                if len(best) == len(candidates) - i:
                    break
        return best

    return [f"click[{v}]" for v in assign(0, frozenset())]


def oracle_actions(world: Any, goal: dict[str, Any], instruction: str, sponsored: int = 0) -> list[str]:
    """A shortest-known action list that earns the goal's best reward (1.0 for catalog goals), in a
    shop that lists ``sponsored`` sponsored products ahead of every search's matches."""
    asin = goal["asin"]
    product = world.catalog.by_asin[asin]
    # The instruction first (what a user would type); then ever more specific texts of the product,
    # ending with its whole indexed document, which ranks it first in all but pathological catalogs.
    queries = (
        instruction,
        product["Title"],
        f"{product['Title']} {product['Description']}",
        document_text(product),
    )
    for query in (search_arg(q) for q in queries):
        if not query:
            continue
        results = world.search(query, sponsored)
        if asin in results:
            rank = results.index(asin)
            return (
                [f"search[{query}]"]
                + ["click[next >]"] * (rank // PAGE_SIZE)
                + [f"click[{asin.lower()}]"]
                + option_clicks(product, goal["goal_options"])
                + ["click[buy now]"]
            )
    raise LookupError(f"goal product {asin!r} is not reachable by search")


def rule_baseline(observation: str, info: dict[str, Any]) -> str:
    """Search the instruction, click the first result, buy it."""
    clickables = info.get("available_actions", {}).get("clickables", [])
    if "buy now" in clickables:
        return "click[buy now]"
    if info.get("available_actions", {}).get("has_search_bar"):
        return f"search[{search_arg(info['instruction'])}]"
    # a results page names its products by id, or by position behind ``NumberedResults``
    products = [c for c in clickables if re.fullmatch(r"[a-z0-9]{10}", c) or c.isdigit()]
    if products:
        return f"click[{products[0]}]"
    return "click[back to search]" if "back to search" in clickables else "click[buy now]"
