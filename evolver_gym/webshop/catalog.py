"""The product catalog: WebShop's loader semantics over generated or real data files.

* ``load_products`` - ``engine.load_products`` semantics: ASIN filtering, derived fields
  (``Title``, ``Description``, ``BulletPoints``, ``pricing``/``Price``, ``options``, ``Attributes``,
  ``instructions``), option values lower-cased with ``/`` turned into `` | ``.
* ``Catalog`` - products by ASIN, their sampled prices, goals, splits (per split scheme) and the text
  vocabulary.
* ``load_catalog`` - a ``Catalog`` from ``RawData`` or from a directory of the real files.

Prices of ranged products are drawn once, as upstream does, but from ``(seed, asin)`` instead of
the global ``random`` module, so instruction price text is stable across runs.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..core.seeding import make_random
from .generator import FILE_NAMES, RawData
from .goals import SPLIT_SCHEMES, human_goals, split_goals, synthetic_goals

__all__ = ["Catalog", "load_catalog", "load_products", "read_raw", "tokenize", "UI_TEXT"]

_REAL_NAMES = {
    "products": ("items_shuffle.json", "items_shuffle_1000.json"),
    "attributes": ("items_ins_v2.json", "items_ins_v2_1000.json"),
    "human": ("items_human_ins.json",),
}
_WORD = re.compile(r"\w+|[^\w\s]")
# Strings the pages show besides catalog text, so a word-level vocabulary covers every observation.
UI_TEXT = (
    "WebShop [SEP] Instruction: Search Back to Search Page (Total results: ) Next > < Prev "
    "Price: $ to Rating: N.A. Description Features Reviews Attributes Buy Now Thank you for "
    "shopping with us! Your score (min 0.0, max 1.0) Purchased asin options Invalid action: "
    "search click and price lower than dollars with 0 1 2 3 4 5 6 7 8 9 . , ' \" { } [ ] :"
)


def tokenize(text: str) -> list[str]:
    """Lower-cased word and punctuation tokens (the tokenisation ``Catalog.vocabulary`` uses)."""
    return _WORD.findall(text.lower())


def _parse_pricing(pricing: Any) -> tuple[list[float], str]:
    if not pricing:
        return [100.0], "$100.0"
    values = [
        float(Decimal(re.sub(r"[^\d.]", "", part)))
        for part in str(pricing).split("$")[1:]
        if re.sub(r"[^\d.]", "", part)
    ]
    if not values:
        return [100.0], "$100.0"
    if len(values) == 1:
        return values, f"${values[0]}"
    return values[:2], f"${values[0]} to ${values[1]}"


def load_products(
    raw: RawData, *, human_goals: bool = True, num_products: int | None = None
) -> list[dict[str, Any]]:
    """Products with WebShop's derived fields, ASINs that are "nan", longer than 10 or repeated dropped."""
    source = raw.products if num_products is None else raw.products[:num_products]
    seen: set[str] = set()
    products = []
    for p in source:
        asin = p.get("asin")
        if not isinstance(asin, str) or asin == "nan" or len(asin) > 10 or asin in seen:
            continue
        seen.add(asin)
        bullets = p.get("small_description") or []
        pricing, price_tag = _parse_pricing(p.get("pricing"))
        options: dict[str, list[str]] = {}
        option_to_image: dict[str, Any] = {}
        for name, contents in (p.get("customization_options") or {}).items():
            if contents is None:
                continue
            values = []
            for content in contents:
                value = content["value"].strip().replace("/", " | ").lower()
                values.append(value)
                option_to_image[value] = content.get("image")
            options[name.lower()] = values
        record = raw.attributes.get(asin, {})
        product = {
            "asin": asin,
            "name": p["name"],
            "category": p["category"],
            "query": p["query"].lower().strip(),
            "product_category": p["product_category"],
            "Title": p["name"],
            "Description": p.get("full_description") or "",
            "BulletPoints": bullets if isinstance(bullets, list) else [bullets],
            "Reviews": [],
            "Rating": "N.A.",
            "pricing": pricing,
            "Price": price_tag,
            "options": options,
            "option_to_image": option_to_image,
            "Attributes": record["attributes"] if "attributes" in record else ["DUMMY_ATTR"],
            "MainImage": (p.get("images") or [None])[0],
        }
        if human_goals:
            if asin in raw.human:
                product["instructions"] = raw.human[asin]
        else:
            product["instruction_text"] = record.get("instruction")
            product["instruction_attributes"] = record.get("instruction_attributes")
        products.append(product)
    return products


def read_raw(data_dir: str | Path) -> RawData:
    """Read the three real data files from ``data_dir`` (``*_1000`` variants accepted)."""
    data_dir = Path(data_dir)
    found = {}
    for key, names in _REAL_NAMES.items():
        path = next((data_dir / n for n in names if (data_dir / n).is_file()), None)
        if path is None and key != "human":
            raise FileNotFoundError(f"data_dir {str(data_dir)!r} lacks any of {list(names)}")
        found[key] = json.loads(path.read_text(encoding="utf-8")) if path else {}
    return RawData(found["products"], found["attributes"], found["human"])


class Catalog:
    """Loaded products, prices, goals and splits; shared read-only by every env of a process.

    Args:
        raw: The three data files' contents.
        seed: Seed for price sampling (ranged products, ``price_upper``).
        goals: ``"human"`` (instructions from ``items_human_ins``) or ``"synthetic"``.
        num_products: Keep only the first products of the file, as upstream does.
        generated: Whether the data came from the generator (titles are then tagged by its lexicon).
    """

    def __init__(
        self,
        raw: RawData,
        *,
        seed: int = 0,
        goals: str = "human",
        num_products: int | None = None,
        generated: bool = True,
    ):
        if goals not in {"human", "synthetic"}:
            raise ValueError(f"goals must be 'human' or 'synthetic', got {goals!r}")
        self.seed, self.goal_kind, self.generated = int(seed), goals, generated
        self.products = load_products(raw, human_goals=goals == "human", num_products=num_products)
        self.by_asin = {p["asin"]: p for p in self.products}
        self.prices = {p["asin"]: self._sample_price(p) for p in self.products}
        if goals == "human":
            self.goals = human_goals(self.products, self.prices, seed=self.seed)
        else:
            self.goals = synthetic_goals(
                self.products, self.prices, seed=self.seed, drop_unreachable=generated
            )
        self.splits = split_goals(self.goals)
        self._splits_by_scheme = {"goal": self.splits}

    def _sample_price(self, product: dict[str, Any]) -> float:
        pricing = product["pricing"]
        if not pricing:
            return 100.0
        if len(pricing) == 1:
            return pricing[0]
        return make_random(self.seed, "price", product["asin"]).uniform(*pricing[:2])

    def __len__(self) -> int:
        return len(self.products)

    def split(self, name: str, scheme: str = "goal") -> list[dict[str, Any]]:
        """The goals of split ``name`` (``train``, ``dev``, ``test``) under split scheme ``scheme``."""
        splits = self.splits_for(scheme)
        if name not in splits:
            raise ValueError(f"unknown WebShop split {name!r}; expected one of {sorted(splits)}")
        return splits[name]

    def splits_for(self, scheme: str) -> dict[str, list[dict[str, Any]]]:
        """test / dev / train goals under ``scheme`` (``goal``, ``product``, ``category``; see ``split_goals``),
        held-out units drawn from the catalog seed; computed once per scheme."""
        if scheme not in SPLIT_SCHEMES:
            raise ValueError(f"split_scheme must be one of {SPLIT_SCHEMES}, got {scheme!r}")
        if scheme not in self._splits_by_scheme:
            self._splits_by_scheme[scheme] = split_goals(self.goals, scheme, seed=self.seed)
        return self._splits_by_scheme[scheme]

    def vocabulary(self) -> list[str]:
        """Every token (see ``tokenize``) of titles, texts, options, prices, instructions, ASINs and
        page furniture, sorted: enough to build a word-level tokenizer for this catalog."""
        words: set[str] = set(tokenize(UI_TEXT))
        for p in self.products:
            words.update(
                tokenize(
                    " ".join(
                        (
                            p["asin"],
                            p["Title"],
                            p["Description"],
                            p["Price"],
                            p["Rating"],
                            " ".join(p["BulletPoints"]),
                            " ".join(p["Attributes"]),
                        )
                    )
                )
            )
            for name, values in p["options"].items():
                words.update(tokenize(name + " " + " ".join(values)))
        for g in self.goals:
            words.update(tokenize(g["instruction_text"]))
        return sorted(words)


def load_catalog(
    *, num_products: int = 1000, seed: int = 0, goals: str = "human", data_dir: str | Path | None = None
) -> Catalog:
    """A generated catalog, or the real files in ``data_dir`` (then ``num_products`` slices them)."""
    if data_dir is not None:
        return Catalog(read_raw(data_dir), seed=seed, goals=goals, num_products=num_products, generated=False)
    from .generator import generate_raw

    return Catalog(generate_raw(num_products, seed), seed=seed, goals=goals, generated=True)


# Re-exported for users who want the file names the loader looks for.
REAL_FILE_NAMES = {**_REAL_NAMES, "generated": FILE_NAMES}
