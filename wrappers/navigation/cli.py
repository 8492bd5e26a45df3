"""``evolver experience``: build, search, inspect, export and import an experience pool.

    evolver experience build  --uri pool.db --env evolver/WebShop-v0 --rollouts 4 --policy oracle --limit 100
    evolver experience search --uri pool.db "i need waterproof mascara" --top-k 3
    evolver experience stats  --uri pool.db
    evolver experience export --uri pool.db --out pool.jsonl
    evolver experience import --uri pool.db --in pool.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="evolver experience", description="experience pool tools")
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--uri", default="experience.db", help="milvus-lite path (.db) or Milvus server URI")
        p.add_argument("--collection", default="experience")
        p.add_argument("--model", default=None, help="embedding model name or path (default: packaged MiniLM)")

    b = sub.add_parser("build", help="warm up a pool from rollouts of training tasks")
    common(b)
    b.add_argument("--env", default="evolver/WebShop-v0")
    b.add_argument("--env-kwargs", default="{}", help="JSON kwargs for gym.make")
    b.add_argument("--rollouts", type=int, default=4, help="rollouts per training task")
    b.add_argument("--limit", type=int, default=None, help="use the first N training tasks")
    b.add_argument("--policy", choices=["oracle", "random"], default="oracle")
    b.add_argument("--summarizer", choices=["offline", "llm"], default="offline")
    b.add_argument("--llm-config", default=None, help="roles YAML of the LLM clients (with --summarizer llm)")
    b.add_argument("--llm-role", default="summarizer", help="role of the LLM config (with --summarizer llm)")
    b.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("search", help="top-k experiences for a query")
    common(s)
    s.add_argument("query")
    s.add_argument("--top-k", type=int, default=3)
    s.add_argument("--threshold", type=float, default=0.0)
    s.add_argument("--env", default=None, help="only experiences of this environment")
    st = sub.add_parser("stats", help="counts, success share, uses")
    common(st)
    e = sub.add_parser("export", help="write the pool as JSONL")
    common(e)
    e.add_argument("--out", required=True)
    e.add_argument("--env", default=None)
    i = sub.add_parser("import", help="add the experiences of a JSONL file")
    common(i)
    i.add_argument("--in", dest="inp", required=True)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .pool import ExperiencePool, PoolConfig

    cfg = PoolConfig(uri=args.uri, collection=args.collection, embedding_model=args.model)
    try:
        pool = ExperiencePool(cfg)
    except (RuntimeError, ValueError) as exc:
        print(f"evolver experience: {exc}", file=sys.stderr)
        return 2
    with pool:
        if args.cmd == "build":
            return _build(args, pool)
        if args.cmd == "search":
            hits = pool.search(args.query, top_k=args.top_k, threshold=args.threshold, env_id=args.env)
            for h in hits:
                print(json.dumps({"score": round(h.score, 4), **h.experience.to_dict()}, ensure_ascii=False))
            return 0
        if args.cmd == "stats":
            print(json.dumps(pool.stats(), indent=2))
            return 0
        if args.cmd == "export":
            print(f"exported {pool.export_jsonl(args.out, env_id=args.env)} experiences to {args.out}")
            return 0
        if args.cmd == "import":
            ids = pool.import_jsonl(args.inp)
            print(f"imported {len(ids)} records as {len(set(ids))} experiences; pool size {len(pool)}")
            return 0
    return 2


def _build(args: argparse.Namespace, pool) -> int:
    import gymnasium as gym

    import evolver_gym  # noqa: F401  (registers the environments)

    from .summarize_offline import OfflineSummarizer
    from .warmup import build_pool, oracle_policy, random_policy

    env = gym.make(args.env, **json.loads(args.env_kwargs))
    tasks = env.unwrapped.tasks("train")
    tasks = tasks[: args.limit] if args.limit else tasks
    policy = oracle_policy(env) if args.policy == "oracle" else random_policy(args.seed)
    if args.summarizer == "llm":
        from evolver_gym.core.llm.factory import build_clients

        from .summarize_llm import LLMSummarizer

        summarizer = LLMSummarizer(build_clients(args.llm_config).client_for(args.llm_role))
    else:
        summarizer = OfflineSummarizer()
    stats = build_pool(env, policy, pool, summarizer, tasks=tasks, rollouts_per_task=args.rollouts,
                       seed=args.seed)
    stats.pop("ids")
    print(json.dumps({**stats, "pool_size": len(pool)}))
    return 0
