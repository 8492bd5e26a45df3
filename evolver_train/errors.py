"""Configuration errors and the checks ``evolver train`` and ``evolver sft`` run before any work starts.

* ``ConfigError`` - a bad setting; the message names the key and the value, on one line.
* ``OneLineErrors`` - an argparse mixin: a bad flag raises ``ConfigError`` instead of printing the usage.
* ``read_yaml`` - a YAML mapping from a recipe file, or a ``ConfigError`` naming the file.
* ``coerce_yaml_value`` - a YAML value checked (and converted) by the flag's own argparse type.
* ``unknown_key`` - the error for a key no option has, with the closest known names.
* ``check_env_id`` / ``check_local_path`` - the environment is registered; a path that looks local exists.
* ``SETTING_RANGES`` / ``check_ranges`` - the documented range of each numeric TRL, transformers and LoRA
  setting a run reads, checked before TRL's own code sees the value (``num_generations: 0`` would divide
  by zero, ``temperature: -1`` would start a run).

Nothing here imports torch or TRL, so the checks stay cheap.

Example:
    >>> unknown_key("max_step", ["max_steps", "max_turns"], "config.yaml")
    ConfigError("config.yaml: unknown option 'max_step' (did you mean 'max_steps'?)")
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
from collections.abc import Iterable
from typing import Any, NoReturn

__all__ = ["ConfigError", "OneLineErrors", "read_yaml", "coerce_yaml_value", "unknown_key", "check_env_id",
           "check_local_path", "escape_help", "SETTING_RANGES", "check_ranges", "describe_range"]


class ConfigError(ValueError):
    """A setting of a run is wrong; the message names the key and the bad value, on one line."""


class OneLineErrors:
    """Mixin for ``argparse.ArgumentParser``: errors raise ``ConfigError`` (no usage dump, no exit)."""

    def error(self, message: str) -> NoReturn:  # argparse's hook for every parse error
        raise ConfigError(" ".join(message.split()))


def escape_help(text: str | None) -> str | None:
    """Help text safe for argparse, which %-formats it (a literal ``%`` must be ``%%``)."""
    return text.replace("%", "%%") if text else text


def read_yaml(path: str) -> dict[str, Any]:
    import yaml

    from .recipe import resolve_config

    try:  # a file, or a packaged recipe by name (`--config quickstart`)
        path = resolve_config(path)
    except FileNotFoundError as exc:
        raise ConfigError(f"--config: {exc}") from None
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must hold a YAML mapping of option: value, got {type(data).__name__}")
    return data


def unknown_key(key: str, known: Iterable[str], where: str) -> ConfigError:
    close = difflib.get_close_matches(key, list(known), n=2)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    return ConfigError(f"{where}: unknown option {key!r}{hint}")


def coerce_yaml_value(action: argparse.Action, key: str, value: Any, where: str) -> Any:
    """``value`` converted by ``action.type`` the way the same value on the command line would be."""
    convert = action.type
    if value is None or convert is None or isinstance(value, (dict,)):
        return value

    def one(v: Any) -> Any:
        if isinstance(v, (dict, list)):
            raise ConfigError(f"{where}: {key} must be a single value, got {v!r}")
        if isinstance(v, bool) and convert in (int, float):
            raise ConfigError(f"{where}: {key} must be a number, got {v!r}")
        if isinstance(v, float) and convert is int and not v.is_integer():
            raise ConfigError(f"{where}: {key} must be an integer, got {v!r}")
        try:
            out = convert(int(v)) if convert is int and not isinstance(v, str) else convert(
                v if isinstance(v, str) else str(v))
        except (TypeError, ValueError, argparse.ArgumentTypeError):
            kind = {"string_to_bool": "bool", "parse": "the option's type"}.get(
                getattr(convert, "__name__", ""), getattr(convert, "__name__", str(convert)))
            raise ConfigError(f"{where}: {key} must be of type {kind}, got {v!r}") from None
        if action.choices is not None and out not in action.choices:
            raise ConfigError(f"{where}: {key} must be one of {list(action.choices)}, got {v!r}")
        return out

    if action.nargs in ("+", "*"):
        return [one(v) for v in (value if isinstance(value, list) else [value])]
    return one(value)


def check_env_id(env_id: str, key: str = "env_id") -> None:
    """``env_id`` is a registered Gymnasium id (after importing the packages that register ours)."""
    import gymnasium as gym

    import evolver_gym  # noqa: F401 - registers the environment ids

    name = env_id
    if ":" in env_id:  # gym.make's "module:id" form imports the module that registers the id
        module, name = env_id.split(":", 1)
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"{key}: cannot import {module!r} named in {env_id!r}: {exc}") from None
    if name not in gym.registry:
        ours = sorted(k for k in gym.registry if k.startswith("evolver/"))
        close = difflib.get_close_matches(name, list(gym.registry), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f"; registered: {ours}"
        raise ConfigError(f"{key}: no environment registered as {name!r}{hint}")


def check_checkpoint_folder(value: str, key: str) -> None:
    """If ``value`` is a folder, it holds a checkpoint: ``config.json`` or a LoRA ``adapter_config.json``."""
    path = os.path.expanduser(value)
    if os.path.isdir(path) and not any(
            os.path.exists(os.path.join(path, name)) for name in ("config.json", "adapter_config.json")):
        raise ConfigError(f"{key}: {value!r} holds no checkpoint (no config.json or adapter_config.json)")


def check_local_path(value: str | None, key: str, *, hub_names: bool = False) -> None:
    """``value`` exists as a file or folder; with ``hub_names`` it may instead name a cached hub model.

    With ``hub_names`` (``value`` names a model) an existing folder must hold a checkpoint: a
    ``config.json`` or a LoRA ``adapter_config.json`` (a run killed before it saved leaves neither).
    """
    if hub_names and value:
        check_checkpoint_folder(value, key)
    if not value or os.path.exists(os.path.expanduser(value)):
        return
    if hub_names and value.count("/") <= 1 and not value.startswith((".", "/", "~")):
        try:
            from huggingface_hub import try_to_load_from_cache

            if isinstance(try_to_load_from_cache(value, "config.json"), str):
                return
        except Exception:  # noqa: BLE001 - an unusable cache only means "not cached"
            pass
        raise ConfigError(f"{key}: no such folder {value!r}, and no hub model of that name in the local cache")
    raise ConfigError(f"{key}: no such file or folder {value!r}")


# name -> (lowest, lowest allowed?, highest, highest allowed?, None allowed?); None: unbounded on that side.
# The ranges TRL, transformers and PEFT document for the numeric settings ``evolver train`` passes on.
SETTING_RANGES: dict[str, tuple[float | None, bool, float | None, bool, bool]] = {
    "num_generations": (2, True, None, False, False),  # GRPO compares completions of one task: 2 at least
    "seed": (0, True, 2**32 - 1, True, False),  # numpy's seed range (transformers.set_seed seeds numpy too)
    "data_seed": (0, True, 2**32 - 1, True, True),
    "num_generations_eval": (1, True, None, False, True),
    "per_device_train_batch_size": (1, True, None, False, False),
    "per_device_eval_batch_size": (1, True, None, False, False),
    "gradient_accumulation_steps": (1, True, None, False, False),
    "generation_batch_size": (1, True, None, False, True),
    "steps_per_generation": (1, True, None, False, True),
    "num_iterations": (1, True, None, False, False),
    "num_train_epochs": (0, False, None, False, False),
    "max_completion_length": (1, True, None, False, True),
    "temperature": (0, True, None, False, False),  # 0: greedy
    "evolver_eval_temperature": (0, True, None, False, False),
    "top_p": (0, False, 1, True, False),
    "top_k": (0, True, None, False, True),  # 0: off
    "min_p": (0, True, 1, True, True),
    "repetition_penalty": (0, False, None, False, False),
    "beta": (0, True, None, False, False),
    "epsilon": (0, True, None, False, False),
    "epsilon_high": (0, True, None, False, True),
    "delta": (0, False, None, False, True),
    "top_entropy_quantile": (0, True, 1, True, False),
    "warmup_steps": (0, True, None, False, False),
    "weight_decay": (0, True, None, False, False),
    "adam_beta1": (0, True, 1, False, False),
    "adam_beta2": (0, True, 1, False, False),
    "adam_epsilon": (0, True, None, False, False),
    "max_grad_norm": (0, True, None, False, False),
    "logging_steps": (0, False, None, False, False),
    "save_steps": (0, False, None, False, False),
    "eval_steps": (0, False, None, False, True),
    "save_total_limit": (0, True, None, False, True),
    "dataloader_num_workers": (0, True, None, False, False),
    "vllm_gpu_memory_utilization": (0, False, 1, True, False),
    "vllm_server_port": (0, True, 65535, True, False),
    "vllm_group_port": (0, True, 65535, True, False),
    "vllm_server_timeout": (0, False, None, False, False),
    "lora_r": (1, True, None, False, False),
    "lora_alpha": (0, False, None, False, False),
    "lora_dropout": (0, True, 1, False, False),
}


def describe_range(name: str) -> str:
    """The documented range of ``name`` in words.

    Example:
        >>> describe_range("top_p"), describe_range("save_total_limit"), describe_range("seed")
        ('in (0, 1]', '>= 0 or None', 'in [0, 4294967295]')
    """
    low, low_in, high, high_in, none_ok = SETTING_RANGES[name]

    def num(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else f"{x:g}"

    if low is not None and high is not None:
        text = f"in {'[' if low_in else '('}{num(low)}, {num(high)}{']' if high_in else ')'}"
    elif low is not None:
        text = f"{'>=' if low_in else '>'} {num(low)}"
    else:
        text = f"{'<=' if high_in else '<'} {num(high)}"
    return text + (" or None" if none_ok else "")


def check_ranges(config: Any, names: Iterable[str] | None = None) -> None:
    """Raise ``ConfigError`` naming the first setting of ``config`` outside its documented range.

    Example:
        >>> from types import SimpleNamespace
        >>> check_ranges(SimpleNamespace(num_generations=0, temperature=1.0))
        Traceback (most recent call last):
        ...
        evolver_train.errors.ConfigError: num_generations must be >= 2, got 0
    """
    for name in SETTING_RANGES if names is None else names:
        if not hasattr(config, name):
            continue
        value = getattr(config, name)
        low, low_in, high, high_in, none_ok = SETTING_RANGES[name]
        if value is None and none_ok:
            continue
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
        if ok and low is not None:
            ok = value >= low if low_in else value > low
        if ok and high is not None:
            ok = value <= high if high_in else value < high
        if not ok:
            raise ConfigError(f"{name} must be {describe_range(name)}, got {value!r}")
