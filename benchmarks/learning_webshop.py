"""The mechanism ablation on WebShop: basic GRPO, each mechanism alone, and overall mode, same budget.

For every seed: one SFT warm start (shared by every mode of the seed), then GRPO for ``--steps``
optimiser steps in each mode with the same batch (tasks x G), the same learning rate and the same
rollout settings:

* ``basic`` - plain GRPO: no mechanism, fixed training tasks, outcome advantage;
* ``questioning``, ``navigation``, ``attribution`` - that mechanism alone, with the recipe's settings;
* ``overall`` - all three, as the recipe runs them;
* ``attribution_rules`` - attribution alone with the rule attributor's labels instead of the oracle's;
* ``gigpo`` - no mechanism, GiGPO's anchor-state step advantage (``gigpo_omega`` 1) on top of the outcome;
* ``navigation_strip`` - navigation alone, trained on the context without the experience block (strip)
  instead of the context it was sampled in (keep, the recipe's).

The last two, with ``basic`` and ``attribution``, compare credit assignment: outcome only, ADCA with
oracle labels, ADCA with rule labels, GiGPO. Give it longer, sparser episodes with ``--recipe-args``
(any ``evolver train`` options, applied to the warm start and every mode), e.g. a page of sponsored
results ahead of every search's matches and a larger step budget. ``navigation`` against
``navigation_strip`` (``--reference navigation``) compares the two experience training modes; with
``--recipe-args "--steps-per-generation 2"`` the stripped rows' ratio can move and their boosted clip act.

Every ``--eval-every`` steps (and at step 0 and the end) the policy plays ``--eval-episodes`` held-out
dev goals once each, sampled at temperature 1, without experience in the prompt, through
``evolver_train.evaluation.evaluate_policy`` (the rollout code the trainer uses); every evaluation uses
the same episodes (its sample fingerprint is recorded); the step-0 evaluation, the warm start's and
the same in every mode, is played once per seed and read back by the seed's other modes. The final
evaluation is summarised over seeds with ``evolver_gym.core.stats``: the mean of the per-seed means,
Student's t interval over seeds (what another seed would give), the evaluation-noise interval, and each
mode's paired difference to basic.
``steps@.9`` is the first evaluated step at which a mode's mean curve reaches 90% of basic's best
mean success (AgentEvolver, Table 6). The mechanisms' own metrics (injection rate, synthetic share,
label agreement with the oracle, clip and ratio statistics, the experience pool's real size) are the
trainer's logged values, averaged over the run's steps (the pool size: its last value).

The recipe is ``configs/quickstart.yaml`` (product-held-out split, overall mode).

Writes ``<out-dir>/learning_webshop.json`` (raw curves, per-episode outcomes, logged metrics), the PNG
and the markdown table (``--results``).

The study is resumable, and its seeds can run side by side: each finished run is recorded as
``<records>/seed<S>/<mode>.json`` (by default ``<results>_runs/``, next to the table, so that the records
are committed with it) with the budget it ran under and the code it ran (git commit), and a later call
with the same budget reuses it instead of training again (a warm start in ``--out-dir`` likewise). So a
killed study continues where it stopped, a study can be spread over machines that share only the
repository, and ``--seeds 1,`` and ``--seeds 2,`` (seed 1 alone, seed 2 alone), or one seed split by
``--modes``, can run as processes side by side (one per core; a seed's warm start is trained once, the
others wait for it) before a last call with ``--seeds 3`` writes the table from their records. The table
names every commit its runs came from.
``--warm-start runs/qs_s{seed}/sft`` uses the README command's warm starts (``evolver train --config
configs/quickstart.yaml --seed S``) instead of training them again, once their recorded settings match.

    python benchmarks/learning_webshop.py                                  # full: 5 modes x 3 seeds (hours)
    python benchmarks/learning_webshop.py --seeds 1, --eval-every 20 --modes basic,questioning &
    python benchmarks/learning_webshop.py --seeds 1, --eval-every 20 --modes navigation,attribution,overall
    python benchmarks/learning_webshop.py --seeds 3 --eval-every 20        # the recorded ablation's table
    python benchmarks/learning_webshop.py --steps 2 --seeds 1 --eval-every 1 --eval-episodes 8 \\
        --sft-steps 20 --sft-demos 64 --results /tmp/ablation_smoke.md     # smoke test: minutes
    python benchmarks/learning_webshop.py --modes basic,attribution,attribution_rules,gigpo --eval-every 30 \\
        --recipe-args "--env-kwargs '{\"num_products\": 600, \"max_steps\": 15, \"goals\": \"synthetic\", \\
        \"split_scheme\": \"product\", \"sponsored_results\": 10}' --max-turns 15 --max-episode-tokens 1024" \\
        --out-dir runs/credit --results benchmarks/results/credit_assignment.md   # credit assignment
    python benchmarks/learning_webshop.py --modes navigation,navigation_strip --reference navigation \\
        --eval-every 20 --recipe-args "--steps-per-generation 2" \\
        --out-dir runs/nav_clip --results benchmarks/results/navigation_clip.md      # keep against strip
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import hashlib
import json
import os
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODES = ("basic", "questioning", "navigation", "attribution", "overall", "attribution_rules", "gigpo",
         "navigation_strip")
DEFAULT_MODES = MODES[:5]  # the mechanism ablation
LABELS = {"basic": "basic (plain GRPO)", "questioning": "+questioning", "navigation": "+navigating",
          "attribution": "+attributing", "overall": "overall (all three)",
          "attribution_rules": "+attributing, rule labels", "gigpo": "GiGPO (no labels)",
          "navigation_strip": "+navigating, strip"}
COLOURS = {"basic": "tab:blue", "questioning": "tab:green", "navigation": "tab:purple", "attribution": "tab:orange",
           "overall": "tab:red", "attribution_rules": "tab:brown", "gigpo": "tab:olive", "navigation_strip": "tab:pink"}
# The trainer's logged metrics kept per run: the mechanisms' own, and the loss's ratio and clip statistics.
METRIC_PREFIXES = ("exp/", "tasks/", "attr/", "ratio/", "clip_ratio/")


RECIPE = ROOT / "configs" / "quickstart.yaml"


def _config(mode: str, args: argparse.Namespace, seed: int, output_dir: Path, model: str):
    """The run's ``RunConfig``: the recipe with the benchmark's budget and seed."""
    from evolver_train.train_cli import parse_config

    argv = [
        "--config",
        str(RECIPE),
        "--output-dir",
        str(output_dir),
        "--model-name-or-path",
        model,
        "--seed",
        str(seed),
        "--rollout-seed",
        str(seed),
        *(["--max-steps", str(args.steps)] if args.steps else []),
        "--max-train-minutes",
        "0",
        "--evolver-eval-episodes",
        "0",
        "--evolver-eval-interval",
        "0",
        "--save-strategy",
        "no",
        "--report-to",
        "none",
        "--logging-steps",
        "1",
        "--disable-tqdm",
        "true",
        *shlex.split(args.recipe_args),
    ]
    if args.tasks_per_step:
        argv += [
            "--per-device-train-batch-size",
            str(args.tasks_per_step * args.group),
            "--num-generations",
            str(args.group),
        ]
    run = parse_config(argv)
    if mode in ("basic", "gigpo"):
        # Plain GRPO: the same recipe with every mechanism off (fixed training tasks, outcome advantage);
        # GiGPO adds its anchor-state step advantage, which needs no labels.
        run.train.wrappers, run.mechanisms = [], {}
        if mode == "gigpo":
            run.train.gigpo_omega = 1.0
    elif mode == "navigation_strip":  # navigation alone, trained on the context without the experience block
        run.train.wrappers = ["navigation"]
        run.mechanisms = {"navigation": dataclasses.replace(run.mechanisms["navigation"], experience_mode="strip")}
    elif mode == "attribution_rules":
        run.train.wrappers = ["attribution"]
        run.mechanisms = {"attribution": dataclasses.replace(run.mechanisms["attribution"], attributor="rules")}
    elif mode != "overall":  # one mechanism alone, with the recipe's settings for it
        if mode not in run.mechanisms:
            raise SystemExit(f"the recipe {RECIPE.name} has no {mode!r} mechanism to run alone")
        run.train.wrappers, run.mechanisms = [mode], {mode: run.mechanisms[mode]}
    run.train.sft = None
    return run


def _budget(args: argparse.Namespace, *, warm_start: bool = False) -> dict[str, Any]:
    """What a saved run must have been run with to be reused (the warm start's part, or the whole)."""
    keys = ["sft_steps", "sft_demos", "recipe_args"]
    if not warm_start:
        keys += ["steps", "eval_every", "eval_episodes", "tasks_per_step", "group"]
    return {k: getattr(args, k) for k in keys}


def _code_version() -> str:
    """The git commit the benchmark runs from (``+dirty`` with uncommitted changes), or ``unknown``."""
    import subprocess

    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def _saved(path: Path, budget: Any) -> dict[str, Any] | None:
    """The result saved at ``path`` if it was run with ``budget``, else None (absent, unreadable or other)."""
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return saved["result"] if saved.get("budget") == budget else None


def _save(path: Path, budget: Any, result: dict[str, Any]) -> None:
    """Write atomically, so that a killed process never leaves a half-written result to be reused.

    Compact JSON: a record holds every evaluated episode's outcome and is committed with the table."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"budget": budget, "result": result}, separators=(",", ":"), sort_keys=True) + "\n")
    os.replace(tmp, path)


def _digest(value: Any) -> str:
    """A short stable hash of a JSON-able value."""
    blob = json.dumps(value, sort_keys=True, default=str).encode()
    return hashlib.blake2b(blob, digest_size=8).hexdigest()


def _warm_start(args: argparse.Namespace, seed: int, folder: Path) -> str:
    """SFT on oracle demonstrations into ``folder/sft``; shared by every mode of the seed.

    With ``--warm-start``, the seed's existing checkpoint is used instead, once its ``sft_config.json``
    shows it was trained exactly as this warm start would be (e.g. the README command's, same seed).
    """
    from evolver_train.train_cli import run_warm_start, warm_start_config

    run = _config("overall", args, seed, folder, "tiny")
    import yaml

    run.train.sft = dict((yaml.safe_load(RECIPE.read_text()) or {}).get("sft") or {})
    if args.sft_steps:  # a step budget, like the recipe's: the same seed gives the same warm start anywhere
        run.train.sft.update(max_steps=args.sft_steps, max_minutes=0)
    if args.sft_demos:
        run.train.sft.update(num_demonstrations=args.sft_demos)
    if args.warm_start:
        return _matching_warm_start(Path(args.warm_start.replace("{seed}", str(seed))), warm_start_config(run))
    marker, budget = folder / "sft_budget.json", _budget(args, warm_start=True)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "sft.lock", "w") as lock:
        # Processes that split a seed's modes (--modes) share its warm start: the first trains it while the
        # others wait here, then find it finished.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "sft" / "config.json").exists() and _saved(marker, budget) is not None:
            return str(folder / "sft")  # resumable: a finished warm start of the same budget is reused
        sft_dir = run_warm_start(run)
        _save(marker, budget, {"sft_dir": str(sft_dir), "code": _code_version()})
    return sft_dir


def _matching_warm_start(folder: Path, expected: Any) -> str:
    """``folder`` if it ran every step of the warm start ``expected`` (an ``SFTConfig``) describes; otherwise
    a one-line error naming the first differing setting."""
    from evolver_train.sft import finished_sft_mismatch

    reason = finished_sft_mismatch(folder, expected)
    if reason is not None:
        raise SystemExit(f"--warm-start: {reason}, as this study's warm start would be")
    return str(folder)


def _run_or_reuse(
    mode: str, args: argparse.Namespace, seed: int, sft_dir: str, folder: Path, record: Path
) -> dict[str, Any]:
    """The run's record if one of the same budget exists, else a new run in ``folder`` (then recorded)."""
    budget = _budget(args)
    result = _saved(record, budget)
    if result is not None:
        print(f"  seed {seed} {mode}: reusing the finished run recorded in {record} (code {result.get('code')})",
              flush=True)
        return result
    result = {**_run(mode, args, seed, sft_dir, folder), "code": _code_version(), "warm_start": sft_dir}
    _save(record, budget, result)
    return result


def _run(mode: str, args: argparse.Namespace, seed: int, sft_dir: str, folder: Path) -> dict[str, Any]:
    """One GRPO run with held-out evaluations on the way; returns its curve and wall time."""
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback

    from evolver_train.envs import build_training_environment
    from evolver_train.evaluation import RolloutSettings, evaluate_policy
    from evolver_train.train_cli import load_model
    from evolver_train.trainer import EvolverGRPOTrainer

    run = _config(mode, args, seed, folder / mode, sft_dir)
    config = run.train
    built = build_training_environment(config, run.mechanisms)
    model, tokenizer = load_model(run)
    probe = built.base_env_factory()
    dev = probe.unwrapped.tasks("dev")[: args.eval_episodes]
    probe.close()
    curve: list[dict[str, float]] = []

    settings = RolloutSettings.from_config(config)
    # The step-0 evaluation is the warm start's, the same in every mode of the seed: computed once, then
    # read back by the seed's other modes (keyed by everything it depends on, the code included).
    key = _digest({"warm_start": sft_dir, "tasks": [t.task_id for t in dev], "seed": seed,
                   "env_id": config.env_id, "env_kwargs": config.env_kwargs, "code": _code_version(),
                   "shaping": list(getattr(config, "observation_shaping", []) or []),
                   "rollout": dataclasses.asdict(settings)})
    step0 = folder / f"step0_{key}.json"

    def evaluate(step: int, policy: Any) -> None:
        cached = _saved(step0, key) if step == 0 else None
        if cached is not None:
            curve.append(cached)
            print(f"  seed {seed} {mode:7s} step    0: success {curve[-1]['success_rate']:.3f} "
                  f"(the warm start's evaluation, read from {step0.name})", flush=True)
            return
        report = evaluate_policy(
            policy,
            tokenizer,
            config.env_id,
            tasks=dev,
            k=1,
            temperature=1.0,
            env_kwargs=config.env_kwargs,
            observation_shaping=getattr(config, "observation_shaping", []) or [],
            rollout=settings,
            seed=seed + 1000,
        )
        curve.append({"step": step, "success_rate": report["success_rate"], "score": report["score"],
                      "successes": [s for task in report["per_task"] for s in task["successes"]],
                      "sample": report["sample"]["fingerprint"]})
        if step == 0:
            _save(step0, key, curve[-1])
        print(
            f"  seed {seed} {mode:7s} step {step:4d}: success {report['success_rate']:.3f} "
            f"score {report['score']:.3f}",
            flush=True,
        )

    class Curve(TrainerCallback):
        def on_step_end(self, a, state, control, **kw):
            if state.global_step % args.eval_every == 0 or state.global_step == state.max_steps:
                evaluate(state.global_step, kw["model"])

    trainer = EvolverGRPOTrainer(
        model,
        config,
        built.env_factory,
        tasks=None if built.samples_tasks else built.train_tasks,
        hooks=built.hooks,
        processing_class=tokenizer,
        callbacks=[Curve()],
    )
    trainer.remove_callback(PrinterCallback)  # logged every step for the metrics below, not for the console
    evaluate(0, trainer.model)
    started = time.monotonic()
    trainer.train()
    logged: dict[str, list[float]] = {}
    for row in trainer.state.log_history:
        for key, value in row.items():
            if key.startswith(METRIC_PREFIXES) and isinstance(value, (int, float)):
                logged.setdefault(key, []).append(float(value))
    metrics = {k: v[-1] if k == "exp/pool_size" else statistics.fmean(v) for k, v in sorted(logged.items())}
    return {"curve": curve, "train_seconds": time.monotonic() - started, "plugin": dict(trainer.plugin_state),
            "metrics": metrics}


def _summarise(runs: dict[str, dict[int, dict[str, Any]]], reference: str = "basic") -> dict[str, Any]:
    """Per mode: mean +- std curves over seeds, the final evaluation over seeds with its intervals, the
    paired difference to the reference mode, steps@.9 of the reference's best, and the logged metrics
    averaged over seeds."""
    from evolver_gym.core.stats import difference_interval, summarize_over_seeds

    out: dict[str, Any] = {}
    for mode, by_seed in runs.items():
        if not by_seed:
            continue
        steps = sorted({p["step"] for r in by_seed.values() for p in r["curve"]})
        mean, std = [], []
        for s in steps:
            vals = [p["success_rate"] for r in by_seed.values() for p in r["curve"] if p["step"] == s]
            mean.append(statistics.fmean(vals))
            std.append(statistics.pstdev(vals) if len(vals) > 1 else 0.0)
        final = {seed: r["curve"][-1]["successes"] for seed, r in by_seed.items()}
        names = sorted({k for r in by_seed.values() for k in r.get("metrics", {})})
        out[mode] = {
            "steps": steps,
            "mean": mean,
            "std": std,
            "start": summarize_over_seeds({seed: r["curve"][0]["successes"] for seed, r in by_seed.items()}),
            "final": summarize_over_seeds(final),
            "best": [max(p["success_rate"] for p in r["curve"]) for r in by_seed.values()],
            "samples": sorted({p["sample"] for r in by_seed.values() for p in r["curve"]}),
            "train_seconds": [r["train_seconds"] for r in by_seed.values()],
            "code": sorted({r.get("code", "unknown") for r in by_seed.values()}),
            "metrics": {k: statistics.fmean(r["metrics"][k] for r in by_seed.values() if k in r.get("metrics", {}))
                        for k in names},
        }
    base = runs.get(reference) or {}
    for mode, block in out.items():
        if mode != reference and base and set(base) == set(runs[mode]):
            # Paired t over seeds; with one seed there is no spread over seeds, only the evaluation's noise.
            method = "t" if len(base) > 1 else "bootstrap"
            block["versus"] = difference_interval({s: r["curve"][-1]["successes"] for s, r in runs[mode].items()},
                                                  {s: r["curve"][-1]["successes"] for s, r in base.items()},
                                                  method=method)
    out["reference"] = reference
    if reference in out and max(out[reference]["mean"]) > 0:
        # (A reference that never succeeds has no best to reach: steps@.9 is then undefined.)
        target = 0.9 * max(out[reference]["mean"])
        out["target"] = target
        for block in (v for k, v in out.items() if k in MODES):
            reached = [s for s, m in zip(block["steps"], block["mean"], strict=True) if m >= target]
            block["steps_at_90"] = reached[0] if reached else None
    return out


def _short_label(mode: str) -> str:
    """A mode's label without its parenthesis: "basic", "+navigating"."""
    return LABELS[mode].split(" (")[0]


def _plot(summary: dict[str, Any], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7, 4.2))
    tops = [0.1]
    for mode in MODES:
        block = summary.get(mode)
        if not block:
            continue
        lo = [m - s for m, s in zip(block["mean"], block["std"], strict=True)]
        hi = [m + s for m, s in zip(block["mean"], block["std"], strict=True)]
        ax.plot(block["steps"], block["mean"], color=COLOURS[mode], marker="o", ms=3, label=LABELS[mode])
        ax.fill_between(block["steps"], lo, hi, color=COLOURS[mode], alpha=0.15)
        tops += hi
    if "target" in summary:
        ax.axhline(summary["target"], color="grey", ls="--", lw=1,
                   label=f"90% of {_short_label(summary['reference'])}'s best")
    ax.set_ylim(0.0, min(1.0, max(tops) * 1.15))  # a success rate: never below 0
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("held-out success rate (T=1)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _interval(block: dict[str, Any]) -> str:
    lo, hi = block["interval"]
    if block["num_seeds"] < 2:  # one seed: the evaluation noise is the only interval there is
        lo, hi = block["episode_interval"]
        return f"{block['mean']:.3f} [{lo:.3f}, {hi:.3f}] (episodes)"
    return f"{block['mean']:.3f} [{lo:.3f}, {hi:.3f}]"


def _metrics(metrics: dict[str, float]) -> str:
    shown = {"exp/injection_rate": "injected", "exp/pool_size": "pool", "tasks/synthetic_rate": "synthetic",
             "attr/oracle_agreement": "agreement", "attr/good_rate": "GOOD", "attr/fallback_rate": "fallback",
             "clip_ratio/region_mean": "clipped", "clip_ratio/experience_region_mean": "experience rows clipped",
             "exp/ratio_max_deviation": "their largest ratio deviation"}
    parts = [f"{label} {metrics[key]:.3g}" for key, label in shown.items() if key in metrics]
    return ", ".join(parts) or "-"


def _markdown(
    summary: dict[str, Any], args: argparse.Namespace, command: str, png: Path, seeds: list[int], setup: str
) -> str:
    modes = [m for m in MODES if summary.get(m)]
    study = args.title or (
        "the mechanism ablation" if set(modes) <= set(DEFAULT_MODES)
        else "credit assignment" if set(modes) <= {"basic", "attribution", "attribution_rules", "gigpo"}
        else "experience in training, keep against strip" if set(modes) <= {"basic", "navigation", "navigation_strip"}
        else ", ".join(LABELS[m] for m in modes))
    ref = _short_label(summary["reference"])
    lines = [f"# Learning on WebShop: {study}", "", f"Command: `{command}`", "", setup, ""]
    if args.steps < 20:
        lines += [
            "**Smoke run** (a few steps, a short warm start): it checks the pipeline, not learning.",
            "",
        ]
    samples = sorted({s for mode in MODES for s in (summary.get(mode) or {}).get("samples", [])})
    codes = sorted({c for mode in MODES for c in (summary.get(mode) or {}).get("code", [])})
    lines += [
        f"Seeds {seeds}; {args.steps} GRPO steps per run; held-out success = {args.eval_episodes} dev goals, "
        f"one episode each at temperature 1, no experience in the prompt (evaluation sample "
        f"{', '.join(samples)}). Success: mean of the per-seed means [95% Student t interval over seeds; "
        f"with one seed, the Wilson interval over episodes]; difference to {ref}: paired t over seeds (with "
        "one seed, a bootstrap over the evaluation's episodes).",
        "",
        f"Code: {', '.join(codes)}" + (" (runs from more than one commit: compare with care)." if len(codes) > 1
                                        else "."),
        "",
        *([f"Warm starts: the existing checkpoints `{args.warm_start}`, checked against the recipe's SFT settings.",
           ""] if args.warm_start else []),
        f"| mode | step 0 (warm start) | final | final − {ref} | steps@.9 | mechanism metrics (mean over steps) "
        "| train min |",
        "|---|---|---|---|---|---|---|",
    ]
    for mode in MODES:
        b = summary.get(mode)
        if not b:
            continue
        reached = b.get("steps_at_90")
        at90 = "n/a" if "target" not in summary else reached if reached is not None else "not reached"
        diff = b.get("versus")
        if diff is None:
            versus = "-"
        else:
            lo, hi = diff["interval"]
            versus = f"{diff['difference']:+.3f} [{lo:+.3f}, {hi:+.3f}]"
            versus += " (episodes)" if diff["method"] == "bootstrap" else ""
        lines.append(
            f"| {LABELS[mode]} | {_interval(b['start'])} | {_interval(b['final'])} | {versus} | {at90} | "
            f"{_metrics(b['metrics'])} | {statistics.fmean(b['train_seconds']) / 60:.1f} |"
        )
    if "target" in summary:
        lines += [
            "",
            f"steps@.9: first evaluated step where the mean curve reaches 90% of {ref}'s best mean success "
            f"({summary['target']:.3f})."
            + (" AgentEvolver reports 55–67% fewer steps with attribution (Table 6)."
               if any(m.startswith("attribution") or m == "overall" for m in modes) else ""),
        ]
        base = summary[summary["reference"]]
        if base["mean"].index(max(base["mean"])) == 0:
            lines.append(f"The best of {ref} is its warm start (step 0): GRPO did not improve on it, so steps@.9 "
                         "measures nothing here.")
    shown = [m for m in MODES if summary.get(m)]
    lines += ["", "| step | " + " | ".join(LABELS[m] for m in shown) + " |", "|---|" + "---|" * len(shown)]
    for i, s in enumerate(summary[shown[0]]["steps"]):
        cells = [f"{summary[m]['mean'][i]:.3f} ± {summary[m]['std'][i]:.3f}" if i < len(summary[m]["mean"]) else ""
                 for m in shown]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lines += ["", "(mean ± std over seeds at each evaluated step)", "", f"![learning curves]({png.name})", ""]
    return "\n".join(lines)


def _parse(argv: list[str] | None) -> tuple[argparse.Namespace, list[int], list[str]]:
    """The study's options, its seeds and its modes; a bad value exits with one line naming it."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=0,
                   help="GRPO steps per run, the same budget for both modes (0 = the recipe's max_steps).")
    p.add_argument("--seeds", default="3",
                   help="Number of seeds (0..n-1) or a comma-separated list ('2,' is seed 2 alone).")
    p.add_argument(
        "--eval-every", type=int, default=10, help="Evaluate every N steps (and at 0 and the end)."
    )
    p.add_argument("--eval-episodes", type=int, default=595,
                   help="Held-out dev goals per evaluation (595 = every dev goal of the quickstart's shop).")
    p.add_argument("--sft-steps", type=int, default=0, help="SFT warm start steps per seed (0 = the recipe's).")
    p.add_argument("--warm-start", default="",
                   help="An existing SFT checkpoint per seed, '{seed}' in the path (e.g. runs/qs_s{seed}/sft), "
                        "used instead of training one; refused unless its sft_config.json matches this warm start.")
    p.add_argument("--sft-demos", type=int, default=0, help="SFT demonstrations (0 = the recipe's).")
    p.add_argument("--tasks-per-step", type=int, default=0, help="Tasks per GRPO step (0 = the recipe's).")
    p.add_argument("--group", type=int, default=8, help="G, with --tasks-per-step.")
    p.add_argument("--modes", default=",".join(DEFAULT_MODES),
                   help=f"Modes to run (comma-separated, of {', '.join(MODES)}).")
    p.add_argument("--title", default="",
                   help="The table's heading after 'Learning on WebShop:' (default: named after the modes).")
    p.add_argument("--reference", default="",
                   help="The mode every other is compared with (paired difference, steps@.9); one of --modes "
                        "(default: basic when it is run, else the first of --modes, so that a study split "
                        "by --modes runs without naming it).")
    p.add_argument("--recipe-args", default="",
                   help="More evolver train options for the warm start and every mode (one shell-quoted string), "
                        "e.g. \"--max-turns 15 --env-kwargs '{...}'\".")
    p.add_argument("--out-dir", default="runs/learning_webshop",
                   help="Warm starts, checkpoints and the study's raw JSON.")
    p.add_argument(
        "--results",
        default=str(ROOT / "benchmarks" / "results" / "learning_webshop.md"),
        help="Markdown table; the PNG is written next to it.",
    )
    p.add_argument("--records", default="",
                   help="Each finished run's record, reused by a later call of the same budget "
                        "(default: the --results path without .md, plus _runs).")
    args = p.parse_args(argv)
    if not args.steps:
        import yaml

        args.steps = int((yaml.safe_load(RECIPE.read_text()) or {}).get("max_steps") or 200)
    try:  # a count N (seeds 0..N-1), or a list: "0,2", or "2," for seed 2 alone
        seeds = (list(range(int(args.seeds))) if args.seeds.isdigit()
                 else list(dict.fromkeys(int(s) for s in args.seeds.split(",") if s.strip())))
    except ValueError:
        seeds = []
    if not seeds:
        raise SystemExit(f"--seeds must be a count >= 1 or a comma-separated list of seeds, got {args.seeds!r}")
    modes = [m for m in args.modes.split(",") if m]
    if not modes or any(m not in MODES for m in modes):
        raise SystemExit(f"--modes must name {MODES}, got {args.modes!r}")
    if not args.reference:
        args.reference = "basic" if "basic" in modes else modes[0]
    if args.reference not in modes:
        raise SystemExit(f"--reference must be one of the study's --modes {modes}, got {args.reference!r}")
    return args, seeds, modes


def main(argv: list[str] | None = None) -> int:
    args, seeds, modes = _parse(argv)
    command = "python benchmarks/learning_webshop.py " + " ".join(
        shlex.quote(a) for a in (argv or sys.argv[1:])
    )
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = Path(args.results)
    records = Path(args.records) if args.records else results.with_name(results.stem + "_runs")
    started = time.monotonic()
    runs: dict[str, dict[int, dict[str, Any]]] = {m: {} for m in modes}
    for seed in seeds:
        folder, sft_dir = out_dir / f"seed{seed}", ""
        for mode in modes:
            record = records / f"seed{seed}" / f"{mode}.json"
            if not sft_dir and _saved(record, _budget(args)) is None:  # the warm start only when a run needs it
                print(f"== seed {seed}: SFT warm start ==", flush=True)
                sft_dir = _warm_start(args, seed, folder)
            print(f"== seed {seed}: {mode} mode, {args.steps} steps ==", flush=True)
            runs[mode][seed] = _run_or_reuse(mode, args, seed, sft_dir, folder, record)
            (out_dir / "learning_webshop.json").write_text(json.dumps({"runs": runs}, indent=1))
    summary = _summarise(runs, args.reference)
    probe_run = _config("overall", args, seeds[0], out_dir / "probe", "tiny")
    cfg, mech = probe_run.train, probe_run.mechanisms
    setup = (
        f"Recipe `{RECIPE.relative_to(ROOT)}`: {cfg.env_id} {json.dumps(cfg.env_kwargs)}, "
        f"{cfg.per_device_train_batch_size // cfg.num_generations} tasks x G={cfg.num_generations} per step, "
        f"lr {cfg.learning_rate}, max {cfg.max_turns} turns; overall = {', '.join(cfg.wrappers)}, "
        f"alpha {mech['attribution'].attribution_alpha}, eta {mech['navigation'].experience_share}; a mode "
        f"named after one mechanism runs it alone with these settings. This call took "
        f"{(time.monotonic() - started) / 60:.1f} min on {os.cpu_count()} CPU cores (saved runs are reused; "
        f"'train min' is each run's own GRPO time)."
    )
    png = results.with_suffix(".png")
    _plot(summary, png, f"WebShop product-held-out success, {len(seeds)} seed(s), mean ± std over seeds")
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(_markdown(summary, args, command, png, seeds, setup))
    (out_dir / "learning_webshop.json").write_text(json.dumps({"runs": runs, "summary": summary}, indent=1))
    print(results.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
