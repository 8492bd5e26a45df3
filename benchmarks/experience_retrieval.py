"""Experience retrieval benchmark: embedding throughput, search latency at 1k/10k/100k, batched queries/s.

Search latency uses synthetic unit-norm random vectors (embedding excluded) so the pool can be
filled to 100k quickly; it is measured on both search paths of a milvus-lite pool: the in-process
mirror (the default for milvus-lite) and Milvus's own search. Batched queries/s include embedding
with the packaged all-MiniLM-L6-v2, once per embedder precision: float32 and the default ``auto``
(bfloat16 matrix products where the CPU has them), measured in the same run.

    python benchmarks/experience_retrieval.py [--sizes 1000 10000 100000] [--threads 2]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from evolver_gym.core import make_rng
from wrappers.navigation import Embedder, Experience, ExperiencePool
from wrappers.navigation.embedder import native_bfloat16


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--milvus-queries", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2, help="torch threads for embedding")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    # float32 first, then what "auto" picks on this machine (the default), when that differs
    embedders = {"float32": Embedder(precision="float32")}
    if native_bfloat16("cpu"):
        embedders["bfloat16 (auto)"] = Embedder(precision="auto")
    emb = embedders["float32"]
    texts = [f"i need a {c} {t} that is {a}, and price lower than {p}.00 dollars"
             for c, t, a, p in zip(["red", "blue", "black", "pink"] * 256, ["running shoes", "mascara", "headphones",
                                   "coffee", "towel", "sofa", "t-shirt", "shampoo"] * 128,
                                   ["waterproof", "long lasting", "machine wash", "sulfate free"] * 256,
                                   range(10, 1034))]
    rates = {}
    for name, e in embedders.items():
        e.encode(texts[:64])
        t0 = time.perf_counter()
        e.encode(texts)
        rates[name] = len(texts) / (time.perf_counter() - t0)
        print(f"embedding [{name}]: {rates[name]:.0f} texts/s (batch {e.batch_size}, {args.threads} threads)")
    if len(rates) > 1:
        print(f"embedding speed-up of auto over float32: {rates['bfloat16 (auto)'] / rates['float32']:.2f}x")
    rng = make_rng(0, "bench-experience")
    root = Path(tempfile.mkdtemp(prefix="expbench-"))
    try:
        for n in args.sizes:
            for mode in ("memory", "milvus"):
                uri = str(root / f"{mode}-{n}.db")
                with ExperiencePool(uri=uri, embedder=emb, search_mode=mode) as pool:
                    t0 = time.perf_counter()
                    for i in range(0, n, 5000):
                        m = min(5000, n - i)
                        recs = [Experience(f"case {j}", f"advice {j}", env_id=f"env{j % 4}") for j in range(i, i + m)]
                        pool.add(recs, vectors=_unit(rng, m, emb.dim), merge=False)
                    pool.flush()
                    ins = time.perf_counter() - t0
                with ExperiencePool(uri=uri, embedder=emb, search_mode=mode) as pool:  # reopened: sealed segments
                    assert len(pool) == n, (len(pool), n)
                    q = _unit(rng, args.queries if mode == "memory" else args.milvus_queries, emb.dim)
                    for v in q[:5]:
                        pool.search_vectors(v[None], top_k=5, threshold=-1)
                    lat, latf = [], []
                    for v in q:
                        t0 = time.perf_counter()
                        pool.search_vectors(v[None], top_k=5, threshold=-1)
                        lat.append(time.perf_counter() - t0)
                        t0 = time.perf_counter()
                        pool.search_vectors(v[None], top_k=5, threshold=-1, env_id="env1")
                        latf.append(time.perf_counter() - t0)
                    print(f"n={n:>6} search={mode:<6} insert {n / ins:>7.0f}/s  search p50 {_pct(lat, 50):6.2f} ms "
                          f"p99 {_pct(lat, 99):6.2f} ms | env-filtered p50 {_pct(latf, 50):6.2f} ms "
                          f"p99 {_pct(latf, 99):6.2f} ms")
                if mode == "memory" and n == 10000:
                    qs = texts[:512]
                    for name, e in embedders.items():
                        with ExperiencePool(uri=uri, embedder=e, search_mode=mode) as pool:
                            pool.search_batch(qs[:64], top_k=5)
                            t0 = time.perf_counter()
                            for i in range(0, len(qs), 64):
                                pool.search_batch(qs[i:i + 64], top_k=5)
                            dt = time.perf_counter() - t0
                        print(f"n={n:>6} batched search with embedding [{name}]: {len(qs) / dt:.0f} queries/s "
                              f"(batches of 64)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
