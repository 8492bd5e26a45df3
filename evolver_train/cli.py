"""The ``evolver`` command: one entry point, a subcommand per capability.

Each subcommand lives in the package that owns it and is imported only when used, so
``evolver arena ...`` does not import torch and ``evolver train ...`` does not import pettingzoo.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["main", "SUBCOMMANDS"]

# name -> ("module:function", one-line help). The function takes argv (list[str]) and returns an exit code.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "play": ("evolver_gym.cli:play_main", "play the oracle and baseline policies on an environment and print scores"),
    "train": ("evolver_train.train_cli:main", "train a policy with GRPO (basic or overall mode) from a YAML config"),
    "sft": ("evolver_train.sft:main", "supervised warm start of a policy on oracle demonstrations"),
    "eval": ("evolver_train.eval_cli:main", "evaluate a checkpoint: avg@k / best@k, success and score"),
    "models": ("evolver_train.models:main", "fetch offline pretrained chat models as checkpoint folders"),
    "arena": ("arena.cli:main", "Avalon games, tournaments and the web viewer"),
    "experience": ("wrappers.navigation.cli:main", "build, search, inspect and export an experience pool"),
    "questions": ("wrappers.questioning.cli:main", "synthesize and curate training tasks"),
}


def _usage() -> str:
    width = max(len(k) for k in SUBCOMMANDS)
    lines = ["usage: evolver <command> [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
    lines += ["", "Run 'evolver <command> --help' for the options of one command."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help", "help"}:
        print(_usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"evolver: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    target, _ = SUBCOMMANDS[name]
    module_name, func_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        print(f"evolver {name}: needs a module that is not installed ({exc.name}); "
              f"install the extras with: pip install 'evolver-gym[all]'", file=sys.stderr)
        return 2
    return int(getattr(module, func_name)(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
