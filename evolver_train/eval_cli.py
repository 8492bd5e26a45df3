"""``evolver eval``: evaluate a checkpoint from the command line and write a JSON report.

* ``main`` - parse the flags (defaults from what the checkpoint recorded), run
  :func:`evolver_train.evaluation.evaluate_policy`, print a summary and write the report.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from evolver_gym.cli_args import (
    check_env_kwargs,
    parse_env_kwargs,
    rename_flags,
    rename_keys,
    renamed_option_flags,
    underscore_flags,
)

from .config import RENAMED_OPTIONS
from .errors import check_checkpoint_folder, check_env_id, read_yaml
from .evaluation import OraclePolicy, RolloutSettings, _make_env_factory, evaluate_policy, load_checkpoint

__all__ = ["main"]


# -- command line ------------------------------------------------------------------------------

_ROLLOUT_FLAGS = (
    "max_turns",
    "max_episode_tokens",
    "max_turn_tokens",
    "max_observation_tokens",
    "system_prompt",
)
_ROLLOUT_SWITCHES = ("allowed_actions_only",)


def _checkpoint_defaults(folder: Path) -> dict[str, Any]:
    """env_id, env_kwargs and rollout settings a checkpoint was trained with, where it records them."""
    if (folder / "sft_config.json").exists():
        record = json.loads((folder / "sft_config.json").read_text())
        # An SFT run records the action budget its demonstrations need (``rollout``); the evaluation's
        # default of 32 tokens would cut a long search action of a WebShop demonstration.
        return {**record, **(record.get("rollout") or {})}
    if (folder / "training_args.bin").exists():
        import torch

        try:  # our own file, written by the trainer: the pickled EvolverGRPOConfig
            args = torch.load(folder / "training_args.bin", weights_only=False)
        except Exception:  # noqa: BLE001 - an unreadable record only loses the defaults
            return {}
        keys = ("env_id", "env_kwargs", "observation_shaping", *_ROLLOUT_FLAGS, *_ROLLOUT_SWITCHES)
        recorded = {key: getattr(args, key, None) for key in keys}
        for old, new in RENAMED_OPTIONS.items():  # a checkpoint saved before the option was renamed
            if old in vars(args) and new not in vars(args):
                recorded[new] = vars(args)[old]
        return {key: value for key, value in recorded.items() if value is not None}
    return {}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="evolver eval",
        description="avg@k / best@k of a policy checkpoint "
        "(k sampled episodes per task), success, score, TGC/SGC, arena win rate.",
    )
    p.add_argument(
        "--checkpoint",
        required=True,
        help="Checkpoint folder (model or LoRA adapter), a hub "
        "name, or 'oracle' (the environment's reference actions: the ceiling of the evaluation).",
    )
    p.add_argument(
        "--env-id", dest="env_id", help="Gymnasium id; default: the one the checkpoint was trained on."
    )
    p.add_argument("--split", default="dev", help="Split whose tasks are played (default dev).")
    p.add_argument("--k", type=int, default=8, help="Independent samples per task (default 8).")
    p.add_argument("--temperature", type=float, default=1.0, help="Sampling temperature (default 1.0).")
    p.add_argument("--top-p", type=float, default=1.0, help="Nucleus sampling mass (default 1.0: off).")
    p.add_argument(
        "--num-tasks", type=int, help="Only the first N tasks of the split (arena: N games per k)."
    )
    p.add_argument("--env-kwargs", help="Environment constructor kwargs as JSON (default: the checkpoint's).")
    p.add_argument("--experience", choices=("on", "off"), default="off", help="Inject retrieved experience.")
    p.add_argument("--experience-uri", help="Experience pool: milvus-lite file or Milvus server URI.")
    p.add_argument("--experience-top-k", type=int, help="Experiences injected per episode (pool default).")
    p.add_argument("--experience-threshold", type=float, help="Minimum cosine similarity (pool default).")
    p.add_argument(
        "--observation-shaping",
        help="Comma-separated observation shapers (WebShop: drop_repeated_instruction, top_results=K, "
             "numbered_results); default: the checkpoint's.",
    )
    p.add_argument(
        "--config", help="Training recipe (a YAML file or a packaged recipe's name, e.g. quickstart): env_id, "
        "env_kwargs and rollout settings from it."
    )
    for name in _ROLLOUT_FLAGS:
        kind = str if name == "system_prompt" else int
        p.add_argument(
            "--" + name.replace("_", "-"),
            dest=name,
            type=kind,
            help="Rollout setting (default: "
            "the recipe's, the checkpoint's, else " + repr(getattr(RolloutSettings(), name)) + ").",
        )
    p.add_argument("--allowed-actions-only", dest="allowed_actions_only", action=argparse.BooleanOptionalAction,
                   default=None, help="Sample actions only among info['allowed_actions'] where the environment "
                                      "lists them (default: the recipe's, the checkpoint's, else off; formerly "
                                      "--valid-actions-only).")
    p.add_argument("--seed", type=int, default=0, help="Seed of resets and sampling.")
    p.add_argument("--batch-size", type=int, default=64, help="Episodes played at once.")
    p.add_argument("--device", help="torch device (default: cuda when available, else cpu).")
    p.add_argument("--out", help="Write the JSON report here (else it is printed).")
    p.add_argument("--quiet", action="store_true", help="No progress lines.")
    return p


def _summary(report: dict[str, Any]) -> str:
    k = report["k"]
    lines = [
        f"{report['env_id']} {report['split']}: {report['num_tasks']} tasks x k={k}"
        f" at T={report['temperature']} (experience {'on' if report['experience']['enabled'] else 'off'})",
        f"  avg@{k} {report['avg@k']:.3f}  best@{k} {report['best@k']:.3f}"
        f"  success {report['success_rate']:.3f}"
        f" [{report['success_rate_ci95'][0]:.3f}, {report['success_rate_ci95'][1]:.3f}]"
        f"  score {report['score']:.3f}",
    ]
    for key, block in report["by_difficulty"].items():
        lines.append(
            f"  difficulty {key}: {block['num_tasks']} tasks, avg@{k} {block['avg@k']:.3f}, "
            f"best@{k} {block['best@k']:.3f}"
        )
    if "appworld" in report:
        a = report["appworld"]
        lines.append(
            f"  TGC {a['avg']['overall']['task_goal_completion']:.1f}  SGC "
            f"{a['avg']['overall']['scenario_goal_completion']:.1f}  (best of {k}: TGC "
            f"{a['best']['overall']['task_goal_completion']:.1f}, SGC "
            f"{a['best']['overall']['scenario_goal_completion']:.1f})"
        )
    if "arena" in report:
        a = report["arena"]

        def rate(r: dict[str, Any]) -> str:
            return f"{r['win_rate']:.3f} [{r['win_rate_ci95'][0]:.3f}, {r['win_rate_ci95'][1]:.3f}]"

        if "win_rate" in a:  # one seat (evolver/AvalonSeat-v0)
            lines.append(f"  win rate {rate(a)} over {a['games']} games ({a['unfinished']} unfinished)")
        for side, r in a.get("by_side", {}).items() if "by_role" in a else ():  # several seats per game
            lines.append(f"  {side} side: win rate {rate(r)} over {r['games']} games ({a['unfinished']} unfinished) "
                         f"against {', '.join(a['opponents'])}")
        for role, r in a.get("by_role", {}).items():
            lines.append(f"    {role}: win rate {rate(r)} over {r['games']} seats")
    return "\n".join(lines)


def _validate(args: argparse.Namespace) -> None:
    """Refuse bad flags before any model or environment is loaded, naming the bad value."""
    for flag in ("k", "num_tasks", "batch_size", *(n for n in _ROLLOUT_FLAGS if n != "system_prompt")):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise ValueError(f"--{flag.replace('_', '-')} must be positive, got {value}")
    if not args.temperature >= 0:
        raise ValueError(f"--temperature must be >= 0, got {args.temperature}")
    if not 0 < args.top_p <= 1:
        raise ValueError(f"--top-p must be in (0, 1], got {args.top_p}")
    if args.experience_top_k is not None and args.experience_top_k < 1:
        raise ValueError(f"--experience-top-k must be positive, got {args.experience_top_k}")
    if args.experience == "on" and not args.experience_uri:
        raise ValueError("--experience on needs --experience-uri (the pool to retrieve from)")
    if args.config is not None:  # a file, or a packaged recipe by name (`--config appworld_apps`), as evolver train
        from .recipe import resolve_config

        try:
            args.config = resolve_config(args.config)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"--config: {exc}") from None
    checkpoint = args.checkpoint
    # A hub name ("org/model") may be fetched; anything else must be a local folder.
    if checkpoint != "oracle" and not Path(checkpoint).exists() and not re.fullmatch(r"[\w.-]+/[\w.-]+", checkpoint):
        raise FileNotFoundError(f"--checkpoint {checkpoint!r}: no such checkpoint folder")
    check_checkpoint_folder(checkpoint, "--checkpoint")  # a killed run's folder: say so, not a tokenizer error
    if re.fullmatch(r"checkpoint-\d+", Path(checkpoint).name) and Path(checkpoint).is_dir():
        from .checkpoints import checkpoint_problem

        problem = checkpoint_problem(checkpoint)  # a save that was killed half-way
        if problem is not None:
            raise ValueError(f"--checkpoint {checkpoint!r} is incomplete ({problem})")
    if args.out is not None and Path(args.out).is_dir():
        raise IsADirectoryError(f"--out {args.out!r} is a folder; give the report's file name")


# old spelling -> current one (accepted with a deprecation line)
_RENAMED = {"--env": "--env-id", **underscore_flags(("env_id", "env_kwargs", "num_tasks", "top_p", "batch_size",
                                                     "experience_uri", "experience_top_k", "experience_threshold",
                                                     "observation_shaping", *_ROLLOUT_FLAGS)),
            **renamed_option_flags(RENAMED_OPTIONS)}


def main(argv: Sequence[str] | None = None) -> int:
    argv = rename_flags(sys.argv[1:] if argv is None else argv, _RENAMED, "evolver eval")
    args = _parser().parse_args(argv)
    _validate(args)
    cli_env_kwargs = parse_env_kwargs(args.env_kwargs) if args.env_kwargs else None  # before any model loads
    oracle = args.checkpoint == "oracle"
    settings: dict[str, Any] = {} if oracle else _checkpoint_defaults(Path(args.checkpoint))
    if args.config:
        recipe = rename_keys(read_yaml(args.config), RENAMED_OPTIONS, args.config)
        settings.update({key: v for key, v in recipe.items() if v is not None})
    settings.update({name: getattr(args, name) for name in (*_ROLLOUT_FLAGS, *_ROLLOUT_SWITCHES)
                     if getattr(args, name) is not None})
    env_id = args.env_id or settings.get("env_id")
    if not env_id:
        raise ValueError("--env-id is required (the checkpoint does not record its environment)")
    check_env_id(env_id, "--env-id")
    env_kwargs = settings.get("env_kwargs") or {}
    if isinstance(env_kwargs, str):  # a recorded JSON string
        env_kwargs = parse_env_kwargs(env_kwargs, "the recorded env_kwargs")
    if cli_env_kwargs is not None:
        env_kwargs = cli_env_kwargs
    check_env_kwargs(env_id, env_kwargs, "--env-kwargs" if cli_env_kwargs is not None else "env_kwargs")
    shaping = settings.get("observation_shaping") or []
    if args.observation_shaping is not None:
        shaping = [name for name in args.observation_shaping.split(",") if name]
    common = dict(
        split=args.split,
        k=args.k,
        temperature=args.temperature,
        top_p=args.top_p,
        num_tasks=args.num_tasks,
        env_kwargs=env_kwargs,
        experience=args.experience == "on",
        experience_uri=args.experience_uri,
        experience_top_k=args.experience_top_k,
        experience_threshold=args.experience_threshold,
        observation_shaping=shaping,
        seed=args.seed,
        batch_size=args.batch_size,
        progress=not args.quiet,
    )
    if oracle:
        factory, _ = _make_env_factory(env_id, env_kwargs, False, None, None, None, shaping)
        env = factory()
        tasks = env.unwrapped.tasks(args.split)[: args.num_tasks]
        policy = OraclePolicy(tasks, env.unwrapped.oracle)
        # Some environments (Avalon) have no reference actions: their "oracle" would play nothing.
        has_reference = bool(tasks) and bool(env.unwrapped.oracle(tasks[0]))
        env.close()
        if not has_reference:
            raise ValueError(f"--checkpoint oracle: {env_id} has no reference actions to play")
        common["tasks"] = tasks
        report = evaluate_policy(
            None,
            policy.tokenizer,
            env_id,
            generate=policy.generate,
            rollout=replace(RolloutSettings.from_config(settings, policy.rollout), allowed_actions_only=False),
            **common,
        )
    else:
        import torch

        device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
        model, tokenizer = load_checkpoint(args.checkpoint, device=device)
        report = evaluate_policy(
            model, tokenizer, env_id, rollout=RolloutSettings.from_config(settings), **common
        )
    report["checkpoint"] = args.checkpoint
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(str(args.out) + ".tmp")
        tmp.write_text(json.dumps(report, indent=2, default=str))
        os.replace(tmp, args.out)  # a killed run never leaves half a report
        print(_summary(report))
        print(f"report written to {args.out}")
    else:
        print(_summary(report), file=sys.stderr)
        print(json.dumps(report, indent=2, default=str))
    return 0
