"""Configuration errors and the checks ``evolver train`` and ``evolver sft`` run before any work starts.

* ``ConfigError`` - a bad setting; the message names the key and the value, on one line.
* ``OneLineErrors`` - an argparse mixin: a bad flag raises ``ConfigError`` instead of printing the usage.
* ``read_yaml`` - a YAML mapping from a recipe file, or a ``ConfigError`` naming the file.
* ``coerce_yaml_value`` - a YAML value checked (and converted) by the flag's own argparse type.
* ``unknown_key`` - the error for a key no option has, with the closest known names.
* ``check_env_id`` / ``check_local_path`` - the environment is registered; a path that looks local exists.

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
           "check_local_path", "escape_help"]


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

    if not os.path.isfile(path):
        raise ConfigError(f"--config: no such file {path!r}")
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
