"""Goals from loaded products, with WebShop's construction and splits.

* ``human_goals`` - one goal per human instruction (skipping those without attributes).
* ``synthetic_goals`` - one goal per combination of a product's options, for products with a
  synthetic instruction; weights as upstream.
* ``price_upper`` - WebShop's budget: the larger of two of the first four ``PRICE_RANGE`` values
  above the price, drawn from ``(seed, asin, k)``.
* ``split_goals`` - test / dev / train under a split scheme:

  - ``"goal"`` (upstream's): shuffle goals with ``Random(233)``, cut test / dev / train. Dev and test
    goals usually share their product (and price bound) with train goals.
  - ``"product"``: whole products held out; no dev or test product appears in any train goal.
  - ``"type"``: whole product types (the product's ``query``, e.g. "shampoo") held out, so no train
    product is of a dev or test product's type (under ``product``, buying another product of the same
    type can still earn 1.0 on a dev goal).
  - ``"category"``: whole categories (``beauty``, ``fashion``, ...) held out.

  The held-out products or categories are drawn from ``seed``; each split's goals are shuffled with
  it too, so the first ``n`` dev goals are a sample of the split, not a few products.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from random import Random
from typing import Any

from ..core.seeding import make_random
from .reward import get_option_reward

__all__ = ["PRICE_RANGE", "SPLIT_SCHEMES", "human_goals", "price_upper", "split_goals", "split_unit", "synthetic_goals"]

PRICE_RANGE = [10.0 * i for i in range(1, 100)]
NO_BUDGET = 1_000_000
SPLIT_SCHEMES = ("goal", "product", "type", "category")
# The goal field a scheme holds out whole (``goal``: none, each goal is its own unit).
_UNIT_FIELD = {"goal": None, "product": "asin", "type": "query", "category": "category"}


def price_upper(price: float, rng: Random) -> tuple[float, str]:
    """``(price_upper, price_text)`` for a product that sells at ``price``."""
    candidates = [p for p in PRICE_RANGE if p > price][:4]
    if len(candidates) >= 2:
        _, upper = sorted(rng.sample(candidates, 2))
        return upper, f", and price lower than {upper:.2f} dollars"
    return NO_BUDGET, ""


def _base(product: dict[str, Any]) -> dict[str, Any]:
    return {
        "asin": product["asin"],
        "category": product["category"],
        "query": product["query"],
        "name": product["name"],
        "product_category": product["product_category"],
    }


def human_goals(
    products: list[dict[str, Any]], prices: dict[str, float], *, seed: int
) -> list[dict[str, Any]]:
    """Goals from ``product["instructions"]`` (items_human_ins)."""
    goals = []
    for product in products:
        for k, ins in enumerate(product.get("instructions", [])):
            attributes = ins.get("instruction_attributes") or []
            if not attributes:
                continue
            upper, price_text = price_upper(
                prices[product["asin"]], make_random(seed, "budget", product["asin"], k)
            )
            goals.append(
                {
                    **_base(product),
                    "instruction_text": ins["instruction"].strip(".") + price_text,
                    "attributes": list(attributes),
                    "price_upper": upper,
                    "goal_options": list(ins.get("instruction_options") or []),
                    "weight": 1,
                }
            )
    return goals


def synthetic_goals(
    products: list[dict[str, Any]], prices: dict[str, float], *, seed: int, drop_unreachable: bool = False
) -> list[dict[str, Any]]:
    """Goals from synthetic instructions, expanded over every option combination.

    WebShop compares synthetic goal options as ``(name, value)`` tuples, which colour normalisation
    leaves alone, while the bought value is normalised by substring ("bluetooth" becomes "blue"), so
    some combinations can never score 1.0. ``drop_unreachable`` leaves those out (generated catalogs
    do; real data keeps upstream's goal list).
    """
    goals = []
    counts: dict[str, int] = defaultdict(int)
    for product in products:
        if product.get("instruction_text") is None or not product.get("instruction_attributes"):
            continue
        attributes = product["instruction_attributes"]
        upper, price_text = price_upper(prices[product["asin"]], make_random(seed, "budget", product["asin"]))
        names = sorted(product["options"])
        for combination in itertools.product(*(product["options"][n] for n in names)):
            goal_options = dict(zip(names, combination, strict=True))
            if drop_unreachable and get_option_reward(combination, goal_options.items())[1] < len(names):
                continue
            option_text = ", and ".join(f"{k}: {v}" for k, v in goal_options.items())
            option_text = f" with {option_text}" if option_text else ""
            goals.append(
                {
                    **_base(product),
                    "name": product["Title"],
                    "instruction_text": f"{product['instruction_text']}{option_text}{price_text}",
                    "attributes": list(attributes),
                    "price_upper": upper,
                    "goal_options": goal_options,
                }
            )
            for a in attributes:
                counts[a] += 1
    for goal in goals:
        goal["weight"] = sum(1.0 / counts[a] for a in goal["attributes"]) / len(goal["attributes"])
    return goals


def _split_sizes(n: int) -> tuple[int, int]:
    # Upstream's 500 / 1,000 on the 12,087 real human goals, 10% / 20% on smaller goal sets.
    return min(500, n // 10), min(1000, n // 5)


def split_unit(goal: dict[str, Any], scheme: str) -> str | None:
    """What ``scheme`` holds out whole for ``goal``: its product, its category, or ``None`` (``goal``).

    Example:
        >>> split_unit({"asin": "B1", "category": "beauty"}, "category")
        'beauty'
        >>> split_unit({"asin": "B1", "category": "beauty"}, "goal") is None
        True
    """
    if scheme not in _UNIT_FIELD:
        raise ValueError(f"split_scheme must be one of {SPLIT_SCHEMES}, got {scheme!r}")
    key = _UNIT_FIELD[scheme]
    return None if key is None else str(goal[key])


def split_goals(
    goals: list[dict[str, Any]], scheme: str = "goal", *, seed: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """Cut ``goals`` into test / dev / train under ``scheme`` (see the module docstring).

    ``"goal"`` shuffles with seed 233 (``seed`` is not used): with WebShop's 12,087 human goals this is
    exactly upstream's 500 / 1,000 / rest; smaller goal sets keep the same shape at 10% / 20% / 70%.
    ``"product"`` and ``"category"`` shuffle the units (products or categories) with ``seed`` and walk
    them in that order: a unit goes to test if it brings test's goal count closer to ``"goal"``'s test
    size, else to dev likewise, else to train (test and dev get at least one unit each). Nothing is
    dropped, so the sizes differ a little from ``"goal"``'s, and more for categories (few, unequal).
    """
    if scheme not in SPLIT_SCHEMES:
        raise ValueError(f"split_scheme must be one of {SPLIT_SCHEMES}, got {scheme!r}")
    n_test, n_dev = _split_sizes(len(goals))
    if scheme == "goal":
        shuffled = list(goals)
        Random(233).shuffle(shuffled)
        return {
            "test": shuffled[:n_test],
            "dev": shuffled[n_test : n_test + n_dev],
            "train": shuffled[n_test + n_dev :],
        }
    by_unit: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for goal in goals:
        by_unit[split_unit(goal, scheme)].append(goal)
    units = sorted(by_unit)
    rng = make_random(seed, "split", scheme)
    rng.shuffle(units)
    held: dict[str, list[str]] = {"test": [], "dev": [], "train": []}
    size = {"test": 0, "dev": 0}
    for unit in units:
        n = len(by_unit[unit])
        # A unit goes where it brings the split's goal count closer to its target, else to train.
        name = next((s for s, target in (("test", n_test), ("dev", n_dev))
                     if abs(size[s] + n - target) < abs(size[s] - target)), "train")
        held[name].append(unit)
        if name != "train":
            size[name] += n
    for name in ("test", "dev"):  # units larger than twice the target: the smallest one still goes
        if not held[name] and len(held["train"]) > 1:
            smallest = min(held["train"], key=lambda u: (len(by_unit[u]), u))
            held["train"].remove(smallest)
            held[name].append(smallest)
    out = {name: [g for unit in held[name] for g in by_unit[unit]] for name in ("test", "dev", "train")}
    for name in ("test", "dev", "train"):
        make_random(seed, "split", scheme, name).shuffle(out[name])
    return out
