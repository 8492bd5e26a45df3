"""WebShop's reward, component by component, with every quirk of the benchmark kept.

* ``get_reward`` - ``R = r_type * (N_att + N_opt + 1[price <= price_upper]) / (|att| + |opt| + 1)``
  and its breakdown (the ``info["evaluation"]`` dict).
* ``get_type_reward`` - ``r_type`` from query, breadcrumb and title-noun overlap.
* ``get_attribute_reward`` - fuzzy (> 85) match against ``Attributes``, else substring of the texts.
* ``get_option_reward`` - colour-normalised fuzzy (> 85) match of chosen options.
* ``NounTagger`` - which title tokens are nouns: spaCy when installed with ``en_core_web_sm``,
  else an offline tagger learnt from spaCy's tags on generated titles, else a flagged heuristic
  fallback.

Quirks kept on purpose (they change scores): ``title_score`` divides by the *list* length of the
goal's nouns (duplicates count) and is 0.2 when the goal has none; the ``r_type`` overrides run in
order (0.5, then 0.1, then 0.0); ``r_price`` is a bool added as 1/0; synthetic goals' dict options
are compared as ``(name, value)`` tuples; matches need a score strictly above 85.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from .lexicon import title_nouns
from .normalize import normalize_color, token_set_ratio

__all__ = ["NounTagger", "get_attribute_reward", "get_option_reward", "get_reward", "get_type_reward"]

_FALLBACK_STOP = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with from pack count size set inch oz fl ounce new women men womens mens "
    "kids large small medium free".split()
)


class NounTagger:
    """Noun and proper-noun extraction for ``r_type`` (WebShop uses spaCy ``NOUN``/``PROPN`` tags).

    Args:
        mode: ``"auto"`` (spaCy if ``en_core_web_sm`` loads, else lexicon), ``"spacy"``,
            ``"lexicon"`` (``lexicon.title_nouns``: spaCy's tags on generated titles, predicted
            offline by ``titletagger.TitleNounTagger``; not exact on every unseen title, see
            ``benchmarks/RESULTS.md``) or ``"fallback"`` (every alphabetic token of 3+ letters that
            is not a stop word; for real data without spaCy).
    """

    def __init__(self, mode: str = "auto"):
        if mode not in {"auto", "spacy", "lexicon", "fallback"}:
            raise ValueError(f"NounTagger mode must be auto/spacy/lexicon/fallback, got {mode!r}")
        self._nlp = None
        if mode in {"auto", "spacy"}:
            self._nlp = _load_spacy()
            if self._nlp is None and mode == "spacy":
                raise RuntimeError("NounTagger(mode='spacy') needs spaCy and en_core_web_sm installed")
            mode = "spacy" if self._nlp is not None else "lexicon"
        self.mode = mode
        self._cache: dict[str, list[str]] = {}

    def __call__(self, text: str) -> list[str]:
        hit = self._cache.get(text)
        if hit is None:
            hit = self._tag(text)
            if len(self._cache) < 200_000:
                self._cache[text] = hit
        return hit

    def _tag(self, text: str) -> list[str]:
        if self.mode == "spacy":
            return [t.text.lower() for t in self._nlp(text) if t.pos_ in ("PNOUN", "NOUN", "PROPN")]
        if self.mode == "lexicon":
            return title_nouns(text)
        return [w for w in re.findall(r"[a-z]{3,}", text.lower()) if w not in _FALLBACK_STOP]


@lru_cache(maxsize=1)
def _load_spacy() -> Any:
    try:
        import spacy

        return spacy.load("en_core_web_sm")
    except Exception:  # spaCy or its model missing: the lexicon tagger takes over
        return None


def _breadcrumb(value: str) -> set[str]:
    return {part.strip() for part in value.split("›")}


def get_type_reward(
    product: Mapping[str, Any], goal: Mapping[str, Any], tagger: NounTagger
) -> dict[str, Any]:
    """``r_type`` with its parts ``query_match``, ``category_match`` and ``title_score``."""
    query_match = product["query"] == goal["query"]
    category_match = (
        len(_breadcrumb(product["product_category"]) & _breadcrumb(goal["product_category"])) >= 2
    )
    bought = tagger(product["name"])
    wanted = tagger(goal["name"])
    # Divide by the list length (duplicates count), and 0.2 when the goal name has no noun at all.
    title_score = len(set(bought) & set(wanted)) / len(wanted) if wanted else 0.2
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {
        "r_type": r_type,
        "query_match": query_match,
        "category_match": category_match,
        "title_score": title_score,
    }


def get_attribute_reward(product: Mapping[str, Any], goal_attributes: Iterable[str]) -> tuple[float, int]:
    """``(r_att, N_att)``: an attribute counts if some product ``Attributes`` entry scores > 85, else
    if it is a substring of the lower-cased title, joined bullets or description."""
    goal_attributes = list(goal_attributes)
    title = product["Title"].lower()
    bullets = " ".join(product["BulletPoints"]).lower()
    description = product["Description"].lower()
    matches = 0
    for wanted in goal_attributes:
        if any(token_set_ratio(have, wanted) > 85 for have in product["Attributes"]):
            matches += 1
        elif wanted in title or wanted in bullets or wanted in description:
            matches += 1
    return (matches / len(goal_attributes) if goal_attributes else 0.0), matches


def get_option_reward(chosen: Iterable[Any], goal_options: Iterable[Any]) -> tuple[float | None, int]:
    """``(r_option, N_opt)``: each goal option counts once if some chosen option scores > 85 after
    colour normalisation. ``r_option`` is None when the goal has no options."""
    chosen = [normalize_color(o) for o in chosen]
    wanted = [normalize_color(o) for o in goal_options]
    matches = sum(1 for g in wanted if any(token_set_ratio(p, g) > 85 for p in chosen))
    return (matches / len(wanted) if wanted else None), matches


def get_reward(
    product: Mapping[str, Any],
    goal: Mapping[str, Any],
    price: float,
    options: Mapping[str, str],
    tagger: NounTagger,
) -> tuple[float, dict[str, Any]]:
    """The purchase reward in [0, 1] and the breakdown WebShop reports (``verbose=True``)."""
    type_info = get_type_reward(product, goal, tagger)
    price_upper = goal["price_upper"]
    r_price = (price <= price_upper) if price_upper > 0 else None
    r_att, n_att = get_attribute_reward(product, goal["attributes"])
    goal_options = goal["goal_options"]
    # Synthetic goals hold a dict: WebShop compares its (name, value) items, not the values.
    compared = list(goal_options.items()) if isinstance(goal_options, dict) else list(goal_options)
    r_option, n_opt = get_option_reward(list(options.values()), compared)
    denominator = len(goal["attributes"]) + len(goal_options) + 1
    reward = (n_att + n_opt + int(bool(r_price))) / denominator * type_info["r_type"]
    info: dict[str, Any] = {**type_info, "r_att": r_att, "w_att": len(goal["attributes"]) / denominator}
    if r_option is not None:
        info["r_option"] = r_option
        info["w_option"] = len(goal_options) / denominator
    if r_price is not None:
        info["r_price"] = bool(r_price)
        info["w_price"] = 1 / denominator
    info["noun_tagger"] = tagger.mode
    return reward, info
