"""WebShop throughput: steps/s, search latency, catalog and index build time, peak memory.

Each catalog size runs in its own subprocess so peak memory (``ru_maxrss``) is that size's alone.

    python benchmarks/webshop_throughput.py                 # 1k and 100k products
    python benchmarks/webshop_throughput.py --sizes 1000    # just 1k
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def _mixed_policy(rng, obs, info, plan):
    """A realistic mix: search, page, open items, read sub-pages, pick options, go back, buy."""
    if plan:
        return plan.pop(0)
    clickables = info["available_actions"]["clickables"]
    roll = rng.random()
    if info["available_actions"]["has_search_bar"] or roll < 0.08:
        return f"search[{info['instruction'][:60]}]"
    products = [c for c in clickables if len(c) == 10 and c.isalnum()]
    if products and roll < 0.6:
        return f"click[{rng.choice(products)}]"
    if "buy now" in clickables:
        options = clickables[6:]
        if options and roll < 0.75:
            return f"click[{rng.choice(options)}]"
        if roll < 0.85:
            return f"click[{rng.choice(['description', 'features', 'reviews'])}]"
        if roll < 0.93:
            return "click[< prev]"
        return "click[buy now]"
    return f"click[{rng.choice(clickables)}]" if clickables else "search[gift]"


def run_size(num_products: int, episodes: int, queries: int) -> dict:
    import random

    from evolver_gym.webshop import WebShopEnv

    env = WebShopEnv(num_products=num_products, seed=0)
    world = env.world
    rss_after_build = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    goals = [g["instruction_text"] for g in world.catalog.goals]
    rng = random.Random(0)
    sample = rng.sample(goals, min(queries, len(goals)))
    latencies = []
    for q in sample:
        world.engine._cache.clear()  # measure real searches, not the result cache
        s = time.perf_counter()
        world.engine.search(q)
        latencies.append((time.perf_counter() - s) * 1000)
    latencies.sort()
    # Steps: one core, mixed actions, every step renders the page, its clickables and progress.
    tasks = env.tasks("dev") + env.tasks("test")
    steps, searches = 0, 0
    s = time.perf_counter()
    for e in range(episodes):
        obs, info = env.reset(options={"task": tasks[e % len(tasks)]})
        plan = list(env.oracle(tasks[e % len(tasks)])) if e % 4 == 0 else []
        while True:
            action = _mixed_policy(rng, obs, info, plan)
            searches += action.startswith("search[")
            obs, reward, terminated, truncated, info = env.step(action)
            steps += 1
            if terminated or truncated:
                break
    elapsed = time.perf_counter() - s
    return {
        "num_products": num_products,
        "goals": len(goals),
        "catalog_build_s": round(world.build_seconds["catalog"], 2),
        "index_build_s": round(world.build_seconds["index"], 2),
        "rss_after_build_mb": round(rss_after_build, 1),
        "search_p50_ms": round(statistics.median(latencies), 3),
        "search_p99_ms": round(latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 3),
        "steps": steps,
        "search_share": round(searches / steps, 3),
        "steps_per_s": round(steps / elapsed, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000", help="comma-separated catalog sizes")
    parser.add_argument("--episodes", type=int, default=400, help="episodes for the steps/s figure")
    parser.add_argument("--queries", type=int, default=500, help="searches for the latency figures")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(run_size(args.child, args.episodes, args.queries)))
        return 0
    rows = []
    for size in (int(x) for x in args.sizes.split(",")):
        # One core: numeric libraries must not spread the work over threads.
        env = {
            **os.environ,
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "NUMBA_NUM_THREADS": "1",
        }
        cmd = [
            sys.executable,
            __file__,
            "--child",
            str(size),
            "--episodes",
            str(args.episodes),
            "--queries",
            str(args.queries),
        ]
        if hasattr(os, "sched_setaffinity"):
            cmd = ["taskset", "-c", str(min(os.sched_getaffinity(0))), *cmd] if _has_taskset() else cmd
        out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    header = (
        "num_products",
        "goals",
        "catalog_build_s",
        "index_build_s",
        "search_p50_ms",
        "search_p99_ms",
        "steps_per_s",
        "search_share",
        "peak_rss_mb",
    )
    print("\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(str(r[h]) for h in header) + " |")
    return 0


def _has_taskset() -> bool:
    from shutil import which

    return which("taskset") is not None


if __name__ == "__main__":
    raise SystemExit(main())
