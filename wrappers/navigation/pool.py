"""The experience pool: experiences stored and searched in Milvus.

* ``PoolConfig`` - where the pool lives (a milvus-lite file or a Milvus server URI), the embedder,
  and the retrieval defaults (top-k, similarity threshold, near-duplicate merge threshold).
* ``Hit`` - one search result: an experience and its cosine similarity to the query.
* ``ExperiencePool`` - add (with near-duplicate merging), search, batch search, get, delete,
  usage counts, stats, JSONL export and import.

Storage is always Milvus through ``pymilvus.MilvusClient``: a URI ending in ``.db`` is a milvus-lite
data directory (embedded, no service), anything else a Milvus server. ``when_to_use`` is embedded
with normalised vectors and searched with the COSINE metric.

Durability: milvus-lite writes every insert to its write-ahead log and hands it to the operating
system before acknowledging, so a process killed with SIGKILL loses nothing that ``add`` returned;
on reopen the log is replayed. A reopened milvus-lite collection starts *released* and is loaded
here before the first search.

Search path: milvus-lite holds an exclusive lock on its directory, so this process is the only
writer and an in-process mirror of the rows is exact; with ``search_mode="auto"`` searches on a
milvus-lite pool run on that mirror (one matrix product instead of milvus-lite's per-row Python
mask building, see ``benchmarks/experience_retrieval.py``), while on a Milvus server, where other
processes may write, they always go to the server. ``search_mode="milvus"`` forces the server path.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .embedder import Embedder
from .record import MAX_CONTENT_BYTES, MAX_ID_BYTES, MAX_WHEN_TO_USE_BYTES, Experience

__all__ = ["PoolConfig", "Hit", "ExperiencePool"]

_FIELDS = ["id", "env_id", "when_to_use", "content", "source_task_id", "success", "score",
           "created_at", "uses", "wins", "metadata"]
_LITE_REFS: dict[str, int] = {}
_LITE_LOCK = threading.Lock()
# milvus-lite is a local child process: keepalive pings buy nothing there, and pymilvus's default (every
# 10 s, also between calls) breaks the lite server's ping policy, which logs a GOAWAY "too_many_pings"
# error to stderr after half a minute without a call.
_LITE_GRPC_OPTIONS = {"grpc.keepalive_time_ms": 600_000, "grpc.keepalive_permit_without_calls": False}
_MAX_MERGED_SOURCES = 20
_INDEX_TYPES = ("auto", "FLAT", "HNSW", "IVF_FLAT")
_CONSISTENCY = ("Session", "Strong", "Bounded", "Eventually")


def _held_by_another_process(lock: Path) -> bool:
    """Whether another process holds milvus-lite's exclusive lock on ``lock`` (flock, as milvus-lite takes it)."""
    if os.name != "posix" or not lock.exists():
        return False
    import fcntl

    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


@dataclass
class PoolConfig:
    """Configuration of an :class:`ExperiencePool`."""

    uri: str = field(default="experience.db", metadata={
        "help": "milvus-lite data directory (ends in .db) or a Milvus server URI (http://host:19530)"})
    collection: str = field(default="experience", metadata={"help": "Milvus collection name"})
    token: str = field(default="", metadata={"help": "Milvus server token (user:password), if any"})
    embedding_model: str | None = field(default=None, metadata={
        "help": "sentence-transformers name or path; None = the packaged all-MiniLM-L6-v2"})
    device: str = field(default="cpu", metadata={"help": "torch device of the embedder"})
    top_k: int = field(default=3, metadata={"help": "experiences returned per query"})
    threshold: float = field(default=0.3, metadata={"help": "minimum cosine similarity of a hit"})
    merge_threshold: float = field(default=0.95, metadata={
        "help": "cosine similarity at or above which a new experience merges into an existing one "
                "of the same environment (> 1 disables merging)"})
    consistency: str = field(default="Session", metadata={
        "help": "server searches and reads: Session (this process's writes at once, other processes' within "
                "about a second; fast), Strong (every acknowledged write, but each search waits for the server's "
                "next time tick, ~200 ms), Bounded or Eventually. Counts, scans and compact() are always Strong"})
    merge_on_add: bool | None = field(default=None, metadata={
        "help": "merge a new experience into a stored near-duplicate inside add(); None = on for milvus-lite "
                "(one writer), off on a server, where that read-modify-write would race with other writers "
                "(compact() merges there instead; duplicates within one add() call are merged either way)"})
    search_mode: str = field(default="auto", metadata={
        "help": "auto (in-process mirror for milvus-lite, server search otherwise), milvus or memory"})
    index_type: str = field(default="auto", metadata={
        "help": "Milvus vector index: auto (FLAT for milvus-lite, HNSW on a server), FLAT, HNSW or IVF_FLAT"})
    hnsw_m: int = field(default=16, metadata={"help": "HNSW graph degree M (server index)"})
    hnsw_ef_construction: int = field(default=200, metadata={"help": "HNSW efConstruction (server index)"})
    search_ef: int = field(default=64, metadata={
        "help": "HNSW ef at search time (>= top_k; higher = better recall, slower); IVF_FLAT uses it as nprobe"})
    dim: int | None = field(default=None, metadata={
        "help": "vector dimension; None = the embedder's (then the embedder loads at once, not on first use)"})

    def __post_init__(self) -> None:
        if not isinstance(self.uri, str) or not self.uri:
            raise ValueError(f"PoolConfig.uri must be a non-empty string, got {self.uri!r}")
        if not isinstance(self.top_k, int) or self.top_k < 1:
            raise ValueError(f"PoolConfig.top_k must be a positive int, got {self.top_k!r}")
        if self.dim is not None and (not isinstance(self.dim, int) or self.dim < 1):
            raise ValueError(f"PoolConfig.dim must be a positive int or None, got {self.dim!r}")
        if not -1.0 <= float(self.threshold) <= 1.0:
            raise ValueError(f"PoolConfig.threshold must lie in [-1, 1], got {self.threshold!r}")
        if float(self.merge_threshold) <= 0.0:
            raise ValueError(f"PoolConfig.merge_threshold must be > 0, got {self.merge_threshold!r}")
        if self.search_mode not in ("auto", "milvus", "memory"):
            raise ValueError(f"PoolConfig.search_mode must be auto, milvus or memory, got {self.search_mode!r}")
        if self.consistency not in _CONSISTENCY:
            raise ValueError(f"PoolConfig.consistency must be one of {_CONSISTENCY}, got {self.consistency!r}")
        if self.index_type not in _INDEX_TYPES:
            raise ValueError(f"PoolConfig.index_type must be one of {_INDEX_TYPES}, got {self.index_type!r}")
        for name in ("hnsw_m", "hnsw_ef_construction", "search_ef"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"PoolConfig.{name} must be a positive int, got {value!r}")

    @property
    def is_lite(self) -> bool:
        return self.uri.endswith(".db")

    @property
    def index(self) -> str:
        """The index type used: ``index_type`` with ``auto`` resolved."""
        if self.index_type != "auto":
            return self.index_type
        return "FLAT" if self.is_lite else "HNSW"

    def index_params(self) -> dict[str, Any]:
        """Build parameters of :attr:`index`."""
        if self.index == "HNSW":
            return {"M": self.hnsw_m, "efConstruction": self.hnsw_ef_construction}
        if self.index == "IVF_FLAT":
            return {"nlist": 1024}
        return {}

    def search_params(self, top_k: int) -> dict[str, Any]:
        """Search parameters of :attr:`index` for ``top_k`` results."""
        params: dict[str, Any] = {}
        if self.index == "HNSW":
            params = {"ef": max(self.search_ef, top_k)}
        elif self.index == "IVF_FLAT":
            params = {"nprobe": self.search_ef}
        return {"metric_type": "COSINE", "params": params}


@dataclass
class Hit:
    """One search result."""

    experience: Experience
    score: float


@functools.lru_cache(maxsize=1)
def _blas_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


class _Mirror:
    """The rows of a single-writer pool held in memory: records, env codes and a vector matrix."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.records: list[Experience] = []
        self.index: dict[str, int] = {}
        self.codes = np.zeros(0, dtype=np.int32)
        self.vectors = np.zeros((0, dim), dtype=np.float32)
        self.env_codes: dict[str, int] = {}
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def _code(self, env_id: str) -> int:
        return self.env_codes.setdefault(env_id, len(self.env_codes))

    def put(self, records: Sequence[Experience], vectors: np.ndarray) -> None:
        for rec, vec in zip(records, vectors):
            row = self.index.get(rec.id)
            if row is None:
                if self._n == len(self.vectors):  # grow geometrically: amortised O(1) appends
                    cap = max(64, 2 * self._n)
                    self.vectors = np.resize(self.vectors, (cap, self.dim))
                    self.codes = np.resize(self.codes, cap)
                row = self._n
                self._n += 1
                self.records.append(rec)
                self.index[rec.id] = row
            else:
                self.records[row] = rec
            self.vectors[row] = vec
            self.codes[row] = self._code(rec.env_id)

    def delete(self, ids: Iterable[str]) -> None:
        rows = sorted({self.index[i] for i in ids if i in self.index})
        if not rows:
            return
        keep = np.ones(self._n, dtype=bool)
        keep[rows] = False
        self.vectors = self.vectors[: self._n][keep]
        self.codes = self.codes[: self._n][keep]
        self.records = [r for r, k in zip(self.records, keep) if k]
        self.index = {r.id: i for i, r in enumerate(self.records)}
        self._n = len(self.records)

    def search(self, queries: np.ndarray, k: int, env_id: str | None) -> list[list[tuple[int, float]]]:
        n = self._n
        if n == 0:
            return [[] for _ in range(len(queries))]
        # One BLAS thread: waking a thread pool costs more than the product itself at these sizes
        # (10k x 384 by one query: 0.6 ms on one thread, ~7 ms on two on a 2-core machine).
        with _blas_controller().limit(limits=1, user_api="blas"):
            sims = self.vectors[:n] @ queries.T  # (n, m): cosine, rows and queries are unit-norm
        if env_id is not None:
            code = self.env_codes.get(env_id)
            if code is None:
                return [[] for _ in range(len(queries))]
            sims[self.codes[:n] != code] = -np.inf
        k = min(k, n)
        top = np.argpartition(-sims, k - 1, axis=0)[:k] if k < n else np.tile(np.arange(n)[:, None], (1, len(queries)))
        out = []
        for j in range(len(queries)):
            rows = top[:, j]
            rows = rows[np.argsort(-sims[rows, j], kind="stable")]
            out.append([(int(r), float(sims[r, j])) for r in rows if np.isfinite(sims[r, j])])
        return out


def _filter_expr(env_id: str | None) -> str:
    return "" if env_id is None else f"env_id == {json.dumps(env_id)}"


class ExperiencePool:
    """Experiences in Milvus, retrieved by the similarity of their ``when_to_use`` to a query.

    Args:
        config: A :class:`PoolConfig`, or a URI (a milvus-lite file path or a Milvus server
            address) as a shorthand for ``PoolConfig(uri=...)``; keyword overrides replace its fields.
        embedder: A shared :class:`Embedder` (built from the config when omitted).

    Example:
        >>> with ExperiencePool(uri="/tmp/pool.db") as pool:                     # doctest: +SKIP
        ...     pool.add([Experience("buying shoes in a size", "click the size, then Buy Now")])
        ...     pool.search("i need running shoes size 9")[0].experience.content
        'click the size, then Buy Now'
    """

    def __init__(self, config: PoolConfig | str | os.PathLike | None = None, *, embedder: Embedder | None = None,
                 **overrides: Any) -> None:
        if isinstance(config, (str, os.PathLike)):
            config = PoolConfig(uri=os.fspath(config))
        elif config is not None and not isinstance(config, PoolConfig):
            raise TypeError(f"config must be a PoolConfig or a URI string, got {type(config).__name__}")
        self.config = replace(config or PoolConfig(), **overrides) if overrides else (config or PoolConfig())
        self._embedder = embedder
        self.dim = int(self.config.dim) if self.config.dim is not None else self.embedder.dim
        if embedder is not None and embedder.dim != self.dim:
            raise ValueError(f"PoolConfig.dim={self.dim} but the embedder makes vectors of dim {embedder.dim}")
        self._lock = threading.RLock()
        self._closed = False
        self._lite_path = os.path.abspath(self.config.uri) if self.config.is_lite else None
        self._client = self._connect()
        self._ensure_collection()
        use_mirror = self.config.search_mode == "memory" or (
            self.config.search_mode == "auto" and self.config.is_lite)
        self._mirror = _Mirror(self.dim) if use_mirror else None
        if self._mirror is not None:
            self._load_mirror()

    @property
    def embedder(self) -> Embedder:
        """The embedder, built from the config on first use when none was given."""
        if self._embedder is None:
            self._embedder = Embedder(self.config.embedding_model, device=self.config.device)
            if getattr(self, "dim", None) is not None and self._embedder.dim != self.dim:
                raise ValueError(f"the pool stores dim {self.dim}, the embedder makes dim {self._embedder.dim}")
        return self._embedder

    # -- connection ------------------------------------------------------------------------
    def _connect(self) -> Any:
        from pymilvus import MilvusClient

        if self._lite_path is not None:
            Path(self._lite_path).parent.mkdir(parents=True, exist_ok=True)
            # milvus-lite logs its own traceback before pymilvus raises a vaguer error; ours says why in one line.
            quiet = logging.getLogger("milvus_lite.server_manager")
            level = quiet.level
            quiet.setLevel(logging.CRITICAL)
            try:
                client = MilvusClient(self._lite_path, grpc_options=_LITE_GRPC_OPTIONS)
            except Exception as exc:
                if _held_by_another_process(Path(self._lite_path) / "LOCK"):
                    raise RuntimeError(f"cannot open the experience pool {self._lite_path!r}: another process holds "
                                       f"it (milvus-lite allows one process per pool; stop that process or use a "
                                       f"Milvus server)") from exc
                raise RuntimeError(f"cannot open the experience pool {self._lite_path!r}: {exc}") from exc
            finally:
                quiet.setLevel(level)
            with _LITE_LOCK:
                _LITE_REFS[self._lite_path] = _LITE_REFS.get(self._lite_path, 0) + 1
            return client
        return MilvusClient(uri=self.config.uri, token=self.config.token)

    def _ensure_collection(self) -> None:
        from pymilvus import DataType, MilvusClient

        c, name = self._client, self.config.collection
        if not c.has_collection(name):
            schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
            schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=MAX_ID_BYTES)
            schema.add_field("env_id", DataType.VARCHAR, max_length=MAX_ID_BYTES)
            schema.add_field("when_to_use", DataType.VARCHAR, max_length=MAX_WHEN_TO_USE_BYTES)
            schema.add_field("content", DataType.VARCHAR, max_length=MAX_CONTENT_BYTES)
            schema.add_field("source_task_id", DataType.VARCHAR, max_length=MAX_ID_BYTES)
            schema.add_field("success", DataType.BOOL)
            schema.add_field("score", DataType.DOUBLE)
            schema.add_field("created_at", DataType.DOUBLE)
            schema.add_field("uses", DataType.INT64)
            schema.add_field("wins", DataType.INT64)
            schema.add_field("metadata", DataType.JSON)
            schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dim)
            index = c.prepare_index_params()
            index.add_index(field_name="vector", index_type=self.config.index, metric_type="COSINE",
                            params=self.config.index_params())
            extra = {} if self.config.is_lite else {"consistency_level": self.config.consistency}
            c.create_collection(name, schema=schema, index_params=index, **extra)
        else:
            dims = [f.get("params", {}).get("dim") for f in c.describe_collection(name)["fields"]
                    if f["name"] == "vector"]
            if not dims or int(dims[0]) != self.dim:
                raise ValueError(f"collection {name!r} at {self.config.uri!r} stores vectors of dim {dims}, "
                                 f"but this pool was configured for dim {self.dim}")
        # A reopened milvus-lite collection comes back released: search would fail until loaded.
        state = str(c.get_load_state(name).get("state", ""))
        if "Loaded" not in state or "NotLoad" in state:
            c.load_collection(name)

    def _scan(self, expr: str, fields: list[str], batch: int = 2000) -> Iterable[list[dict[str, Any]]]:
        """Every row matching ``expr``, in pages."""
        if self._lite_path is not None:
            # milvus-lite pages with offset/limit; its query iterator needs a timestamp RPC it lacks.
            offset = 0
            while True:
                rows = self._client.query(self.config.collection, filter=expr or 'id != ""',
                                          output_fields=fields, limit=batch, offset=offset)
                if not rows:
                    return
                yield list(rows)
                offset += len(rows)
        # Strong: a scan (all(), compact(), the mirror) must see every write acknowledged before it.
        it = self._client.query_iterator(self.config.collection, batch_size=batch, filter=expr,
                                         output_fields=fields, consistency_level="Strong")
        try:
            while rows := it.next():
                yield list(rows)
        finally:
            it.close()

    def _load_mirror(self) -> None:
        for rows in self._scan("", [*_FIELDS, "vector"]):
            self._mirror.put([self._to_record(r) for r in rows],
                             np.asarray([r["vector"] for r in rows], dtype=np.float32))

    # -- conversion --------------------------------------------------------------------------
    @staticmethod
    def _to_record(row: dict[str, Any]) -> Experience:
        data = {k: row[k] for k in _FIELDS if k in row}
        meta = data.get("metadata")
        data["metadata"] = json.loads(meta) if isinstance(meta, (str, bytes)) else dict(meta or {})
        return Experience.from_dict(data)

    @staticmethod
    def _to_row(rec: Experience, vec: np.ndarray) -> dict[str, Any]:
        row = rec.to_dict()
        row["vector"] = np.asarray(vec, dtype=np.float32)
        return row

    # -- writing -------------------------------------------------------------------------
    def add(self, experiences: Experience | Sequence[Experience], *, vectors: np.ndarray | None = None,
            merge: bool = True) -> list[str]:
        """Store experiences; return the id each one ended up under.

        A new experience whose ``when_to_use`` is at least ``merge_threshold`` similar to an existing
        one of the same environment (or to an earlier one of the same call) is merged into it: the
        existing id is kept, the content of the better-scoring one wins, and the source task is
        remembered in ``metadata["merged_from"]``. ``vectors`` may supply precomputed embeddings.
        """
        if isinstance(experiences, Experience):
            experiences = [experiences]
        recs = list(experiences)
        bad = [r for r in recs if not isinstance(r, Experience)]
        if bad:
            raise TypeError(f"ExperiencePool.add takes Experience records, got {bad[0]!r:.80}")
        if not recs:
            return []
        vecs = self.embedder.encode([r.when_to_use for r in recs]) if vectors is None else \
            np.asarray(vectors, dtype=np.float32)
        if vecs.shape != (len(recs), self.dim):
            raise ValueError(f"vectors must have shape {(len(recs), self.dim)}, got {vecs.shape}")
        with self._lock:
            self._check_open()
            final: dict[str, tuple[Experience, np.ndarray]] = {}
            ids: list[str] = []
            for rec, vec in zip(recs, vecs):
                target = self._merge_target(rec, vec, final) if merge else None
                if target is None:
                    final[rec.id] = (rec, vec)
                    ids.append(rec.id)
                else:
                    old, old_vec = target
                    final[old.id] = (self._merged(old, rec), old_vec)
                    ids.append(old.id)
            rows = [self._to_row(r, v) for r, v in final.values()]
            self._client.upsert(self.config.collection, rows)
            if self._mirror is not None:
                self._mirror.put([r for r, _ in final.values()], np.stack([v for _, v in final.values()]))
            return ids

    def _merge_target(self, rec: Experience, vec: np.ndarray,
                      pending: dict[str, tuple[Experience, np.ndarray]]) -> tuple[Experience, np.ndarray] | None:
        if self.config.merge_threshold > 1.0:
            return None
        best, best_sim = None, float(self.config.merge_threshold)
        if rec.id in pending:
            return pending[rec.id]
        for other, ovec in pending.values():  # earlier records of this same call
            sim = float(ovec @ vec)
            if other.env_id == rec.env_id and sim >= best_sim:
                best, best_sim = (other, ovec), sim
        merge_stored = self.config.is_lite if self.config.merge_on_add is None else self.config.merge_on_add
        if not merge_stored:
            return best
        hits = self._search_vectors(vec[None, :], 1, best_sim, rec.env_id, with_vectors=True)[0]
        if hits and hits[0][1] >= best_sim:
            found, _, fvec = hits[0]
            best = pending.get(found.id, (found, fvec))
        return best

    @staticmethod
    def _merged(old: Experience, new: Experience) -> Experience:
        better = (new.success, new.score) > (old.success, old.score)
        sources = list(old.metadata.get("merged_from", []))
        if new.source_task_id and new.source_task_id not in sources and new.source_task_id != old.source_task_id:
            sources = (sources + [new.source_task_id])[-_MAX_MERGED_SOURCES:]
        meta = {**old.metadata, "merged_from": sources, "merges": int(old.metadata.get("merges", 0)) + 1}
        return replace(old, content=new.content if better else old.content,
                       success=old.success or new.success, score=max(old.score, new.score), metadata=meta)

    def compact(self, env_id: str | None = None) -> dict[str, str]:
        """Merge stored near-duplicates; returns ``{removed id: id it was merged into}``.

        ``add`` merges a new experience into one it can see, but two processes adding near-duplicates
        at the same moment each see nothing yet and both insert. Compaction settles that afterwards,
        deterministically: rows of each environment are taken oldest first (``created_at``, then id);
        a row at least ``merge_threshold`` similar to a kept row is merged into it (content of the
        better one, sources, uses and wins added up) and deleted. Run it from one process (e.g. rank 0
        between rollouts or at the end of a run); a row added while it runs waits for the next call.
        Cost: one scan of the pool and O(rows x kept rows) vector products.
        """
        if self.config.merge_threshold > 1.0:
            return {}
        with self._lock:
            self._check_open()
            by_env: dict[str, list[tuple[Experience, np.ndarray]]] = {}
            for rows in self._scan(_filter_expr(env_id), [*_FIELDS, "vector"]):
                for r in rows:
                    rec = self._to_record(r)
                    by_env.setdefault(rec.env_id, []).append((rec, np.asarray(r["vector"], dtype=np.float32)))
            removed: dict[str, str] = {}
            changed: dict[str, tuple[Experience, np.ndarray]] = {}
            for pairs in by_env.values():
                pairs.sort(key=lambda p: (p[0].created_at, p[0].id))
                kept: list[tuple[Experience, np.ndarray]] = []
                kept_vecs = np.zeros((len(pairs), self.dim), dtype=np.float32)
                for rec, vec in pairs:
                    sims = kept_vecs[: len(kept)] @ vec
                    j = int(np.argmax(sims)) if len(kept) else -1
                    if j < 0 or sims[j] < self.config.merge_threshold:
                        kept_vecs[len(kept)] = vec
                        kept.append((rec, vec))
                        continue
                    old, old_vec = kept[j]
                    merged = self._merged(old, rec)
                    merged = replace(merged, uses=old.uses + rec.uses, wins=old.wins + rec.wins)
                    kept[j] = changed[old.id] = (merged, old_vec)
                    removed[rec.id] = old.id
            if changed:
                self._client.upsert(self.config.collection, [self._to_row(r, v) for r, v in changed.values()])
            if removed:
                self._client.delete(self.config.collection, ids=list(removed))
            if self._mirror is not None:
                if changed:
                    self._mirror.put([r for r, _ in changed.values()], np.stack([v for _, v in changed.values()]))
                self._mirror.delete(removed)
            return removed

    def record_use(self, ids: Iterable[str], *, won: bool) -> None:
        """Count one more use of each experience (and a win when the episode succeeded)."""
        with self._lock:
            self._check_open()
            pairs = self._get_with_vectors(list(dict.fromkeys(ids)))
            if not pairs:
                return
            updated = [(replace(r, uses=r.uses + 1, wins=r.wins + int(bool(won))), v) for r, v in pairs]
            self._client.upsert(self.config.collection, [self._to_row(r, v) for r, v in updated])
            if self._mirror is not None:
                self._mirror.put([r for r, _ in updated], np.stack([v for _, v in updated]))

    def delete(self, ids: Iterable[str]) -> int:
        """Delete experiences by id; returns how many existed."""
        ids = list(dict.fromkeys(ids))
        with self._lock:
            self._check_open()
            present = [r.id for r in self.get(ids)]
            if present:
                self._client.delete(self.config.collection, ids=present)
                if self._mirror is not None:
                    self._mirror.delete(present)
            return len(present)

    # -- reading -------------------------------------------------------------------------
    def get(self, ids: Iterable[str]) -> list[Experience]:
        """The stored experiences with these ids (missing ids are skipped), in the given order."""
        return [r for r, _ in self._get_with_vectors(list(ids))]

    def _read_level(self) -> dict[str, Any]:
        return {} if self.config.is_lite else {"consistency_level": self.config.consistency}

    def _get_with_vectors(self, ids: list[str]) -> list[tuple[Experience, np.ndarray]]:
        self._check_open()
        if not ids:
            return []
        if self._mirror is not None:
            m = self._mirror
            return [(m.records[m.index[i]], m.vectors[m.index[i]]) for i in ids if i in m.index]
        rows = self._client.get(self.config.collection, ids=ids, output_fields=[*_FIELDS, "vector"],
                                **self._read_level())
        by_id = {r["id"]: (self._to_record(r), np.asarray(r["vector"], dtype=np.float32)) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def search(self, query: str, *, top_k: int | None = None, threshold: float | None = None,
               env_id: str | None = None) -> list[Hit]:
        """Top-k experiences for ``query`` with similarity >= threshold, best first."""
        return self.search_batch([query], top_k=top_k, threshold=threshold, env_id=env_id)[0]

    def search_batch(self, queries: Sequence[str], *, top_k: int | None = None, threshold: float | None = None,
                     env_id: str | None = None) -> list[list[Hit]]:
        """:meth:`search` for many queries with one embedding pass and one vector search."""
        if isinstance(queries, str):
            raise TypeError("search_batch takes a list of queries; use search() for one string")
        return self.search_vectors(self.embedder.encode(list(queries)), top_k=top_k, threshold=threshold,
                                   env_id=env_id)

    def search_vectors(self, vectors: np.ndarray, *, top_k: int | None = None, threshold: float | None = None,
                       env_id: str | None = None) -> list[list[Hit]]:
        """Search with precomputed unit-norm query vectors of shape ``(m, dim)``."""
        k = self.config.top_k if top_k is None else int(top_k)
        if k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k!r}")
        thr = self.config.threshold if threshold is None else float(threshold)
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(f"query vectors must have shape (m, {self.dim}), got {vectors.shape}")
        with self._lock:
            self._check_open()
            found = self._search_vectors(vectors, k, thr, env_id, with_vectors=False)
        return [[Hit(rec, score) for rec, score, _ in hits] for hits in found]

    def _search_vectors(self, vectors: np.ndarray, k: int, thr: float, env_id: str | None, *,
                        with_vectors: bool) -> list[list[tuple[Experience, float, Any]]]:
        if len(vectors) == 0:
            return []
        if self._mirror is not None:
            m = self._mirror
            return [[(m.records[r], s, m.vectors[r] if with_vectors else None) for r, s in hits if s >= thr]
                    for hits in m.search(vectors, k, env_id)]
        out_fields = [*_FIELDS, "vector"] if with_vectors else _FIELDS
        res = self._client.search(self.config.collection, data=[v for v in vectors], limit=k,
                                  filter=_filter_expr(env_id), output_fields=out_fields,
                                  search_params=self.config.search_params(k), **self._read_level())
        found = []
        for hits in res:
            row = []
            for h in hits:
                score = float(h["distance"])
                if score >= thr:
                    ent = {**h["entity"], "id": h["id"]}
                    vec = np.asarray(ent["vector"], dtype=np.float32) if with_vectors else None
                    row.append((self._to_record(ent), score, vec))
            found.append(row)
        return found

    def all(self, env_id: str | None = None) -> list[Experience]:
        """Every stored experience (of one environment when ``env_id`` is given)."""
        with self._lock:
            self._check_open()
            if self._mirror is not None:
                recs = list(self._mirror.records[: len(self._mirror)])
            else:
                recs = [self._to_record(r) for rows in self._scan(_filter_expr(env_id), _FIELDS) for r in rows]
        return [r for r in recs if env_id is None or r.env_id == env_id]

    def __len__(self) -> int:
        with self._lock:
            self._check_open()
            if self._mirror is not None:
                return len(self._mirror)
            res = self._client.query(self.config.collection, filter="", output_fields=["count(*)"],
                                     **({} if self.config.is_lite else {"consistency_level": "Strong"}))
            return int(res[0]["count(*)"])

    def stats(self) -> dict[str, Any]:
        """Counts per environment, success share, mean score, total uses and wins, where it lives."""
        recs = self.all()
        per_env: dict[str, int] = {}
        for r in recs:
            per_env[r.env_id] = per_env.get(r.env_id, 0) + 1
        uses = sum(r.uses for r in recs)
        return {
            "uri": self.config.uri, "collection": self.config.collection, "count": len(recs),
            "per_env": dict(sorted(per_env.items())),
            "success_share": (sum(r.success for r in recs) / len(recs)) if recs else None,
            "mean_score": (sum(r.score for r in recs) / len(recs)) if recs else None,
            "uses": uses, "wins": sum(r.wins for r in recs),
            "embedding_model": self._embedder.model_name if self._embedder else self.config.embedding_model,
            "dim": self.dim,
            "search": "memory" if self._mirror is not None else "milvus",
        }

    # -- JSONL ---------------------------------------------------------------------------
    def export_jsonl(self, path: str | Path, *, env_id: str | None = None) -> int:
        """Write every experience (without vectors) as one JSON line; returns the count."""
        recs = sorted(self.all(env_id), key=lambda r: (r.created_at, r.id))
        tmp = Path(f"{path}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            for r in recs:
                fh.write(r.to_json() + "\n")
        os.replace(tmp, path)  # a reader never sees a half-written export
        return len(recs)

    def import_jsonl(self, path: str | Path, *, merge: bool = True, batch_size: int = 256) -> list[str]:
        """Add the experiences of a JSONL file (re-embedded with this pool's embedder)."""
        ids: list[str] = []
        batch: list[Experience] = []
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    batch.append(Experience.from_json(line))
                except (ValueError, TypeError) as exc:
                    raise ValueError(f"{path}:{n}: not an experience record: {exc}") from exc
                if len(batch) >= batch_size:
                    ids += self.add(batch, merge=merge)
                    batch = []
        return ids + self.add(batch, merge=merge)

    # -- lifecycle -----------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"the experience pool {self.config.uri!r} is closed")

    def flush(self) -> None:
        """Seal written rows into segments (the write-ahead log already made them durable)."""
        with self._lock:
            self._check_open()
            self._client.flush(self.config.collection)

    def close(self) -> None:
        """Flush and disconnect; the last pool of a milvus-lite path releases its directory lock."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._client.flush(self.config.collection)
            finally:
                self._client.close()
                if self._lite_path is not None:
                    with _LITE_LOCK:
                        _LITE_REFS[self._lite_path] -= 1
                        last = _LITE_REFS[self._lite_path] == 0
                        if last:
                            del _LITE_REFS[self._lite_path]
                    if last:
                        from milvus_lite.server_manager import server_manager_instance

                        server_manager_instance.release_server(self._lite_path)

    def __enter__(self) -> ExperiencePool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ExperiencePool(uri={self.config.uri!r}, collection={self.config.collection!r})"
