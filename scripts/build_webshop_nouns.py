"""Rebuild ``evolver_gym/webshop/nouns.txt``: the words spaCy tags as nouns in generated titles.

WebShop's ``r_type`` keeps the title tokens that spaCy's ``en_core_web_sm`` tags NOUN or PROPN. The
catalog generator draws titles from a closed vocabulary, so a word list taken from spaCy's tags on
generated titles reproduces those tags offline. A word goes in when spaCy tags it a noun in most of
its occurrences. Catalog seed 0 (the default) is left out, so the parity test measures on titles the
list was not built from.

Needs spaCy and an ``en_core_web_sm`` pipeline (the list was built with spaCy 3.8 and the 3.8.0
pipeline); nothing else in the project does.

    python scripts/build_webshop_nouns.py --seeds 1-80

It also records spaCy's nouns for catalog seed 0's titles in tests/webshop/data/, which the reward
parity test compares against.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

from evolver_gym.webshop.catalog import load_catalog

ANY = "*"
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "evolver_gym" / "webshop" / "nouns.txt"
TAGS = ROOT / "tests" / "webshop" / "data" / "spacy_nouns_seed0.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-80", help="catalog seeds, as FIRST-LAST")
    parser.add_argument("--products", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--record", type=Path, default=TAGS, help="also write spaCy's nouns of catalog seed 0's titles here (JSON)"
    )
    args = parser.parse_args()
    import spacy

    nlp = spacy.load("en_core_web_sm")
    first, last = (int(x) for x in args.seeds.split("-"))
    names: set[str] = set()
    for seed in range(first, last + 1):
        names |= {p["name"] for p in load_catalog(num_products=args.products, seed=seed).products}
    # Votes per context: the word alone, with its previous or next token, and with both.
    votes: dict[tuple[str, str, str], collections.Counter[bool]] = collections.defaultdict(collections.Counter)
    for doc in nlp.pipe(sorted(names), batch_size=256):
        tokens = ["<s>", *(t.text.lower() for t in doc), "</s>"]
        for i, token in enumerate(doc, start=1):
            is_noun = token.pos_ in ("NOUN", "PROPN")
            prev, word, nxt = tokens[i - 1], tokens[i], tokens[i + 1]
            for key in ((ANY, word, ANY), (prev, word, ANY), (ANY, word, nxt), (prev, word, nxt)):
                votes[key][is_noun] += 1

    def majority(key: tuple[str, str, str]) -> bool:
        return votes[key][True] > votes[key][False]

    # Keep a context only where its majority differs from what the tagger would say without it
    # (the tagger looks up prev+word+next, then prev+word, then word+next, then the word).
    nouns = sorted(w for p, w, n in votes if p == ANY and n == ANY and majority((p, w, n)))
    table: dict[tuple[str, str, str], bool] = {}

    def predicted(prev: str, word: str, nxt: str) -> bool:
        for key in ((prev, word, nxt), (prev, word, ANY), (ANY, word, nxt)):
            if key in table:
                return table[key]
        return majority((ANY, word, ANY))

    pairs = [k for k in sorted(votes) if (k[0] == ANY) != (k[2] == ANY)]
    triples = [k for k in sorted(votes) if ANY not in (k[0], k[2])]
    for key in pairs + triples:
        if majority(key) != predicted(*key):
            table[key] = majority(key)
    contexts = [f"{p} {w} {n} {'noun' if noun else 'other'}" for (p, w, n), noun in table.items()]
    header = (
        f"# Words spaCy ({spacy.__version__}, {nlp.meta['name']} {nlp.meta['version']}) tags NOUN/PROPN in\n"
        f"# {len(names):,} generated titles (seeds {args.seeds}); rebuilt by scripts/build_webshop_nouns.py.\n"
        "# A line 'word' is a noun in most contexts; 'prev word next noun|other' overrides that in one\n"
        f"# context ('{ANY}' matches any token; '<s>' and '</s>' are the title's ends).\n"
    )
    args.out.write_text(header + "\n".join(nouns + contexts) + "\n")
    held_out = sorted({p["name"] for p in load_catalog(num_products=args.products, seed=0).products})
    tags = {
        name: [t.text.lower() for t in doc if t.pos_ in ("NOUN", "PROPN")]
        for name, doc in zip(held_out, nlp.pipe(held_out, batch_size=256))
    }
    meta = (
        f"spaCy {spacy.__version__}, {nlp.meta['name']} {nlp.meta['version']}, catalog seed 0, {args.products} products"
    )
    args.record.write_text(json.dumps({"tagger": meta, "nouns": tags}, indent=0, sort_keys=True) + "\n")
    print(f"{len(nouns)} nouns, {len(contexts)} contexts from {len(names):,} titles -> {args.out}")


if __name__ == "__main__":
    main()
