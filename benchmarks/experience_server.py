"""Experience pool on a Milvus standalone server: startup, memory, insert rate, search latency and recall.

Starts the ``milvus`` package's embedded server in a temporary directory, once per ``--servers``
entry (``milvus``: Milvus's own segment settings; ``bulk``: ``BULK_POOL_SETTINGS``, segments
sealed at ~157k rows), so both are compared in one run. Fills one collection per index type (HNSW,
the server default, and FLAT, exact) with synthetic unit-norm vectors of the embedder's dimension
(384; embedding excluded, as in ``experience_retrieval.py``), times searches on the unflushed rows,
flushes, waits until every row is in an indexed sealed segment that the query node has loaded, then
times single-query searches (top-3, filtered by environment, records returned) from one client, at
each HNSW ``ef`` of ``--ef``. Each query is a stored vector plus noise (cosine ~0.9 to it):
"nearest" is the share of searches that return that row first; recall@3 compares the top 3 with
exact numpy search. The 2nd and 3rd neighbours of random 384-d vectors are all at cosine ~0.1 to the
query, a near-tie an approximate index orders differently, so recall@3 here is a pessimistic lower
bound.

``--nice N`` renices every thread of the server and of this process to N for the timed searches
only (a negative N needs root) and back to their previous values afterwards; "load" is the 1-minute
load average when the timed searches start.

    python benchmarks/experience_server.py [--sizes 10000 100000] [--indexes HNSW FLAT] [--ef 64 32]
        [--servers milvus bulk] [--consistency Session Strong] [--nice -5]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from collections.abc import Iterator

import numpy as np
from pymilvus import MilvusClient

from evolver_gym.core import make_rng
from wrappers.navigation import Experience, ExperiencePool
from wrappers.navigation.local_server import BULK_POOL_SETTINGS, LocalMilvusServer

DIM, ENV = 384, "evolver/WebShop-v0"
SERVERS = {"milvus": {}, "bulk": BULK_POOL_SETTINGS}  # Milvus's own settings, or sealed at ~157k rows


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _wait_loaded(client: MilvusClient, name: str, n: int, index: str, timeout: float = 3600) -> tuple[float, int]:
    """Wait until ``n`` rows sit in loaded sealed segments, indexed unless FLAT, and the layout holds
    for 15 s (compaction may still merge segments); returns the seconds waited and the segment count."""
    began, layout, since = time.perf_counter(), None, 0.0
    while time.perf_counter() - began < timeout:
        segments = client.list_loaded_segments(name)
        ready = sum(s.num_rows for s in segments) >= n and (index == "FLAT" or all(s.index_id for s in segments))
        now = (ready, sorted(s.segment_id for s in segments))
        if now != layout:
            layout, since = now, time.perf_counter()
        elif ready and time.perf_counter() - since >= 15:
            return since - began, len(segments)
        time.sleep(1.0)
    raise TimeoutError(f"{name}: {n} rows not in loaded, indexed segments within {timeout} s")


def _threads(pid: int) -> list[int]:
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


@contextlib.contextmanager
def _reniced(pids: list[int], nice: int | None) -> Iterator[None]:
    """Every thread of ``pids`` at niceness ``nice`` inside the block (Linux; None leaves them)."""
    if nice is None:
        yield
        return
    before = {tid: os.getpriority(os.PRIO_PROCESS, tid) for pid in pids for tid in _threads(pid)}
    for tid in before:
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    try:
        yield
    finally:
        for tid, value in before.items():
            with contextlib.suppress(ProcessLookupError):
                os.setpriority(os.PRIO_PROCESS, tid, value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--indexes", nargs="+", default=["HNSW", "FLAT"])
    ap.add_argument("--ef", type=int, nargs="+", default=[64, 32], help="HNSW search ef values to time")
    ap.add_argument("--servers", nargs="+", choices=sorted(SERVERS), default=["milvus", "bulk"],
                    help="server settings, one server each: Milvus's own or BULK_POOL_SETTINGS")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--consistency", nargs="+", default=["Session", "Strong"])
    ap.add_argument("--nice", type=int, default=None, help="niceness of server and client for the timed searches")
    args = ap.parse_args()

    print("| server | index | rows | insert rows/s | index+load s | segments | consistency | ef | load | "
          "search p50 ms | p95 ms | nearest | recall@3 | server RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for kind in args.servers:
        with tempfile.TemporaryDirectory() as tmp, \
                LocalMilvusServer(f"{tmp}/milvus", settings=SERVERS[kind]) as server:
            print(f"server {kind} {SERVERS[kind]}: started in {server.startup_seconds:.1f} s, "
                  f"RSS {server.rss_bytes() / 2**20:.0f} MiB idle, {server.uri}", flush=True)
            rng = make_rng(0, "experience-server")
            queries_all = _unit(rng, args.queries)
            for size in args.sizes:
                vecs = _unit(rng, size)
                # queries near stored rows (as a task near a remembered one): a stored vector plus noise
                picks = rng.integers(0, size, args.queries)
                queries = queries_all * 0.5 + vecs[picks]
                queries /= np.linalg.norm(queries, axis=1, keepdims=True)
                exact = np.argsort(-(queries @ vecs.T), axis=1)[:, :3]
                ids = [f"situation {i}" for i in range(size)]
                for index in args.indexes:
                    name = f"bench_{index.lower()}_{size}"
                    with ExperiencePool(server.uri, dim=DIM, collection=name, index_type=index) as pool:
                        began = time.perf_counter()
                        for start in range(0, size, args.batch):
                            stop = min(size, start + args.batch)
                            recs = [Experience(ids[i], f"advice {i}", env_id=ENV, created_at=float(i))
                                    for i in range(start, stop)]
                            pool.add(recs, vectors=vecs[start:stop], merge=False)
                        insert_rate = size / (time.perf_counter() - began)
                        build: float | None = None
                        segments = 0
                        # before the flush: the rows sit in growing segments, which have no HNSW graph yet
                        efs = args.ef if index == "HNSW" else [None]
                        timed = [(False, args.consistency[0], efs[0])]
                        timed += [(True, level, ef) for level in args.consistency for ef in efs]
                        for flushed, level, ef in timed:
                            if flushed and build is None:
                                pool.flush()
                                build, segments = _wait_loaded(pool._client, name, size, index)
                            pool.config.consistency = level
                            if ef is not None:
                                pool.config.search_ef = ef
                            n = len(queries) if level != "Strong" else min(len(queries), 50)  # ~0.2 s each
                            times, hits, first = [], 0, 0
                            with _reniced([os.getpid(), server.pid], args.nice):
                                load = os.getloadavg()[0]
                                for q in queries[:20]:  # warm-up: segments loaded, caches filled
                                    pool.search_vectors(q[None], top_k=3, threshold=-1.0, env_id=ENV)
                                for j, q in enumerate(queries[:n]):
                                    t = time.perf_counter()
                                    found = pool.search_vectors(q[None], top_k=3, threshold=-1.0, env_id=ENV)[0]
                                    times.append(time.perf_counter() - t)
                                    got = {h.experience.when_to_use for h in found}
                                    hits += len(got & {ids[r] for r in exact[j]})
                                    first += bool(found) and found[0].experience.when_to_use == ids[picks[j]]
                            ms = np.asarray(times) * 1000
                            layout = "unflushed" if build is None else f"{segments} sealed"
                            print(f"| {kind} | {index} | {size} | {insert_rate:.0f} | "
                                  f"{'-' if build is None else f'{build:.1f}'} | {layout} | {level} | {ef or '-'} | "
                                  f"{load:.1f} | {np.percentile(ms, 50):.2f} | {np.percentile(ms, 95):.2f} | "
                                  f"{first / n:.3f} | {hits / (3 * n):.3f} | {server.rss_bytes() / 2**20:.0f} |",
                                  flush=True)
                    MilvusClient(server.uri).drop_collection(name)


if __name__ == "__main__":
    main()
