"""Command-line values shared by the ``evolver`` commands: one flag style, checked environment settings.

* ``rename_flags`` - the old spelling of a flag (``--env``, ``--env_id``) rewritten to the current one
  (``--env-id``), with one deprecation line on stderr per old flag.
* ``underscore_flags`` - the ``--old_style`` spellings of a set of option names, for ``rename_flags``.
* ``renamed_option_flags`` - every spelling of renamed options (``--old-name``, ``--old_name``, ``--no-old-name``)
  mapped to the new one's, for ``rename_flags``.
* ``rename_keys`` - the old name of a setting in a YAML recipe rewritten to the current one, with one
  deprecation line on stderr per old key (as ``rename_flags`` does for flags).
* ``parse_env_kwargs`` - ``--env-kwargs`` JSON text -> a dict, or a ``ValueError`` naming the bad text.
* ``check_env_kwargs`` - the keyword arguments an environment's constructor accepts, checked before the
  environment is built: an unknown key is named with the accepted ones.
* ``check_port`` - a TCP port number in 0-65535 (0: any free port).

The commands use dashed flags (``--env-id``, ``--env-kwargs``, ``--num-train-tasks``); TRL's own
``TrainingArguments`` options are accepted in both spellings (``--output_dir`` and ``--output-dir``).

Example:
    >>> parse_env_kwargs('{"num_products": 100}')
    {'num_products': 100}
    >>> rename_flags(["--env", "x", "--n", "3"], {"--env": "--env-id"}, "evolver play", warn=lambda line: None)
    ['--env-id', 'x', '--n', '3']
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["rename_flags", "underscore_flags", "renamed_option_flags", "rename_keys", "parse_env_kwargs",
           "check_env_kwargs", "check_port"]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def rename_flags(argv: Iterable[str], renames: Mapping[str, str], prog: str,
                 warn: Callable[[str], None] = _stderr) -> list[str]:
    """``argv`` with each old flag of ``renames`` (also in ``--old=value`` form) replaced by the new one.

    Each old flag used is reported once: ``<prog>: --env is deprecated; use --env-id``. Tokens after a
    bare ``--`` are left alone.
    """
    out: list[str] = []
    warned: set[str] = set()
    tokens = list(argv)
    for i, token in enumerate(tokens):
        if token == "--":
            out += tokens[i:]
            break
        flag, eq, value = token.partition("=")
        new = renames.get(flag) if token.startswith("--") else None
        if new is None:
            out.append(token)
            continue
        if flag not in warned:
            warn(f"{prog}: {flag} is deprecated; use {new}")
            warned.add(flag)
        out.append(new + eq + value)
    return out


def underscore_flags(names: Iterable[str]) -> dict[str, str]:
    """``{"--env_id": "--env-id", ...}`` for the names that contain an underscore.

    Example:
        >>> underscore_flags(["env_id", "seed"])
        {'--env_id': '--env-id'}
    """
    return {f"--{name}": f"--{name.replace('_', '-')}" for name in names if "_" in name}


def renamed_option_flags(renames: Mapping[str, str]) -> dict[str, str]:
    """``{old option name: new one}`` as flags: dashed, underscored and ``--no-`` spellings of each old name.

    Example:
        >>> renamed_option_flags({"valid_actions_only": "allowed_actions_only"})["--no-valid-actions-only"]
        '--no-allowed-actions-only'
    """
    flags: dict[str, str] = {}
    for old, new in renames.items():
        dashed, new_dashed = old.replace("_", "-"), new.replace("_", "-")
        flags.update({f"--{dashed}": f"--{new_dashed}", f"--{old}": f"--{new_dashed}",
                      f"--no-{dashed}": f"--no-{new_dashed}", f"--no_{old}": f"--no-{new_dashed}"})
    return flags


def rename_keys(values: dict[str, Any], renames: Mapping[str, str], where: str,
                warn: Callable[[str], None] = _stderr) -> dict[str, Any]:
    """``values`` (a recipe's settings) with each old key of ``renames`` under its new name, in place.

    Each old key found is reported once: ``<where>: valid_actions_only is deprecated; use
    allowed_actions_only``. Giving both names is a ``ValueError`` naming them.

    Example:
        >>> rename_keys({"valid_actions_only": True}, {"valid_actions_only": "allowed_actions_only"}, "r.yaml",
        ...             warn=print)
        r.yaml: valid_actions_only is deprecated; use allowed_actions_only
        {'allowed_actions_only': True}
    """
    for old, new in renames.items():
        if old not in values:
            continue
        if new in values:
            raise ValueError(f"{where}: {old} is the old name of {new}; give only {new}")
        warn(f"{where}: {old} is deprecated; use {new}")
        values[new] = values.pop(old)
    return values


def parse_env_kwargs(text: str | None, flag: str = "--env-kwargs") -> dict[str, Any]:
    """The JSON object ``text`` (``None`` or empty: ``{}``); a ``ValueError`` naming the text otherwise.

    Example:
        >>> parse_env_kwargs("[1, 2]")
        Traceback (most recent call last):
        ...
        ValueError: --env-kwargs must be a JSON object of keyword arguments, got '[1, 2]' (a list)
    """
    if text is None or not str(text).strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{flag} must be a JSON object, got {text!r}: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{flag} must be a JSON object of keyword arguments, got {text!r} "
                         f"(a {type(value).__name__})")
    return value


def _constructor(env_id: str) -> Callable[..., Any] | None:
    import gymnasium as gym

    import evolver_gym  # noqa: F401 - registers our ids

    name = env_id.split(":", 1)[1] if ":" in env_id else env_id
    try:
        spec = gym.spec(name)
    except gym.error.Error:
        return None  # an unknown id is reported by the caller's own check
    entry = spec.entry_point
    if isinstance(entry, str):
        try:
            from gymnasium.envs.registration import load_env_creator

            entry = load_env_creator(entry)
        except (ImportError, AttributeError, ValueError):
            return None
    return entry if callable(entry) else None


def check_env_kwargs(env_id: str, env_kwargs: Mapping[str, Any], where: str = "env_kwargs") -> None:
    """Raise ``ValueError`` when ``env_id``'s constructor does not accept one of ``env_kwargs``' keys.

    ``env_kwargs`` must be a mapping. A constructor that takes ``**kwargs`` accepts every key; the
    keys ``gym.make`` itself takes (``max_episode_steps``, ``render_mode``, ...) are always accepted.

    Example:
        >>> check_env_kwargs("evolver/WebShop-v0", {"num_products": 100, "bogus": 1})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: env_kwargs: evolver/WebShop-v0 takes no argument 'bogus'; it takes ...
    """
    if not isinstance(env_kwargs, Mapping):
        raise ValueError(f"{where} must be a mapping of keyword arguments, got {env_kwargs!r}")
    for key in env_kwargs:
        if not isinstance(key, str) or not key.isidentifier():
            raise ValueError(f"{where}: {key!r} is not a keyword argument name")
    creator = _constructor(env_id)
    if creator is None:
        return
    try:
        params = inspect.signature(creator).parameters
    except (TypeError, ValueError):  # a builtin or C constructor: nothing to check against
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    accepted = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and n != "self"]
    make_keys = {"max_episode_steps", "autoreset", "apply_api_compatibility", "disable_env_checker", "render_mode"}
    unknown = [k for k in env_kwargs if k not in accepted and k not in make_keys]
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], accepted, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if not close:
            hint = f"; it takes {', '.join(sorted(accepted))}"
        raise ValueError(f"{where}: {env_id} takes no argument {unknown[0]!r}{hint}")


def check_port(port: int, flag: str = "--port") -> int:
    """``port`` if it is a TCP port number (0-65535; 0 picks a free one), else a ``ValueError`` naming it.

    Example:
        >>> check_port(-1)
        Traceback (most recent call last):
        ...
        ValueError: --port must be a port number in 0-65535, got -1
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"{flag} must be a port number in 0-65535, got {port!r}")
    return port
