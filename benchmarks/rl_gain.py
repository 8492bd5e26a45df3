"""RL's own gain: a recipe's GRPO stage against its warm start and against SFT given the same compute.

For each seed, three policies are evaluated on the same held-out episodes:

* ``warm_start`` - the recipe's ``sft`` block (``<out>/seed-S/rl/sft``);
* ``rl`` - ``evolver train --config C`` from that warm start (``<out>/seed-S/rl``);
* ``sft_equal_compute`` - the same ``sft`` block trained for ``sft steps + R x GRPO steps`` from scratch
  (``<out>/seed-S/sft_eq``; the same demonstrations, the warm start's synthesised tasks reused), where
  ``R = --sft-steps-per-grpo-step`` is what one GRPO step costs in SFT steps (30 for the main job on a
  CPU: ``benchmarks/RESULTS.md``). Its cosine schedule spans the longer run, so it is the strongest
  supervised policy of that budget the ``sft`` block's settings give, not the warm start trained on.

Each is evaluated by ``evolver eval --config C`` with one evaluation seed: every ``--split`` goal ``--k``
times (the fingerprints of the three samples must agree), and the first ``--train-goals`` train goals
(goals the policy may or may not have trained on: a gain there that costs the held-out goals is
memorisation). Writes ``--json`` (``{"seeds": [{"seed", "n", "warm_start", "rl", "sft_equal_compute",
"sample", "commit", ...}], "summary": ...}``, success rates) after every seed, so a study stopped part-way
keeps what it measured, and prints a markdown table: per-seed success, the mean with Student's t interval
over seeds, and the paired differences ``rl - warm_start`` and ``rl - sft_equal_compute``.

Usage (one training at a time: on 2 cores, parallel runs only slow each other)::

    python benchmarks/rl_gain.py --config quickstart --seeds 0 1 2 --out-dir runs/rl_gain
    python benchmarks/rl_gain.py --config quickstart --seeds 0 1 2 --out-dir runs/rl_gain --report-only

A stage whose output is already there (``evaluation.json``, ``sft_config.json``, an evaluation report) is
not run again, so a killed study resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ("warm_start", "rl", "sft_equal_compute")


def evolver(*args: str) -> None:
    """Run an ``evolver`` command in a child process (its output streams through)."""
    subprocess.run([sys.executable, "-m", "evolver_train.cli", *args], check=True, cwd=ROOT)


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def train_args(config: str, seed: int, folder: Path) -> list[str]:
    return ["--config", config, "--seed", str(seed), "--rollout-seed", str(seed), "--output-dir", str(folder)]


def train_rl(config: str, seed: int, folder: Path) -> float:
    """``evolver train`` (warm start, then GRPO); seconds taken, 0 when it had already run."""
    if (folder / "evaluation.json").exists():
        return 0.0
    started = time.monotonic()
    evolver("train", *train_args(config, seed, folder))
    return time.monotonic() - started


def train_sft_equal_compute(config: str, seed: int, rl_folder: Path, folder: Path, rate: float) -> dict:
    """The recipe's ``sft`` block for ``sft steps + rate x GRPO steps``; its step counts and seconds."""
    from evolver_train.sft import finished_sft_mismatch, train_sft
    from evolver_train.train_cli import parse_config, warm_start_config

    run = parse_config(train_args(config, seed, rl_folder))
    if not run.train.sft:
        raise SystemExit(f"--config {config!r} has no sft block: there is no warm start to compare against")
    warm = warm_start_config(run)
    steps = {"sft_steps": warm.max_steps, "grpo_steps": run.train.max_steps,
             "sft_equal_compute_steps": int(round(warm.max_steps + rate * run.train.max_steps))}
    equal = replace(warm, output_dir=str(folder), max_steps=steps["sft_equal_compute_steps"])
    if finished_sft_mismatch(str(folder), equal) is None:
        return {**steps, "sft_equal_compute_s": 0.0}
    questions = Path(warm.output_dir) / "questions"
    if questions.is_dir() and not (folder / "questions").exists():  # the same synthesised tasks, not a new draw
        shutil.copytree(questions, folder / "questions")
    started = time.monotonic()
    train_sft(equal)
    return {**steps, "sft_equal_compute_s": time.monotonic() - started}


def evaluate(config: str, checkpoint: Path, split: str, k: int, num_tasks: int | None, out: Path) -> dict:
    if not out.exists():
        args = ["eval", "--checkpoint", str(checkpoint), "--config", config, "--split", split, "--k", str(k),
                "--seed", "1", "--out", str(out), "--quiet"]
        if num_tasks:
            args += ["--num-tasks", str(num_tasks)]
        evolver(*args)
    return json.loads(out.read_text())


def outcomes(report: dict) -> list[float]:
    """A report's episodes as 0/1 successes (their order does not matter to any statistic here)."""
    n = report["num_episodes"]
    wins = round(report["success_rate"] * n)
    return [1.0] * wins + [0.0] * (n - wins)


def run_seed(args: argparse.Namespace, seed: int) -> dict:
    base = Path(args.out_dir) / f"seed-{seed}"
    rl_folder, eq_folder = base / "rl", base / "sft_eq"
    record: dict = {"seed": seed}
    if not args.report_only:
        record["rl_s"] = train_rl(args.config, seed, rl_folder)
        record.update(train_sft_equal_compute(args.config, seed, rl_folder, eq_folder,
                                              args.sft_steps_per_grpo_step))
    checkpoints = {"warm_start": rl_folder / "sft", "rl": rl_folder, "sft_equal_compute": eq_folder}
    held_out, train = {}, {}
    for name, checkpoint in checkpoints.items():
        held_out[name] = evaluate(args.config, checkpoint, args.split, args.k, None,
                                  base / f"eval_{name}_{args.split}.json")
        if args.train_goals:
            train[name] = evaluate(args.config, checkpoint, "train", 1, args.train_goals,
                                   base / f"eval_{name}_train.json")
    fingerprints = {name: r["sample"]["fingerprint"] for name, r in held_out.items()}
    if len(set(fingerprints.values())) != 1:
        raise SystemExit(f"seed {seed}: the evaluations sampled different episodes: {fingerprints}")
    record.update({name: r["success_rate"] for name, r in held_out.items()})
    record.update(
        n=held_out["rl"]["num_episodes"], split=args.split, k=args.k,
        ci95={name: r["success_rate_ci95"] for name, r in held_out.items()},
        score={name: r["score"] for name, r in held_out.items()},
        train_goals={name: r["success_rate"] for name, r in train.items()},
        train_goals_n=args.train_goals,
        sample=fingerprints["rl"], commit=args.commit)
    record["_outcomes"] = {name: outcomes(r) for name, r in held_out.items()}
    return record


def table(records: list[dict]) -> tuple[str, dict]:
    """The markdown summary over seeds and its figures."""
    from evolver_gym.core.stats import difference_interval, summarize_over_seeds

    seeds = [r["seed"] for r in records]
    by_policy = {name: {r["seed"]: r["_outcomes"][name] for r in records} for name in POLICIES}

    def pct(x: float, sign: str = "") -> str:  # one seed has no spread over seeds: its t interval is infinite
        return f"{100 * x:{sign}.1f}" if abs(x) != float("inf") else "n/a"

    head = " | ".join(f"seed {s}" for s in seeds)
    lines = [f"Held-out success, % ({records[0]['n']} episodes per evaluation, sample {records[0]['sample']}):", "",
             f"| policy | {head} | mean [95% t over seeds] |", "|---|" + "---|" * len(seeds) + "---|"]
    summary: dict = {"policies": {}, "differences": {}}
    for name in POLICIES:
        s = summarize_over_seeds(by_policy[name])
        summary["policies"][name] = {"mean": s["mean"], "interval": s["interval"]}
        cells = " | ".join(pct(r[name]) for r in records)
        lines.append(f"| {name} | {cells} | {pct(s['mean'])} [{pct(s['interval'][0])}, {pct(s['interval'][1])}] |")
    lines += ["", f"| difference, points | {head} | mean [95% paired t over seeds] |",
              "|---|" + "---|" * len(seeds) + "---|"]
    for base in ("warm_start", "sft_equal_compute"):
        d = difference_interval(by_policy["rl"], by_policy[base])
        summary["differences"][f"rl - {base}"] = {"difference": d["difference"], "interval": d["interval"]}
        cells = " | ".join(f"{100 * (r['rl'] - r[base]):+.1f}" for r in records)
        lines.append(f"| rl − {base} | {cells} | {pct(d['difference'], '+')} "
                     f"[{pct(d['interval'][0], '+')}, {pct(d['interval'][1], '+')}] |")
    if all(r.get("train_goals") for r in records):
        lines += ["", f"Train goals (the first {records[0]['train_goals_n']} of the train split, one episode each), "
                  "success %:", "",
                  f"| policy | {head} |", "|---|" + "---|" * len(seeds)]
        for name in POLICIES:
            lines.append(f"| {name} | " + " | ".join(pct(r["train_goals"][name]) for r in records) + " |")
    return "\n".join(lines), summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="quickstart", help="recipe name or YAML path, with an sft block")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out-dir", default="runs/rl_gain")
    parser.add_argument("--sft-steps-per-grpo-step", type=float, default=30.0,
                        help="what one GRPO step costs in SFT steps (wall time on the same machine)")
    parser.add_argument("--split", default="dev", help="held-out split every policy is evaluated on")
    parser.add_argument("--k", type=int, default=1, help="episodes per held-out goal")
    parser.add_argument("--train-goals", type=int, default=200, help="train goals evaluated too (0: none)")
    parser.add_argument("--json", default="benchmarks/results/rl_gain.json")
    parser.add_argument("--report-only", action="store_true", help="train nothing; evaluate what is there")
    args = parser.parse_args(argv)
    if args.k < 1 or args.train_goals < 0 or args.sft_steps_per_grpo_step < 0:
        parser.error("--k must be >= 1, --train-goals and --sft-steps-per-grpo-step >= 0")
    from evolver_train.recipe import resolve_config

    args.config = resolve_config(args.config)
    args.commit = git_commit()
    records = []
    for seed in args.seeds:
        records.append(run_seed(args, seed))
        text, summary = table(records)
        print(text, flush=True)
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".json.tmp")
        tmp.write_text(json.dumps({
            "config": os.path.relpath(args.config, ROOT) if args.config.startswith(str(ROOT)) else args.config,
            "seeds": [{k: v for k, v in r.items() if k != "_outcomes"} for r in records],
            "summary": summary}, indent=2))
        os.replace(tmp, out)  # a killed study never leaves half a file


if __name__ == "__main__":
    main()
