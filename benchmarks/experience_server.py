"""Experience pool on a Milvus standalone server: startup, memory, insert rate, search latency and recall.

Starts the ``milvus`` package's embedded server in a temporary directory, fills one collection per
index type (HNSW, the server default, and FLAT, exact) with synthetic unit-norm vectors of the
embedder's dimension (384; embedding excluded, as in ``experience_retrieval.py``), waits until the
index covers every row, then times single-query searches (top-3, filtered by environment, records
returned) from one client. Each query is a stored vector plus noise (cosine ~0.9 to it): "nearest"
is the share of searches that return that row first; recall@3 compares the top 3 with exact numpy
search. The 2nd and 3rd neighbours of random 384-d vectors are all at cosine ~0.1 to the query, a
near-tie an approximate index orders differently, so recall@3 here is a pessimistic lower bound.

    python benchmarks/experience_server.py [--sizes 10000 100000] [--indexes HNSW FLAT]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
from pymilvus import MilvusClient

from evolver_gym.core import make_rng
from wrappers.navigation import Experience, ExperiencePool
from wrappers.navigation.local_server import LocalMilvusServer

DIM, ENV = 384, "evolver/WebShop-v0"


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _wait_indexed(pool: ExperiencePool, n: int, timeout: float = 1800) -> float:
    began = time.perf_counter()
    client, name = pool._client, pool.config.collection
    while time.perf_counter() - began < timeout:
        info = client.describe_index(name, "vector")
        # pending_index_rows of Milvus 2.3 keeps counting segments rewritten by compaction; indexed rows do not
        if int(info.get("indexed_rows", 0)) >= n:
            return time.perf_counter() - began
        time.sleep(1.0)
    raise TimeoutError(f"index of {name} not built within {timeout} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 100000])
    ap.add_argument("--indexes", nargs="+", default=["HNSW", "FLAT"])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--consistency", nargs="+", default=["Session", "Strong"])
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp, LocalMilvusServer(f"{tmp}/milvus") as server:
        print(f"server: started in {server.startup_seconds:.1f} s, RSS {server.rss_bytes() / 2**20:.0f} MiB idle, "
              f"{server.uri}")
        rng = make_rng(0, "experience-server")
        queries_all = _unit(rng, args.queries)
        print("| index | rows | insert rows/s | index build s | consistency | search p50 ms | p95 ms | nearest | "
              "recall@3 | server RSS MiB |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for size in args.sizes:
            vecs = _unit(rng, size)
            # queries near stored rows (as a task near a remembered one): a stored vector plus noise
            picks = rng.integers(0, size, args.queries)
            queries = queries_all * 0.5 + vecs[picks]
            queries /= np.linalg.norm(queries, axis=1, keepdims=True)
            exact = np.argsort(-(queries @ vecs.T), axis=1)[:, :3]
            for index in args.indexes:
                name = f"bench_{index.lower()}_{size}"
                with ExperiencePool(server.uri, dim=DIM, collection=name, index_type=index) as pool:
                    began = time.perf_counter()
                    for start in range(0, size, args.batch):
                        stop = min(size, start + args.batch)
                        recs = [Experience(f"situation {i}", f"advice {i}", env_id=ENV, created_at=float(i))
                                for i in range(start, stop)]
                        pool.add(recs, vectors=vecs[start:stop], merge=False)
                    insert_rate = size / (time.perf_counter() - began)
                    pool.flush()
                    build = _wait_indexed(pool, size)
                    ids = [f"situation {i}" for i in range(size)]
                    for level in args.consistency:
                        pool.config.consistency = level
                        for q in queries[:20]:  # warm-up: segments loaded, caches filled
                            pool.search_vectors(q[None], top_k=3, threshold=-1.0, env_id=ENV)
                        times, hits, first = [], 0, 0
                        n = len(queries) if level != "Strong" else min(len(queries), 50)  # Strong: ~0.2 s each
                        for j, q in enumerate(queries[:n]):
                            t = time.perf_counter()
                            found = pool.search_vectors(q[None], top_k=3, threshold=-1.0, env_id=ENV)[0]
                            times.append(time.perf_counter() - t)
                            got = {h.experience.when_to_use for h in found}
                            hits += len(got & {ids[r] for r in exact[j]})
                            first += bool(found) and found[0].experience.when_to_use == ids[picks[j]]
                        ms = np.asarray(times) * 1000
                        print(f"| {index} | {size} | {insert_rate:.0f} | {build:.1f} | {level} | "
                              f"{np.percentile(ms, 50):.2f} | {np.percentile(ms, 95):.2f} | {first / n:.3f} | "
                              f"{hits / (3 * n):.3f} | {server.rss_bytes() / 2**20:.0f} |", flush=True)
                MilvusClient(server.uri).drop_collection(name)


if __name__ == "__main__":
    main()
