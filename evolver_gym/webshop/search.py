"""BM25 product search with a Lucene-like English analyzer, on ``bm25s``.

* ``analyze`` - lower-case, drop English possessives, split into word tokens, drop Lucene's 33
  English stop words, Porter-stem (PyStemmer) - Anserini's default English analysis, closely.
* ``document_text`` - upstream's indexed text: ``lower(Title + Description + BulletPoints[0] + option_text)``.
* ``SearchEngine`` - ``bm25s`` with ``method="lucene"``, ``k1=0.9``, ``b=0.4``; top 50 hits, ties
  by catalog order; results cached per query; the index optionally saved to / loaded from disk.

Rankings are BM25-equivalent to WebShop's pyserini index, not byte-identical (Lucene encodes
document lengths lossily and its tokenizer follows UAX#29 in more detail).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import Stemmer

__all__ = ["LUCENE_STOPWORDS", "SEARCH_RETURN_N", "SearchEngine", "analyze", "document_text"]

SEARCH_RETURN_N = 50
LUCENE_STOPWORDS = frozenset(
    (
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    )
)
_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|[^\W_]+")
_POSSESSIVE = re.compile(r"['’]s\b")
_STEMMER = Stemmer.Stemmer("porter")
_STEM_CACHE: dict[str, str] = {}


def analyze(text: str) -> list[str]:
    """Index/query terms of ``text``.

    Example:
        >>> analyze("Women's Running Shoes, for the BEACH")
        ['women', 'run', 'shoe', 'beach']
    """
    words = [w for w in _TOKEN.findall(_POSSESSIVE.sub("", text.lower())) if w not in LUCENE_STOPWORDS]
    out = []
    for w in words:
        stem = _STEM_CACHE.get(w)
        if stem is None:
            # Snowball's Porter stems "s" to "" (Lucene keeps it): never index an empty term.
            stem = _STEMMER.stemWord(w) or w
            if len(_STEM_CACHE) < 1_000_000:
                _STEM_CACHE[w] = stem
        out.append(stem)
    return out


def document_text(product: dict[str, Any]) -> str:
    """The text WebShop indexes for a product."""
    option_text = ", and ".join(f"{name}: {', '.join(values)}" for name, values in product["options"].items())
    bullet = product["BulletPoints"][0] if product["BulletPoints"] else ""
    return f"{product['Title']} {product['Description']} {bullet} {option_text}".lower()


class SearchEngine:
    """Top-50 BM25 search over a list of products.

    Args:
        products: Loaded products (``catalog.Catalog.products``).
        index_dir: Where to keep the index on disk (a subfolder per corpus fingerprint); ``None``
            builds it in memory only.
        cache_size: How many query results to keep.

    Example:
        >>> from evolver_gym.webshop.catalog import load_catalog
        >>> engine = SearchEngine(load_catalog(num_products=100).products)
        >>> len(engine.search("shampoo")) <= 50
        True
    """

    def __init__(
        self, products: list[dict[str, Any]], index_dir: str | Path | None = None, cache_size: int = 4096
    ):
        self.asins = [p["asin"] for p in products]
        self._products = products
        self._cache: OrderedDict[tuple[str, ...], list[str]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        docs = [analyze(document_text(p)) for p in products]
        fingerprint = hashlib.blake2b(digest_size=12)
        for asin, doc in zip(self.asins, docs, strict=True):
            fingerprint.update(asin.encode())
            fingerprint.update(" ".join(doc).encode())
        self.fingerprint = fingerprint.hexdigest()
        path = Path(index_dir) / f"webshop-bm25-{self.fingerprint}" if index_dir is not None else None
        if path is not None and (path / "params.index.json").is_file():
            self.retriever = bm25s.BM25.load(str(path), show_progress=False)
            self.vocab = self.retriever.vocab_dict
        else:
            self.vocab = {}
            ids = [[self.vocab.setdefault(t, len(self.vocab)) for t in doc] for doc in docs]
            self.retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
            self.retriever.index(bm25s.tokenization.Tokenized(ids=ids, vocab=self.vocab), show_progress=False)
            if path is not None:
                path.mkdir(parents=True, exist_ok=True)
                self.retriever.save(str(path), show_progress=False)
        # bm25s adds an empty-token id without a column; only ids below this count can be scored.
        self._num_terms = len(self.retriever.scores["indptr"]) - 1

    def __getstate__(self) -> dict[str, Any]:
        # A copy (pickled into a vector-env worker) gets its own cache lock; locks cannot be pickled.
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[str]:
        """ASINs of the best ``k`` matches of ``query`` (documents without a query term never match)."""
        keywords = query.lower().split()
        if keywords and keywords[0] in {"<r>", "<a>", "<c>", "<q>"}:
            return self._special(keywords, k)
        terms = tuple(analyze(query))
        key = terms + (f"#k={k}",)
        with self._lock:  # envs in threads share one engine; the LRU bookkeeping must not race
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        ids = [i for i in (self.vocab.get(t) for t in terms) if i is not None and i < self._num_terms]
        result: list[str] = []
        if ids:
            scores = self.retriever.get_scores_from_ids(ids)
            positive = np.flatnonzero(scores > 0)
            if len(positive) > k:
                # The k-th best score, then every doc at or above it, so ties go to catalog order.
                kth = np.partition(scores[positive], len(positive) - k)[len(positive) - k]
                positive = positive[scores[positive] >= kth]
            order = positive[np.lexsort((positive, -scores[positive]))][:k]
            result = [self.asins[i] for i in order]
        with self._lock:
            self._cache[key] = result
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return result

    def _special(self, keywords: list[str], k: int) -> list[str]:
        """WebShop's debug listings: ``<r>`` random, ``<a>`` attribute, ``<c>`` category, ``<q>`` query."""
        rest = " ".join(keywords[1:])
        if keywords[0] == "<r>":
            rng = np.random.default_rng(int(hashlib.blake2b(rest.encode(), digest_size=4).hexdigest(), 16))
            picks = rng.choice(len(self.asins), size=min(k, len(self.asins)), replace=False)
            return [self.asins[i] for i in picks]
        field = {"<a>": "Attributes", "<c>": "category", "<q>": "query"}[keywords[0]]
        hits = []
        for p in self._products:
            value = p.get(field, "")
            if (rest in value) if isinstance(value, list) else value == rest:
                hits.append(p["asin"])
                if len(hits) == k:
                    break
        return hits
