"""Embedded WebShop: a seeded catalog in the real data schema, BM25 search, pages, goals, reward, env.

* ``WebShopEnv`` - the Gymnasium environment ``evolver/WebShop-v0``.
* ``Catalog`` / ``load_catalog`` - products, prices, goals and splits (generated or real files).
* ``generate_raw`` / ``write_raw`` - the seeded generator and its writer (real file schemas).
* ``SearchEngine`` - BM25 (bm25s, Lucene-like analysis, k1=0.9, b=0.4), top 50.
* ``get_reward`` - WebShop's reward and breakdown.
* ``oracle_actions`` / ``rule_baseline`` - reference policies.
"""

from .catalog import Catalog, load_catalog, tokenize
from .env import ENV_ID, WebShopEnv
from .generator import RawData, generate_raw, write_raw
from .policies import oracle_actions, rule_baseline
from .reward import NounTagger, get_reward
from .search import SearchEngine
from .world import get_world

__all__ = [
    "Catalog",
    "ENV_ID",
    "NounTagger",
    "RawData",
    "SearchEngine",
    "WebShopEnv",
    "generate_raw",
    "get_reward",
    "get_world",
    "load_catalog",
    "oracle_actions",
    "rule_baseline",
    "tokenize",
    "write_raw",
]
