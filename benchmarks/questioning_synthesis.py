"""Offline task synthesis (WebShop, AppWorld): accepted tasks per minute and acceptance rate per filter.

Usage:
    python benchmarks/questioning_synthesis.py [--env evolver/WebShop-v0] [--n 200] [--batch 64]
        [--no-embeddings] [--seed 0] [--leakage-targets auto|all|keys|off]
        [--env-kwargs '{"split_scheme": "product"}'] [--seed-split none] [--max-rounds 400]

Model-free exploration (random over the available actions on WebShop; API calls as Python cells,
``CodeExplorer``, on AppWorld), the hindsight proposer (no model), lexical dedup, leakage guard
against dev/test (text, and targets as ``--leakage-targets`` says), embedding dedup with the
packaged all-MiniLM-L6-v2 (unless ``--no-embeddings``) and feasibility by replay. Prints the per-stage
table and the throughput.
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym

import evolver_gym  # noqa: F401  (registers the environment ids)
from wrappers.questioning import SynthesisConfig, TaskPool, build_synthesizer, packaged_embedder
from wrappers.questioning.cli import format_report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env", default="evolver/WebShop-v0")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-embeddings", action="store_true")
    p.add_argument("--leakage-targets", default="auto", choices=["auto", "all", "keys", "off"],
                   help="SynthesisConfig.leakage_targets")
    p.add_argument("--env-kwargs", type=json.loads, default={}, help="JSON keyword arguments of gym.make")
    p.add_argument("--seed-split", default="train",
                   help="SynthesisConfig.seed_split ('none': explore from goal-free starts, no human task)")
    p.add_argument("--max-rounds", type=int, default=200, help="SynthesisConfig.max_rounds")
    args = p.parse_args()

    t0 = time.perf_counter()
    env = gym.make(args.env, **args.env_kwargs).unwrapped
    embedder = None if args.no_embeddings else packaged_embedder()
    setup_s = time.perf_counter() - t0
    cfg = SynthesisConfig(batch=args.batch, seed=args.seed,
                          embedding_threshold=None if embedder is None else 0.92,
                          leakage_cosine=None if embedder is None else 0.9,
                          leakage_targets=args.leakage_targets, seed_split=args.seed_split,
                          max_rounds=args.max_rounds)
    pool = TaskPool(None)
    t1 = time.perf_counter()
    synth = build_synthesizer(env, pool, cfg, embedder=embedder)
    report = synth.run(args.n)
    run_s = time.perf_counter() - t1
    admitted = len(pool.ids(origin="synthetic"))
    print(format_report(report))
    rates = {name: round(st["accepted"] / st["in"], 3) for name, st in report["stages"].items() if st["in"]}
    print(json.dumps({
        "env": args.env, "env_kwargs": args.env_kwargs, "leakage_targets": args.leakage_targets,
        "seed_split": args.seed_split,
        "explorer": type(synth.explorer.policy).__name__, "n": args.n, "batch": args.batch,
        "embeddings": embedder is not None, "admitted": admitted,
        "setup_s (env + embedder load)": round(setup_s, 2), "synthesis_s (incl. pipeline build)": round(run_s, 2),
        "accepted_per_minute": round(admitted / run_s * 60, 1),
        "explorations": report["stages"]["explore"]["in"],
        "end_to_end_yield (admitted / explorations)": round(admitted / max(report["stages"]["explore"]["in"], 1), 3),
        "acceptance_rate_per_stage": rates,
    }, indent=2))


if __name__ == "__main__":
    main()
