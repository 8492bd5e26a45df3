"""The ``evolver`` command: one entry point, a subcommand per capability.

Each subcommand lives in the package that owns it and is imported only when used, so
``evolver arena ...`` does not import torch and ``evolver train ...`` does not import pettingzoo.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

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
    "appworld": ("evolver_gym.appworld.cli:main", "AppWorld sandbox diagnostics: 'doctor' prints the active OS layers"),
}


def _usage() -> str:
    width = max(len(k) for k in SUBCOMMANDS)
    lines = ["usage: evolver [--debug] <command> [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in SUBCOMMANDS.items()]
    lines += ["", "Run 'evolver <command> --help' for the options of one command;",
              "'evolver --debug <command> ...' (or EVOLVER_DEBUG=1) shows the traceback of an error."]
    return "\n".join(lines)


# Top-level modules of the optional extras, to name the extra a missing import needs.
_EXTRA_OF_MODULE = {
    **dict.fromkeys(
        ("torch", "transformers", "peft", "trl", "accelerate", "datasets", "tensorboard", "matplotlib"), "train"
    ),
    "pettingzoo": "arena",
    **dict.fromkeys(("openai", "dotenv"), "llm"),
    **dict.fromkeys(("pymilvus", "milvus_lite", "sentence_transformers", "threadpoolctl"), "memory"),
}


def _expected_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean bad input (a value, a path, a file's contents), not a bug: one line each."""
    errors: list[type[BaseException]] = [ValueError, LookupError, OSError, ImportError]
    try:
        import yaml

        errors.append(yaml.YAMLError)
    except ImportError:  # pragma: no cover - pyyaml is a core dependency
        pass
    try:
        import gymnasium

        errors.append(gymnasium.error.Error)
    except ImportError:  # pragma: no cover - gymnasium is a core dependency
        pass
    return tuple(errors)


def _one_line(exc: BaseException) -> str:
    """The error as one line that names the bad value."""
    from evolver_gym.install_check import install_hint

    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        extra = _EXTRA_OF_MODULE.get(top)
        if extra:
            hint = f"install the `{extra}` extra: {install_hint(extra)}"
            return f"needs `{top}`, which is not installed: {hint}"
        return f"needs the module `{exc.name}`, which is not installed"
    if isinstance(exc, KeyError):
        text = f"unknown key {exc.args[0]!r}" if exc.args else "unknown key"
    elif isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.strerror or type(exc).__name__}: {exc.filename!r}"
    else:
        text = str(exc) or type(exc).__name__
    text = " ".join(part.strip() for part in text.splitlines() if part.strip())
    # YAML and gymnasium errors do not say what they are; a bare message needs its kind.
    kind = type(exc).__name__
    if "yaml" in type(exc).__module__:
        text = f"invalid YAML: {text}"
    elif not isinstance(exc, (ValueError, KeyError, OSError)) and kind not in text:
        text = f"{kind}: {text}"
    return text if len(text) <= 400 else text[:397] + "..."


def _short_argparse_error(self: argparse.ArgumentParser, message: str) -> NoReturn:
    """argparse's error, with a one-line usage instead of every option (``--help`` lists them)."""
    self.exit(2, f"usage: {self.prog} [options]  (see '{self.prog} --help')\n{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    """Run ``evolver <command> ...``.

    Bad input (a missing file, an unknown key, a bad value, invalid YAML, an unknown env id, a
    missing extra) ends with one line naming it and exit status 2; ``--debug`` before the command
    (or ``EVOLVER_DEBUG=1``) shows the traceback instead. A bad command-line flag prints a one-line
    usage and the error.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("EVOLVER_DEBUG", "").lower() in {"1", "true", "yes", "on"}
    while argv and argv[0] == "--debug":
        debug, argv = True, argv[1:]
    if not argv or argv[0] in {"-h", "--help", "help"}:
        print(_usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"evolver: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    target, _ = SUBCOMMANDS[name]
    module_name, func_name = target.split(":")
    from evolver_gym.install_check import check_install

    try:
        check_install()
    except ImportError as exc:
        print(f"evolver: error: {exc}", file=sys.stderr)
        return 2
    original_error = argparse.ArgumentParser.error
    if not debug:
        argparse.ArgumentParser.error = _short_argparse_error  # type: ignore[method-assign]
    try:
        module = importlib.import_module(module_name)
        return int(getattr(module, func_name)(rest) or 0)
    except _expected_errors() as exc:
        if debug:
            raise
        print(f"evolver {name}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"evolver {name}: interrupted", file=sys.stderr)
        return 130
    finally:
        argparse.ArgumentParser.error = original_error  # type: ignore[method-assign]


if __name__ == "__main__":
    raise SystemExit(main())
