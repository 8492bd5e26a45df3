"""Where a server search's time goes: the pool's search against bare client calls (10k rows, HNSW).

Round trips to the embedded Milvus server with less and less work: the pool's search (records,
environment filter), the client's search with ids only, and a count query. The difference between
the last and the first is what the index and the records cost; the rest is the gRPC and proxy
round trip.

    python benchmarks/experience_server_breakdown.py
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable

import numpy as np

from wrappers.navigation import Experience, ExperiencePool
from wrappers.navigation.local_server import LocalMilvusServer

DIM, ROWS = 384, 10000


def _p50(fn: Callable[[np.ndarray], object], queries: np.ndarray) -> float:
    for q in queries[:20]:  # warm-up
        fn(q)
    times = []
    for q in queries[20:]:
        began = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - began)
    return float(np.median(times) * 1000)


def main() -> None:
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with tempfile.TemporaryDirectory() as tmp, LocalMilvusServer(f"{tmp}/milvus") as server, \
            ExperiencePool(server.uri, dim=DIM, collection="breakdown") as pool:
        pool.add([Experience(f"s{i}", f"a{i}", env_id="e") for i in range(ROWS)], vectors=vecs, merge=False)
        pool.flush()
        while int(pool._client.describe_index("breakdown", "vector")["indexed_rows"]) < ROWS:
            time.sleep(1)
        client, params, queries = pool._client, pool.config.search_params(3), vecs[:200]
        probes = {
            "pool.search_vectors: records, env filter": lambda q: pool.search_vectors(
                q[None], top_k=3, threshold=-1.0, env_id="e"),
            "client.search: ids only, no filter": lambda q: client.search(
                "breakdown", data=[q], limit=3, search_params=params, consistency_level="Session"),
            "client.search: ids only, env filter": lambda q: client.search(
                "breakdown", data=[q], limit=3, filter='env_id == "e"', search_params=params,
                consistency_level="Session"),
            "client.query: count(*)": lambda q: client.query(
                "breakdown", filter="", output_fields=["count(*)"], consistency_level="Eventually"),
        }
        print("| call | p50 ms |")
        print("|---|---|")
        for name, fn in probes.items():
            print(f"| {name} | {_p50(fn, queries):.2f} |", flush=True)


if __name__ == "__main__":
    main()
