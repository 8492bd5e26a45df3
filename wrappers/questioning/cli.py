"""``evolver questions``: synthesize and inspect task pools.

* ``main(argv)`` - the subcommand entry point (``synthesize``, ``stats``).

``evolver questions synthesize --env-id evolver/WebShop-v0 --n 200 [--out DIR]`` explores, proposes,
filters and admits tasks until ``DIR/pool.sqlite`` holds ``n`` synthetic tasks, then writes
``DIR/tasks.jsonl`` (the synthetic tasks with provenance) and ``DIR/report.json`` (per stage: how
many candidates came in, were accepted, were rejected, and why). Running the same command again
after an interruption resumes where the last finished round left off. ``DIR`` defaults to
``runs/questions/<env id with / as ->``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from evolver_gym.cli_args import check_env_kwargs, parse_env_kwargs, rename_flags

__all__ = ["main", "format_report"]


def format_report(report: dict[str, Any]) -> str:
    """The per-stage report as a small text table."""
    lines = [f"{'stage':<16}{'in':>7}{'accepted':>10}{'rejected':>10}  rate   reasons"]
    for name, st in report["stages"].items():
        if not st["in"]:
            continue
        rate = st["accepted"] / st["in"]
        reasons = "; ".join(f"{r}: {n}" for r, n in sorted(st["reasons"].items(), key=lambda kv: -kv[1]))
        lines.append(f"{name:<16}{st['in']:>7}{st['accepted']:>10}{st['rejected']:>10}  {rate:5.1%}  {reasons}")
    lines.append(f"rounds: {report['rounds']}, admitted: {report['admitted']}, seconds: {report['elapsed_s']}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evolver questions", description="Synthesize and curate training tasks.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("synthesize", help="explore -> propose -> filter -> admit until the pool holds N tasks")
    s.add_argument("--env-id", required=True, help="registered environment id, e.g. evolver/WebShop-v0")
    s.add_argument("--env-kwargs", default="{}", help="JSON dict of environment constructor kwargs")
    s.add_argument("--n", type=int, required=True, help="synthetic tasks the pool should hold")
    s.add_argument("--out", default=None,
                   help="output folder (pool.sqlite, tasks.jsonl, report.json); default runs/questions/<env>")
    s.add_argument("--batch", type=int, default=32, help="explorations per round")
    s.add_argument("--max-rounds", type=int, default=200, help="stop after this many rounds in this run")
    s.add_argument("--max-steps", type=int, default=15, help="step cap of one exploration")
    s.add_argument("--seed", type=int, default=0, help="base seed")
    s.add_argument("--max-seed-tasks", type=int, default=None, help="explore from at most this many seed tasks")
    s.add_argument("--seed-split", default="train",
                   help="split whose tasks seed the explorations; 'none' explores from the env's goal-free start "
                        "states (no human task at all)")
    s.add_argument("--no-embeddings", action="store_true", help="lexical dedup and guard only (no embedder)")
    s.add_argument("--llm-config", default=None, help="YAML of LLM roles (evolver_gym.core.llm.RolesConfig)")
    s.add_argument("--explorer", choices=("auto", "random", "code"), default="auto",
                   help="model-free explorer: random over listed actions, code (API calls as Python cells), "
                        "or auto (code for code-as-action envs such as evolver/AppWorld-v0)")
    s.add_argument("--llm-explorer", action="store_true", help="explore with the 'explorer' role model")
    s.add_argument("--llm-proposer", action="store_true", help="add the LLM proposer ('proposer' role)")
    s.add_argument("--llm-rephrase", action="store_true", help="rephrase hindsight tasks ('proposer' role)")
    s.add_argument("--no-hindsight", action="store_true", help="do not use the env's hindsight_task")
    s.add_argument("--complete-targets", action="store_true",
                   help="refuse tasks that leave a choice open (WebShop: options of the product left unchosen)")
    s.add_argument("--fill-open-choices", action="store_true",
                   help="hindsight tasks pin every choice the exploration left open, with a value drawn from "
                        "those on offer (WebShop: the bought product's unchosen options)")
    s.add_argument("--quiet", action="store_true", help="no per-round progress lines")
    st = sub.add_parser("stats", help="print a pool's statistics")
    st.add_argument("pool", help="path of a pool.sqlite")
    return p


def _synthesize(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import evolver_gym  # noqa: F401  (registers the environment ids)

    env_kwargs = parse_env_kwargs(args.env_kwargs)
    if args.n < 0:
        raise ValueError(f"--n must be >= 0, got {args.n}")
    for flag in ("batch", "max_rounds", "max_steps"):
        if getattr(args, flag) < 1:
            raise ValueError(f"--{flag.replace('_', '-')} must be positive, got {getattr(args, flag)}")
    if args.llm_config is not None and not Path(args.llm_config).is_file():
        raise FileNotFoundError(f"--llm-config {args.llm_config!r} is not a file")
    # Everything that can refuse the input runs before the output folder exists.
    check_env_kwargs(args.env_id, env_kwargs, "--env-kwargs")
    env = gym.make(args.env_id, **env_kwargs).unwrapped
    use_llm = args.llm_explorer or args.llm_proposer or args.llm_rephrase
    clients = None
    if use_llm:
        from evolver_gym.core.llm import build_clients

        clients = build_clients(args.llm_config)
    out = Path(args.out) if args.out else Path("runs") / "questions" / args.env_id.replace("/", "-")
    created = not out.exists()
    rounds_done: list[int] = []
    try:
        return _run(args, env, env_kwargs, clients, out, rounds_done)
    except Exception:
        # A run that fails before its first round leaves nothing behind; finished rounds are kept
        # (and an interrupted run too), so that the same command resumes them.
        if created and not rounds_done:
            shutil.rmtree(out, ignore_errors=True)
        raise


def _run(args: argparse.Namespace, env: Any, env_kwargs: dict[str, Any], clients: Any, out: Path,
         rounds_done: list[int]) -> int:
    from .pool import TaskPool
    from .synthesis import SynthesisConfig, build_synthesizer, synthesize_into

    out.mkdir(parents=True, exist_ok=True)
    pool = TaskPool(out / "pool.sqlite")
    if pool.get_meta("synthesis") and not args.quiet:
        print(f"resuming synthesis in {out} ({len(pool.ids(origin='synthetic', status=None))} synthetic tasks so far)")
    embed = not args.no_embeddings
    config = SynthesisConfig(batch=args.batch, max_rounds=args.max_rounds, max_steps=args.max_steps, seed=args.seed,
                             seed_split=args.seed_split, embedding_threshold=0.92 if embed else None,
                             leakage_cosine=0.9 if embed else None, complete_targets=args.complete_targets,
                             fill_open_choices=args.fill_open_choices)
    synth = build_synthesizer(
        env, pool, config,
        explorer_client=clients["explorer"] if args.llm_explorer else None,
        proposer_client=clients["proposer"] if args.llm_proposer else None,
        rephrase_client=clients["proposer"] if args.llm_rephrase else None,
        judge_client=clients["judge"] if args.llm_proposer else None,
        hindsight=not args.no_hindsight, embedder="packaged" if embed else None,
        max_seed_tasks=args.max_seed_tasks, explorer=args.explorer,
    )

    def progress(rep: dict[str, Any]) -> None:
        rounds_done.append(rep["rounds"])
        if not args.quiet:
            have = len(pool.ids(origin="synthetic", status=None))
            print(f"round {rep['rounds']}: {have}/{args.n} synthetic tasks", flush=True)

    extra: dict[str, Any] = {"env": args.env_id, "env_kwargs": env_kwargs,
                             "explorer": type(synth.explorer.policy).__name__}
    report = synthesize_into(synth, out, args.n, on_round=progress,
                             after=(lambda: {"llm_usage": clients.stats()}) if clients is not None else None, **extra)
    n = report["synthetic_tasks"]
    print(format_report(report))
    print(f"wrote {n} synthetic tasks to {out / 'tasks.jsonl'}; report in {out / 'report.json'}")
    return 0 if n >= args.n else 1


def _check_pool_file(path: str) -> None:
    """``path`` is a task pool: a SQLite database with a ``tasks`` table (read-only check; nothing is written)."""
    import sqlite3

    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"no pool at {path!r}")
    with file.open("rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            raise ValueError(f"{path!r} is not a task pool: not a SQLite database")
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
        try:
            found = conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name='tasks'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise ValueError(f"{path!r} is not a readable task pool: {exc}") from None
    if found is None:
        raise ValueError(f"{path!r} is not a task pool: a SQLite database without a 'tasks' table")


def main(argv: list[str] | None = None) -> int:
    argv = rename_flags(sys.argv[1:] if argv is None else argv, {"--env": "--env-id"}, "evolver questions")
    args = _parser().parse_args(argv)
    if args.command == "synthesize":
        return _synthesize(args)
    from .pool import TaskPool

    try:
        _check_pool_file(args.pool)
    except (OSError, ValueError) as exc:
        print(f"evolver questions stats: {exc}", file=sys.stderr)
        return 2
    with TaskPool(args.pool) as pool:
        print(json.dumps({"pool": pool.stats(), "synthesis": pool.get_meta("synthesis", {}).get("report")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
