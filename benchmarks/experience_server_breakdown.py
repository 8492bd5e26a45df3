"""Where a server search's time goes: the pool's search against bare client calls (HNSW, one segment).

Round trips to the embedded Milvus server with less and less work: the pool's search (records,
environment filter) at the pool's ``ef`` and at lower ones, the client's search with ids only at each
consistency level, and a count query. The difference between the last and the first is what the
index and the records cost; the rest is the gRPC and proxy round trip. Then the pool's search under
cProfile: the share of its time spent waiting for the server's answer (grpc's blocking call) against
the time pymilvus and the pool spend in Python (request encoding, result decoding, records).

    python benchmarks/experience_server_breakdown.py [--rows 10000] [--nice -5]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time
from collections.abc import Callable

import numpy as np

from wrappers.navigation import Experience, ExperiencePool
from wrappers.navigation.local_server import LocalMilvusServer

DIM = 384


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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--nice", type=int, default=None, help="niceness of server and client for the timed calls")
    args = ap.parse_args()
    rows = args.rows
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((rows, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with tempfile.TemporaryDirectory() as tmp, LocalMilvusServer(f"{tmp}/milvus") as server, \
            ExperiencePool(server.uri, dim=DIM, collection="breakdown") as pool:
        for start in range(0, rows, 5000):
            pool.add([Experience(f"s{i}", f"a{i}", env_id="e") for i in range(start, min(rows, start + 5000))],
                     vectors=vecs[start:start + 5000], merge=False)
        pool.flush()
        client = pool._client
        while sum(s.num_rows for s in client.list_loaded_segments("breakdown") if s.index_id) < rows:
            time.sleep(1)
        segments = len(client.list_loaded_segments("breakdown"))
        params, queries = pool.config.search_params(3), vecs[:220]

        def pool_search(ef: int) -> Callable[[np.ndarray], object]:
            def run(q: np.ndarray) -> object:
                pool.config.search_ef = ef
                return pool.search_vectors(q[None], top_k=3, threshold=-1.0, env_id="e")
            return run

        probes = {f"pool.search_vectors: records, env filter, ef={ef}": pool_search(ef) for ef in (64, 32, 16)}
        for level in ("Session", "Bounded", "Eventually"):
            probes[f"client.search: ids only, no filter, {level}"] = lambda q, level=level: client.search(
                "breakdown", data=[q], limit=3, search_params=params, consistency_level=level)
        probes["client.search: ids only, env filter, Session"] = lambda q: client.search(
            "breakdown", data=[q], limit=3, filter='env_id == "e"', search_params=params,
            consistency_level="Session")
        probes["client.query: count(*)"] = lambda q: client.query(
            "breakdown", filter="", output_fields=["count(*)"], consistency_level="Eventually")
        probes["client.has_collection (proxy only)"] = lambda q: client.has_collection("breakdown")
        if args.nice is not None:
            for pid in (os.getpid(), server.pid):
                for tid in os.listdir(f"/proc/{pid}/task"):
                    os.setpriority(os.PRIO_PROCESS, int(tid), args.nice)
        print(f"{rows} rows in {segments} loaded segment(s); load average {os.getloadavg()[0]:.1f}")
        print("| call | p50 ms |")
        print("|---|---|")
        for name, fn in probes.items():
            print(f"| {name} | {_p50(fn, queries):.2f} |", flush=True)

        search = pool_search(64)
        profile = cProfile.Profile()
        profile.enable()
        for q in queries:
            search(q)
        profile.disable()
        stats = pstats.Stats(profile).stats
        total = max(ct for (_, _, fn), (_, _, _, ct, _) in stats.items() if fn == "search_vectors")
        waiting = sum(ct for (path, _, fn), (_, _, _, ct, _) in stats.items()
                      if fn == "_blocking" and path.endswith("grpc/_channel.py"))
        print(f"cProfile of {len(queries)} pool searches: {1000 * total / len(queries):.2f} ms each under the "
              f"profiler, {waiting / total:.0%} waiting for the server's answer, {1 - waiting / total:.0%} in "
              "Python (pymilvus request and result, records)")


if __name__ == "__main__":
    main()
