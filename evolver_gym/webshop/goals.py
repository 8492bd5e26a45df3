"""Goals from loaded products, with WebShop's construction and splits.

* ``human_goals`` - one goal per human instruction (skipping those without attributes).
* ``synthetic_goals`` - one goal per combination of a product's options, for products with a
  synthetic instruction; weights as upstream.
* ``price_upper`` - WebShop's budget: the larger of two of the first four ``PRICE_RANGE`` values
  above the price, drawn from ``(seed, asin, k)``.
* ``split_goals`` - shuffle with ``Random(233)`` (upstream's seed), then test / dev / train.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from random import Random
from typing import Any

from ..core.seeding import make_random
from .reward import get_option_reward

__all__ = ["PRICE_RANGE", "human_goals", "price_upper", "split_goals", "synthetic_goals"]

PRICE_RANGE = [10.0 * i for i in range(1, 100)]
NO_BUDGET = 1_000_000


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


def split_goals(goals: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Shuffle with seed 233 and cut test / dev / train.

    With WebShop's 12,087 human goals this is exactly upstream's 500 / 1,000 / rest; smaller goal
    sets keep the same shape at 10% / 20% / 70%.
    """
    shuffled = list(goals)
    Random(233).shuffle(shuffled)
    n = len(shuffled)
    n_test, n_dev = min(500, n // 10), min(1000, n // 5)
    return {
        "test": shuffled[:n_test],
        "dev": shuffled[n_test : n_test + n_dev],
        "train": shuffled[n_test + n_dev :],
    }
