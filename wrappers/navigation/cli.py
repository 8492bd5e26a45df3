"""``evolver experience``: build, search, inspect, export and import an experience pool.

    evolver experience build  --uri pool.db --env-id evolver/WebShop-v0 --rollouts 4 --policy oracle --limit 100
    evolver experience search --uri pool.db "i need waterproof mascara" --top-k 3
    evolver experience stats  --uri pool.db
    evolver experience export --uri pool.db --out pool.jsonl
    evolver experience import --uri pool.db --in pool.jsonl
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

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
    b.add_argument("--env-id", dest="env", default="evolver/WebShop-v0", help="Gymnasium id of the environment")
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
    s.add_argument("--env-id", dest="env", default=None, help="only experiences of this environment")
    st = sub.add_parser("stats", help="counts, success share, uses")
    common(st)
    e = sub.add_parser("export", help="write the pool as JSONL")
    common(e)
    e.add_argument("--out", required=True)
    e.add_argument("--env-id", dest="env", default=None, help="only experiences of this environment")
    i = sub.add_parser("import", help="add the experiences of a JSONL file")
    common(i)
    i.add_argument("--in", dest="inp", required=True)
    return ap


def _local_path(uri: str) -> Path | None:
    """The file or folder a milvus-lite URI names; None for a server URI."""
    return None if "://" in uri else Path(uri)


def _check(args: argparse.Namespace) -> None:
    """Refuse bad input before the pool is opened (opening one creates it)."""
    path = _local_path(args.uri)
    if args.cmd in {"search", "stats", "export"} and path is not None and not path.exists():
        raise FileNotFoundError(f"no experience pool at --uri {args.uri!r} (build or import one first)")
    if args.cmd == "import" and not Path(args.inp).is_file():
        raise FileNotFoundError(f"--in {args.inp!r} is not a file")
    if args.cmd == "search" and args.top_k < 1:
        raise ValueError(f"--top-k must be positive, got {args.top_k}")
    if args.cmd == "build":
        if args.rollouts < 1:
            raise ValueError(f"--rollouts must be positive, got {args.rollouts}")
        if args.limit is not None and args.limit < 1:
            raise ValueError(f"--limit must be positive, got {args.limit}")
        if args.summarizer == "llm" and args.llm_config is not None and not Path(args.llm_config).is_file():
            raise FileNotFoundError(f"--llm-config {args.llm_config!r} is not a file")


def _remove(path: Path | None) -> None:
    if path is None or not path.exists():
        return
    shutil.rmtree(path) if path.is_dir() else path.unlink()


def main(argv: list[str] | None = None) -> int:
    from evolver_gym.cli_args import rename_flags

    argv = rename_flags(sys.argv[1:] if argv is None else argv, {"--env": "--env-id"}, "evolver experience")
    args = _parser().parse_args(argv)
    _check(args)
    from .pool import ExperiencePool, PoolConfig

    env = tasks = None
    if args.cmd == "build":  # the environment and its tasks first: a bad id or kwargs create nothing
        env, tasks = _env_and_tasks(args)
    path = _local_path(args.uri)
    created = path if path is not None and not path.exists() else None
    cfg = PoolConfig(uri=args.uri, collection=args.collection, embedding_model=args.model)
    try:
        try:
            pool = ExperiencePool(cfg)
        except RuntimeError as exc:  # the store cannot be opened: say so in one line
            print(f"evolver experience: error: {exc}", file=sys.stderr)
            code = 2
        else:
            with pool:
                code = _run(args, pool, env, tasks)
    except BaseException:
        _remove(created)  # a failed command leaves no new pool behind
        raise
    finally:
        if env is not None:
            env.close()
    if code != 0:
        _remove(created)
    return code


def _run(args: argparse.Namespace, pool, env, tasks) -> int:
    if args.cmd == "build":
        return _build(args, pool, env, tasks)
    if args.cmd == "search":
        hits = pool.search(args.query, top_k=args.top_k, threshold=args.threshold, env_id=args.env)
        for h in hits:  # the query's cosine similarity; the stored episode's own score under another name
            record = h.experience.to_dict()
            record["episode_score"] = record.pop("score")
            print(json.dumps({"similarity": round(h.score, 4), **record}, ensure_ascii=False))
        return 0
    if args.cmd == "stats":
        print(json.dumps(pool.stats(), indent=2))
        return 0
    if args.cmd == "export":
        print(f"exported {pool.export_jsonl(args.out, env_id=args.env)} experiences to {args.out}")
        return 0
    ids = pool.import_jsonl(args.inp)
    print(f"imported {len(ids)} records as {len(set(ids))} experiences; pool size {len(pool)}")
    return 0


def _env_and_tasks(args: argparse.Namespace):
    import gymnasium as gym

    import evolver_gym  # noqa: F401  (registers the environments)

    try:
        kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--env-kwargs must be a JSON object, got {args.env_kwargs!r}: {exc}") from None
    if not isinstance(kwargs, dict):
        raise ValueError(f"--env-kwargs must be a JSON object, got {args.env_kwargs!r}")
    env = gym.make(args.env, **kwargs)
    tasks = env.unwrapped.tasks("train")
    return env, (tasks[: args.limit] if args.limit else tasks)


def _build(args: argparse.Namespace, pool, env, tasks) -> int:
    from tqdm import tqdm

    from .summarize_offline import OfflineSummarizer
    from .warmup import build_pool, oracle_policy, random_policy

    policy = oracle_policy(env) if args.policy == "oracle" else random_policy(args.seed)
    if args.summarizer == "llm":
        from evolver_gym.core.llm.factory import build_clients

        from .summarize_llm import LLMSummarizer

        summarizer = LLMSummarizer(build_clients(args.llm_config).client_for(args.llm_role))
    else:
        summarizer = OfflineSummarizer()
    with tqdm(total=len(tasks), desc="experience build", unit="task", file=sys.stderr) as bar:
        stats = build_pool(env, policy, pool, summarizer, tasks=tasks, rollouts_per_task=args.rollouts,
                           seed=args.seed, on_task=lambda *_: bar.update())
    stats.pop("ids")
    report = {**stats, "pool_size": len(pool)}
    summary = getattr(summarizer, "stats", None)
    if summary is not None:
        report["summarizer"] = dict(summary)
    print(json.dumps(report))
    failures = sum(summary.get(k, 0) for k in ("llm_errors", "unparsable", "invalid")) if summary else 0
    if stats["added"] == 0 and failures:
        reason = getattr(summarizer, "last_failure", None)
        print(f"evolver experience build: error: no experience added: {failures} summarizer failures "
              f"(last: {reason})", file=sys.stderr)
        return 1
    return 0
