"""WebShop reward parity: our ``get_reward`` against the reference implementation, side by side.

Purchases (``tests/webshop/parity.py``): every human goal of a generated catalog x 3 products (the
goal's own, a seeded one of the same category, a seeded one of the whole catalog) x 3 option
choices (right, partly right, wrong), options chosen through the env's click rule. Each purchase is
scored by our ``get_reward`` (default noun tagger, or ``--tagger``) and, with ``--reference DIR``, by
the reference's ``web_agent_site.engine.goal.get_reward`` imported from a WebShop checkout in ``DIR``
(it needs spaCy with ``en_core_web_sm``, thefuzz and rich in the running interpreter; nothing of it
ships with this project). The default tagger's weights were learnt from catalog seeds 1-100 of
1,000 products; seed 0 and seeds from 1000 on are held out.

    python benchmarks/webshop_reward_parity.py --reference /path/to/WebShop --products 10000 --seed 1000

Without ``--reference`` only our rewards are summarised.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from evolver_gym.webshop.catalog import load_catalog
from evolver_gym.webshop.reward import NounTagger, get_reward
from tests.webshop.parity import CHOICES, PRODUCTS, purchases


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--products", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tagger", default="lexicon", help="our noun tagger: lexicon, spacy or fallback")
    parser.add_argument("--reference", default=None, help="a WebShop checkout (holds web_agent_site/)")
    parser.add_argument("--show", type=int, default=5, help="print this many mismatches")
    args = parser.parse_args(argv)

    catalog = load_catalog(num_products=args.products, seed=args.seed)
    tagger = NounTagger(args.tagger)
    rows = purchases(catalog, args.seed)
    t0 = time.perf_counter()
    ours = [get_reward(catalog.by_asin[a], g, catalog.prices[a], o, tagger)[0] for g, a, o in rows]
    t_ours = time.perf_counter() - t0
    print(f"{len(rows):,} purchases ({len(catalog.goals)} goals, {args.products} products, seed {args.seed})")
    print(f"ours ({tagger.mode} tagger): mean reward {sum(ours) / len(ours):.4f}, {t_ours:.2f} s")
    if args.reference is None:
        return
    sys.path.insert(0, args.reference)
    import functools

    from web_agent_site.engine import goal as reference  # type: ignore[import-not-found]

    reference.nlp = functools.lru_cache(maxsize=None)(reference.nlp)  # same parses, each title parsed once
    t0 = time.perf_counter()
    theirs = [reference.get_reward(catalog.by_asin[a], g, catalog.prices[a], o) for g, a, o in rows]
    t_ref = time.perf_counter() - t0
    diffs = [abs(x - y) for x, y in zip(ours, theirs)]
    same = sum(d < 1e-9 for d in diffs)
    print(f"reference: mean reward {sum(theirs) / len(theirs):.4f}, {t_ref:.2f} s")
    print(f"exact match: {same:,} / {len(rows):,} ({100 * same / len(rows):.2f}%), largest difference {max(diffs):.3f}")
    success_ours, success_ref = sum(x == 1.0 for x in ours), sum(y == 1.0 for y in theirs)
    print(f"purchases with reward 1.0: ours {success_ours:,}, reference {success_ref:,}")
    # rows come in goal order, 3 products x 3 choices per goal
    cases = Counter(
        (PRODUCTS[i // len(CHOICES) % len(PRODUCTS)], CHOICES[i % len(CHOICES)])
        for i, d in enumerate(diffs)
        if d >= 1e-9
    )
    print("mismatches by case:", ", ".join(f"{p}/{c} {n}" for (p, c), n in sorted(cases.items())) or "none")
    titles = {catalog.by_asin[a]["name"] for _, a, _ in rows}
    differ = sum(tagger(t) != [x.text.lower() for x in reference.nlp(t) if x.pos_ in ("NOUN", "PROPN")] for t in titles)
    print(f"titles whose nouns differ: {differ:,} / {len(titles):,}")
    shown = 0
    for (goal, asin, options), x, y, d in zip(rows, ours, theirs, diffs):
        if d >= 1e-9 and shown < args.show:
            shown += 1
            name = catalog.by_asin[asin]["name"]
            print(f"  goal {goal['name']!r} bought {name!r} options {options}: ours {x:.3f}, reference {y:.3f}")


if __name__ == "__main__":
    main()
