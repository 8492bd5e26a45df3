"""The purchases WebShop reward parity is measured on (tests/webshop/test_reward_parity.py and
benchmarks/webshop_reward_parity.py).

Each human goal buys 3 products (the target, a seeded product of the same category, a seeded product
of the whole catalog) with 3 option choices each:

* ``right`` - the clicks that meet every goal option the product can meet (the oracle's);
* ``partial`` - the same, but the last goal option met gets a value of its option that meets no goal
  option (or stays unchosen when the option has none);
* ``wrong`` - every option of the product gets a value that meets no goal option, where it has one.

So right, partly right and wrong purchases are all scored, on the right and on wrong products.
"""

from __future__ import annotations

from typing import Any

from evolver_gym.core.seeding import make_random
from evolver_gym.webshop.normalize import normalize_color, token_set_ratio
from evolver_gym.webshop.pages import option_name_of_click
from evolver_gym.webshop.policies import option_clicks

CHOICES = ("right", "partial", "wrong")
PRODUCTS = ("target", "same category", "random")


def _meets_a_goal(value: str, wanted: list[str]) -> bool:
    return any(token_set_ratio(normalize_color(value), normalize_color(g)) > 85 for g in wanted)


def option_choices(product: dict[str, Any], goal_options: Any) -> dict[str, dict[str, str]]:
    """``{"right"|"partial"|"wrong": {option name: value}}`` for buying ``product`` against a goal,
    each chosen by clicks (a click lands in the last option offering its value)."""
    wanted = list(goal_options.values()) if isinstance(goal_options, dict) else list(goal_options)
    options = product["options"]

    def chosen(values: list[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for value in values:
            name = option_name_of_click(options, value)
            if name is not None:
                out[name] = value
        return out

    def wrong_value(name: str) -> str | None:
        """A value of option ``name`` that a click stores under ``name`` and that meets no goal option."""
        for value in options[name]:
            if option_name_of_click(options, value) == name and not _meets_a_goal(value, wanted):
                return value
        return None

    right = chosen([c[len("click[") : -1] for c in option_clicks(product, goal_options)])
    partial = dict(right)
    if right:
        last = list(right)[-1]
        replacement = wrong_value(last)
        if replacement is None:
            del partial[last]
        else:
            partial[last] = replacement
    wrong = {name: value for name in options if (value := wrong_value(name)) is not None}
    return {"right": right, "partial": partial, "wrong": wrong}


def purchases(catalog: Any, seed: int) -> list[tuple[dict[str, Any], str, dict[str, str]]]:
    """``(goal, asin, options)`` for every goal x 3 products x 3 option choices (see the module doc)."""
    out = []
    asins = sorted(catalog.by_asin)
    by_category: dict[str, list[str]] = {}
    for asin in asins:
        by_category.setdefault(catalog.by_asin[asin]["category"], []).append(asin)
    for k, goal in enumerate(catalog.goals):
        rng = make_random(seed, "parity", k)
        target = goal["asin"]
        same = [a for a in by_category[catalog.by_asin[target]["category"]] if a != target] or asins
        for asin in (target, rng.choice(same), rng.choice(asins)):
            product = catalog.by_asin[asin]
            choices = option_choices(product, goal["goal_options"])
            out.extend((goal, asin, choices[name]) for name in CHOICES)
    return out
