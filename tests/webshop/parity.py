"""The purchases WebShop reward parity is measured on (tests/webshop/test_reward_parity.py and
benchmarks/webshop_reward_parity.py)."""

from __future__ import annotations

from typing import Any

from evolver_gym.core.seeding import make_random
from evolver_gym.webshop.pages import option_name_of_click
from evolver_gym.webshop.policies import option_clicks, search_arg


def purchases(world: Any, seed: int) -> list[tuple[dict[str, Any], str, dict[str, str]]]:
    """``(goal, asin, options)`` for every goal x 3 products x 3 option choices."""
    catalog, out = world.catalog, []
    asins = sorted(catalog.by_asin)
    for k, goal in enumerate(catalog.goals):
        hits = [a for a in world.engine.search(search_arg(goal["instruction_text"])) if a != goal["asin"]]
        other = make_random(seed, "parity", k).choice(asins)
        for asin in (goal["asin"], hits[0] if hits else other, other):
            product = catalog.by_asin[asin]
            choices = (
                [c[len("click[") : -1] for c in option_clicks(product, goal["goal_options"])],
                [values[0] for values in product["options"].values()],
                [],
            )
            for clicks in choices:
                options: dict[str, str] = {}
                for value in clicks:
                    name = option_name_of_click(product["options"], value)
                    if name is not None:
                        options[name] = value
                out.append((goal, asin, options))
    return out
