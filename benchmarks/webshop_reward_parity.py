"""WebShop reward parity: our ``get_reward`` against the reference implementation, side by side.

Purchases: every human goal of a generated catalog x 3 products (the goal's own, the instruction's
top search hit, a seeded random one) x 3 option choices (the oracle's clicks, the first value of each
option, none), with options chosen through the env's click rule. Each purchase is scored by our
``get_reward`` (default noun tagger, or ``--tagger``) and, with ``--reference DIR``, by the
reference's ``web_agent_site.engine.goal.get_reward`` imported from a WebShop checkout in ``DIR``
(it needs spaCy with ``en_core_web_sm`` and thefuzz in the running interpreter; nothing of it ships
with this project).

    python benchmarks/webshop_reward_parity.py --reference /path/to/WebShop [--products 1000 --seed 0]

Without ``--reference`` only our rewards are summarised.
"""

from __future__ import annotations

import argparse
import sys
import time

from evolver_gym.webshop.reward import NounTagger, get_reward
from evolver_gym.webshop.world import get_world
from tests.webshop.parity import purchases


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--products", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tagger", default="auto", help="our noun tagger: auto, lexicon, spacy or fallback")
    parser.add_argument("--reference", default=None, help="a WebShop checkout (holds web_agent_site/)")
    parser.add_argument("--show", type=int, default=5, help="print this many mismatches")
    args = parser.parse_args(argv)

    world = get_world(num_products=args.products, seed=args.seed, noun_tagger=args.tagger)
    tagger = world.tagger if args.tagger == "auto" else NounTagger(args.tagger)
    rows = purchases(world, args.seed)
    t0 = time.perf_counter()
    ours = [
        get_reward(world.catalog.by_asin[a], g, world.catalog.prices[a], o, tagger)[0] for g, a, o in rows
    ]
    t_ours = time.perf_counter() - t0
    print(f"{len(rows):,} purchases ({len(world.catalog.goals)} goals), our tagger: {tagger.mode}")
    print(f"ours: mean reward {sum(ours) / len(ours):.4f}, {t_ours:.2f} s")
    if args.reference is None:
        return
    sys.path.insert(0, args.reference)
    import functools

    from web_agent_site.engine import goal as reference  # type: ignore[import-not-found]

    reference.nlp = functools.lru_cache(maxsize=None)(reference.nlp)  # same parses, each title parsed once
    reference_reward = reference.get_reward

    t0 = time.perf_counter()
    theirs = [reference_reward(world.catalog.by_asin[a], g, world.catalog.prices[a], o) for g, a, o in rows]
    t_ref = time.perf_counter() - t0
    same = [abs(x - y) < 1e-9 for x, y in zip(ours, theirs)]
    worst = max(abs(x - y) for x, y in zip(ours, theirs))
    print(f"reference: mean reward {sum(theirs) / len(theirs):.4f}, {t_ref:.2f} s")
    share = 100 * sum(same) / len(same)
    print(f"exact match: {sum(same):,} / {len(same):,} ({share:.2f}%), largest difference {worst:.3f}")
    shown = 0
    for (goal, asin, options), x, y, ok in zip(rows, ours, theirs, same):
        if not ok and shown < args.show:
            shown += 1
            name = world.catalog.by_asin[asin]["name"]
            print(f"  goal {goal['name']!r} bought {name!r} options {options}: ours {x:.3f}, reference {y:.3f}")


if __name__ == "__main__":
    main()
