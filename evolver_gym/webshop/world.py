"""One loaded WebShop world per process: catalog, search index and noun tagger, shared by envs.

* ``World`` - the read-only pieces an env needs, plus task/oracle helpers that only need them.
* ``get_world`` - the cached ``World`` for a set of generation parameters (thread-safe).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import make_random
from .catalog import Catalog, load_catalog
from .reward import NounTagger, get_reward
from .search import SearchEngine

__all__ = ["World", "get_world", "clear_worlds"]

_WORLDS: dict[tuple[Any, ...], World] = {}
_LOCK = threading.Lock()


@dataclass
class World:
    catalog: Catalog
    engine: SearchEngine
    tagger: NounTagger
    key: tuple[Any, ...]
    build_seconds: dict[str, float] = field(default_factory=dict)
    _lower: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lower = {a.lower(): a for a in self.catalog.by_asin}

    def asin_from_click(self, name: str) -> str | None:
        return self._lower.get(name)

    def search(self, query: str, sponsored: int = 0) -> list[str]:
        """The result list a search shows: ``sponsored`` sponsored products, then the ranked matches.

        Sponsored products are drawn, by the query's words and the catalog, from the products the
        query does not match: the same query always shows the same ones, and they are never relevant.
        With ``sponsored`` = a multiple of the page size, the first result pages are all distractors.
        """
        ranked = self.engine.search(query)
        if sponsored <= 0:
            return ranked
        matched = set(ranked)
        others = [asin for asin in self.catalog.by_asin if asin not in matched]
        words = " ".join(query.lower().split())
        drawn = make_random("webshop-sponsored", self.key[:3], words).sample(others, min(sponsored, len(others)))
        return drawn + ranked

    def reward(
        self, goal: dict[str, Any], asin: str, options: dict[str, str]
    ) -> tuple[float, dict[str, Any]]:
        """The reward of buying ``asin`` with ``options`` for ``goal``, and its breakdown."""
        return get_reward(self.catalog.by_asin[asin], goal, self.catalog.prices[asin], options, self.tagger)


def get_world(
    *,
    num_products: int = 1000,
    seed: int = 0,
    goals: str = "human",
    data_dir: str | Path | None = None,
    index_dir: str | Path | None = None,
    noun_tagger: str = "auto",
) -> World:
    """The process-wide world for these parameters, built on first use."""
    key = (num_products, seed, goals, str(data_dir) if data_dir else None, noun_tagger)
    world = _WORLDS.get(key)
    if world is not None:
        return world
    with _LOCK:
        world = _WORLDS.get(key)
        if world is None:
            t0 = time.perf_counter()
            catalog = load_catalog(num_products=num_products, seed=seed, goals=goals, data_dir=data_dir)
            t1 = time.perf_counter()
            engine = SearchEngine(catalog.products, index_dir=index_dir)
            t2 = time.perf_counter()
            mode = noun_tagger
            if mode == "auto":
                # Generated titles: the offline tagger learnt from spaCy (lexicon); real ones need spaCy.
                mode = "lexicon" if catalog.generated else ("spacy" if _has_spacy() else "fallback")
            world = World(catalog, engine, NounTagger(mode), key, {"catalog": t1 - t0, "index": t2 - t1})
            _WORLDS[key] = world
    return world


def _has_spacy() -> bool:
    from .reward import _load_spacy

    return _load_spacy() is not None


def clear_worlds() -> None:
    """Forget every cached world (tests and benchmarks use this to measure build time)."""
    with _LOCK:
        _WORLDS.clear()
