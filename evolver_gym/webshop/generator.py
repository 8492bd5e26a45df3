"""Seeded procedural catalog in the schemas of WebShop's real data files.

* ``generate_raw`` - products (``items_shuffle``), attribute records (``items_ins_v2``) and human
  instructions (``items_human_ins``) as Python objects, from ``(num_products, seed)``.
* ``write_raw`` - the same three objects written as the real files' JSON names.
* ``RawData`` - the three objects together.

Products come in *families*: a target that human instructions describe, plus hard negatives built
from it - the same type with one requested attribute missing (from ``Attributes`` and every text),
the same product without the requested option values, the same product over the instruction's
budget - all with near-duplicate titles. Texts mention only some attributes, so the reward's
substring fallback, item inspection and option choice all matter.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass, field, replace
from pathlib import Path
from random import Random
from typing import Any

from ..core.seeding import make_random
from .lexicon import ATTRIBUTE_GROUPS, CATEGORIES, MODIFIERS, OPTION_POOLS, ProductType
from .reward import get_attribute_reward

__all__ = ["RawData", "generate_raw", "write_raw", "FILE_NAMES", "option_value"]

FILE_NAMES = {
    "products": "items_shuffle.json",
    "attributes": "items_ins_v2.json",
    "human": "items_human_ins.json",
}

# Option dimension in the lexicon -> option name on the product page (WebShop's raw names).
_OPTION_NAMES = {
    "color": "Color",
    "scent": "Scent",
    "flavor": "Flavor Name",
    "coffee_flavor": "Flavor Name",
    "tp_flavor": "Flavor Name",
    "count": "Item Package Quantity",
    "style": "Style",
    "phone_model": "Style",
    "tablet_model": "Style",
    "material": "Material",
}
_SECOND_DIM = {
    "beauty": "count",
    "electronics": "style",
    "fashion": "material",
    "grocery": "count",
    "garden": "material",
}
_NEGATIVE_KINDS = ("missing", "missing", "missing", "budget", "budget", "options", "missing", "options")
_FAMILY_SIZES = (1, 2, 3, 3, 4, 4, 5, 5, 6, 7)  # target + up to 6 hard negatives
_NUMBER_WORDS = {
    "5": "five",
    "6": "six",
    "7": "seven",
    "8": "eight",
    "9": "nine",
    "10": "ten",
    "11": "eleven",
    "12": "twelve",
}


def option_value(raw: str) -> str:
    """An option value as WebShop's loader stores it: stripped, ``/`` to `` | ``, lower-cased."""
    return raw.strip().replace("/", " | ").lower()


@dataclass
class RawData:
    """The three data files, as loaded by ``json.load``."""

    products: list[dict[str, Any]]
    attributes: dict[str, dict[str, Any]]
    human: dict[str, list[dict[str, Any]]]


@dataclass
class _Draft:
    """A product before rendering: what the generator knows and the texts will (partly) say."""

    ptype: ProductType
    brand: str
    modifier: str
    attributes: list[str]
    title_attrs: list[str]
    bullet_attrs: list[str]
    desc_attrs: list[str]
    options: dict[str, list[str]]
    price: tuple[float, float | None]
    template: int
    hint: str | None
    extras: dict[str, Any] = field(default_factory=dict)


def _title_case(text: str) -> str:
    return " ".join(w if any(c.isdigit() for c in w) else w.capitalize() for w in text.split())


def _price(rng: Random, lo: float, hi: float) -> float:
    return round(int(rng.uniform(lo, hi)) + rng.choice((0.99, 0.95, 0.49, 0.0, 0.89)), 2)


def _draft(rng: Random, ptype: ProductType, brands: tuple[str, ...]) -> _Draft:
    pool = sorted({a for g in ptype.groups for a in ATTRIBUTE_GROUPS[g]})
    attributes = rng.sample(pool, min(len(pool), rng.randint(3, 6)))
    options: dict[str, list[str]] = {}
    dims = list(ptype.options)
    if len(dims) == 1 and rng.random() < 0.8:  # a second dimension, so option choice matters more
        dims.append(_SECOND_DIM[ptype.category])
    dim_of: dict[str, str] = {}
    for dim in dims:
        name = _OPTION_NAMES.get(dim, "Size")
        if name in options:
            continue
        values = OPTION_POOLS[dim]
        options[name] = rng.sample(values, min(len(values), rng.randint(2, 6)))
        dim_of[name] = dim
    if rng.random() < 0.05:  # some products have no options at all
        options = {}
    lo = _price(rng, *ptype.price)
    hi = round(lo * rng.uniform(1.1, 1.6), 2) if options and rng.random() < 0.4 else None
    title_attrs = [a for a in attributes if rng.random() < 0.2][:2]
    return _Draft(
        ptype=ptype,
        brand=rng.choice(brands),
        modifier=rng.choice(MODIFIERS),
        attributes=attributes,
        title_attrs=title_attrs,
        bullet_attrs=[a for a in attributes if rng.random() < 0.3],
        desc_attrs=[a for a in attributes if rng.random() < 0.2],
        options=options,
        price=(lo, hi),
        template=rng.randrange(4),
        hint=rng.choice([v for vs in options.values() for v in vs])
        if options and rng.random() < 0.3
        else None,
        extras={"dims": dim_of},
    )


def _title(d: _Draft) -> str:
    name = _title_case(d.ptype.name)
    a = [_title_case(x) for x in d.title_attrs]
    audience = ""
    if d.ptype.query.startswith(("women's", "men's", "girls'", "boys'")):
        audience = " for " + d.ptype.query.split("'")[0].capitalize()
    if d.template == 0:
        title = f"{d.brand} {d.modifier} {' '.join(a)} {name}{audience}"
    elif d.template == 1:
        title = f"{d.brand} {name}{audience} - {', '.join(a) or d.modifier}"
    elif d.template == 2:
        title = f"{d.brand} {' '.join(a[:1])} {name}{audience}" + (f" with {a[1]}" if len(a) > 1 else "")
    else:
        title = f"{d.modifier} {name} by {d.brand}{audience}" + (f", {' & '.join(a)}" if a else "")
    if d.hint:
        title += f", {d.hint}"
    return " ".join(title.split())


_DESC = (
    "The {brand} {name} is made for everyday use.",
    "This {name} features {attr}.",
    "Designed with {attr} in mind, it fits right into your routine.",
    "Customers choose it for {attr}.",
    "Each {name} is inspected before it ships.",
    "A thoughtful gift for friends and family.",
    "Backed by our 30 day satisfaction guarantee.",
)
_BULLETS = (
    "{ATTR}: crafted for people who care about {attr}.",
    "{ATTR} - a detail you will notice from the first day.",
)
_FILLER_BULLETS = (
    "QUALITY YOU CAN TRUST: every item is checked by our team.",
    "WHAT YOU GET: one {name} and our friendly customer service.",
    "EASY RETURNS: not satisfied? Contact us for a replacement.",
)


def _texts(rng: Random, d: _Draft) -> tuple[str, list[str]]:
    name = d.ptype.name
    sentences = [_DESC[0].format(brand=d.brand, name=name)]
    sentences += [rng.choice(_DESC[1:4]).format(name=name, attr=a) for a in d.desc_attrs]
    sentences += [s.format(name=name) for s in rng.sample(_DESC[4:], 2)]
    bullets = [rng.choice(_BULLETS).format(ATTR=a.upper(), attr=a) for a in d.bullet_attrs]
    bullets += [b.format(name=name) for b in rng.sample(_FILLER_BULLETS, rng.randint(1, 3))]
    rng.shuffle(bullets)
    return " ".join(sentences), bullets


def _asin(rng: Random, taken: set[str]) -> str:
    alphabet = string.ascii_uppercase + string.digits
    while True:
        asin = "B0" + "".join(rng.choice(alphabet) for _ in range(8))
        if asin not in taken:
            taken.add(asin)
            return asin


def _render(rng: Random, d: _Draft, asin: str) -> dict[str, Any]:
    description, bullets = _texts(rng, d)
    lo, hi = d.price
    pricing = f"${lo:.2f}" if hi is None else f"${lo:.2f} - ${hi:.2f}"
    return {
        "asin": asin,
        "name": _title(d),
        "full_description": description,
        "small_description": bullets,
        "pricing": pricing,
        "images": [f"https://images.invalid/{asin}.jpg"],
        "customization_options": {k: [{"value": v, "image": None} for v in vs] for k, vs in d.options.items()}
        or None,
        "category": d.ptype.category,
        "query": d.ptype.query,
        "product_category": d.ptype.product_category,
        "brand": d.brand,
        "product_information": {},
        "average_rating": None,
    }


_CONTEXT = (
    " for my wife",
    " for daily use",
    " for travel",
    " for the office",
    " as a gift",
    " for my son",
    " for the living room",
    " for everyday use",
    " for summer",
    " that looks modern",
)
_OPENERS = (
    "i need",
    "i want",
    "i am looking for",
    "i'm looking for",
    "find me",
    "looking for",
    "can you get me",
    "i would like",
    "please find",
    "get me",
)


def _option_phrase(rng: Random, name: str, value: str) -> str:
    if name == "Color":
        return rng.choice((f"{value}", f"in {value}", f"{value} colored", f"in the color {value}"))
    if name == "Size":
        if value in _NUMBER_WORDS and rng.random() < 0.4:
            value = _NUMBER_WORDS[value]
        return rng.choice((f"in size {value}", f"size {value}", f"{value}"))
    if name == "Flavor Name":
        return rng.choice((f"{value} flavor", f"in {value} flavor", f"{value}"))
    if name == "Scent":
        return rng.choice((f"{value} scent", f"{value} scented"))
    return rng.choice((f"{value}", f"in {value}", f"the {value} one"))


def _typo(rng: Random, text: str, rate: float) -> str:
    words = text.split(" ")
    for i, w in enumerate(words):
        if len(w) >= 5 and w.isalpha() and rng.random() < rate:
            j = rng.randrange(len(w) - 1)
            words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(words)


def _instruction(rng: Random, d: _Draft, attrs: list[str], opts: list[tuple[str, str]]) -> str:
    kind = rng.random()
    thing = d.ptype.name if kind < 0.6 else d.ptype.query if kind < 0.8 else d.ptype.name.split()[-1]
    opener = rng.choice(_OPENERS)
    article = "" if thing.endswith("s") or opener in {"find me", "get me"} else "a "
    attr_text = " and ".join(attrs)
    form = rng.randrange(3)
    if form == 0:
        text = f"{opener} {article}{attr_text} {thing}"
    elif form == 1:
        text = f"{opener} {article}{thing} that is {attr_text}"
    else:
        text = f"{opener} {article}{thing} with {attr_text}"
    for name, raw in opts:
        text += rng.choice((", ", " ", " and ")) + _option_phrase(rng, name, raw.lower())
    if rng.random() < 0.35:  # context people add; it also matches other products' texts
        text += rng.choice(_CONTEXT)
    return _typo(rng, " ".join(text.split()), 0.04)


def _human_instructions(rng: Random, d: _Draft, asin: str) -> list[dict[str, Any]]:
    records = []
    options_processed = {k.lower(): [option_value(v) for v in vs] for k, vs in d.options.items()}
    for n in range(rng.choice((2, 2, 3, 3, 4, 4, 5))):
        attrs = rng.sample(d.attributes, min(len(d.attributes), rng.choice((1, 1, 1, 1, 2, 2, 2, 2, 3, 3))))
        dims = list(d.options)
        n_opt = min(len(dims), rng.choice((0, 1, 1, 2, 2, 2, 2, 2, 2, 2)))
        opts = [(dim, rng.choice(d.options[dim])) for dim in rng.sample(dims, n_opt)]
        records.append(
            {
                "asin": asin,
                "instruction": _instruction(rng, d, attrs, opts),
                "instruction_attributes": attrs,
                "instruction_options": [option_value(v) for _, v in opts],
                "attributes": list(d.attributes),
                "options": options_processed,
                "assignment_id": f"A{asin}{n}",
                "worker_id": f"W{rng.randrange(10**6):06d}",
            }
        )
    return records


def _negative(
    rng: Random, target: _Draft, request: dict[str, Any] | None, kind: str, brands: tuple[str, ...]
) -> _Draft | None:
    neg = replace(
        target,
        attributes=list(target.attributes),
        options={k: list(v) for k, v in target.options.items()},
        title_attrs=list(target.title_attrs),
        bullet_attrs=list(target.bullet_attrs),
        desc_attrs=list(target.desc_attrs),
    )
    if rng.random() < 0.5:
        neg.brand = rng.choice(brands)
    wanted_attrs = request["instruction_attributes"] if request else target.attributes[:1]
    wanted_opts = set(request["instruction_options"]) if request else set()
    if kind == "options" and wanted_opts:
        for dim, values in neg.options.items():
            if any(option_value(v) in wanted_opts for v in values):
                pool = [
                    v for v in OPTION_POOLS[target.extras["dims"][dim]] if option_value(v) not in wanted_opts
                ]
                neg.options[dim] = rng.sample(pool, min(len(pool), max(2, len(values))))
        neg.hint = None
        return neg
    if kind == "budget" or (kind == "options" and not wanted_opts):
        lo, hi = target.price
        top = hi if hi is not None else lo
        neg.price = (round(top + rng.uniform(45, 120), 2), None)
        return neg
    dropped = rng.sample(wanted_attrs, min(len(wanted_attrs), rng.choice((1, 1, 2, 3))))
    for seq in (neg.attributes, neg.title_attrs, neg.bullet_attrs, neg.desc_attrs):
        seq[:] = [a for a in seq if a not in dropped]
    if not neg.attributes or rng.random() < 0.5:  # keep the count similar with an unrequested attribute
        pool = sorted(
            {a for g in neg.ptype.groups for a in ATTRIBUTE_GROUPS[g]}
            - set(wanted_attrs)
            - set(neg.attributes)
        )
        if pool:
            neg.attributes.append(rng.choice(pool))
    return neg if neg.attributes else None


def _still_has(product: dict[str, Any], attrs: list[str]) -> bool:
    """Whether the rendered product would still earn every attribute in ``attrs``."""
    view = {
        "Title": product["name"],
        "BulletPoints": product["small_description"],
        "Description": product["full_description"],
        "Attributes": product["_attributes"],
    }
    return get_attribute_reward(view, attrs)[1] == len(attrs)


def generate_raw(num_products: int = 1000, seed: int = 0) -> RawData:
    """Generate ``num_products`` products with attributes and human instructions.

    Example:
        >>> raw = generate_raw(50, seed=1)
        >>> len(raw.products), sorted(raw.products[0])[:3]
        (50, ['asin', 'average_rating', 'brand'])
    """
    if not isinstance(num_products, int) or num_products < 1:
        raise ValueError(f"num_products must be a positive int, got {num_products!r}")
    rng = make_random(seed, "webshop-catalog")
    types = [t for cat in CATEGORIES.values() for t in cat.types]
    taken: set[str] = set()
    products: list[dict[str, Any]] = []
    attributes: dict[str, dict[str, Any]] = {}
    human: dict[str, list[dict[str, Any]]] = {}
    while len(products) < num_products:
        ptype = rng.choice(types)
        brands = CATEGORIES[ptype.category].brands
        target = _draft(rng, ptype, brands)
        size = min(rng.choice(_FAMILY_SIZES), num_products - len(products))
        family = [(target, None)]
        asin = _asin(rng, taken)
        requests = _human_instructions(rng, target, asin) if rng.random() < 0.9 else []
        for kind in rng.sample(_NEGATIVE_KINDS, size - 1):
            request = rng.choice(requests) if requests else None
            neg = _negative(rng, target, request, kind, brands)
            if neg is not None:
                family.append((neg, (kind, request)))
        for i, (draft, why) in enumerate(family):
            this_asin = asin if i == 0 else _asin(rng, taken)
            product = _render(rng, draft, this_asin)
            product["_attributes"] = draft.attributes
            if (
                why
                and why[0] == "missing"
                and why[1]
                and _still_has(product, why[1]["instruction_attributes"])
            ):
                # Every requested attribute survived in some text: not a hard negative, skip it.
                continue
            attributes[this_asin] = {"attributes": product.pop("_attributes")}
            if rng.random() < 0.4:
                ins_attrs = rng.sample(draft.attributes, min(len(draft.attributes), rng.randint(1, 2)))
                thing = draft.ptype.query
                text = f"Find me {ins_attrs[0]} {thing}" + (
                    f" with {ins_attrs[1]}" if len(ins_attrs) > 1 else ""
                )
                attributes[this_asin].update(instruction=text, instruction_attributes=ins_attrs)
            products.append(product)
        if requests:
            human[asin] = requests
    products = products[:num_products]
    kept = {p["asin"] for p in products}
    attributes = {k: v for k, v in attributes.items() if k in kept}
    human = {k: v for k, v in human.items() if k in kept}
    rng.shuffle(products)
    return RawData(products, attributes, human)


def write_raw(raw: RawData, directory: str | Path) -> dict[str, Path]:
    """Write ``items_shuffle.json``, ``items_ins_v2.json`` and ``items_human_ins.json`` into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for key, obj in (("products", raw.products), ("attributes", raw.attributes), ("human", raw.human)):
        paths[key] = directory / FILE_NAMES[key]
        paths[key].write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return paths
