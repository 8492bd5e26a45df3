"""The one factory of Avalon seat players: training, evaluation and tournaments name opponents the same way.

* ``make_opponent`` - a factory of fresh players for a spec:

  - ``rule`` / ``rule_votes`` / ``random`` - the baseline bots (:mod:`arena.avalon.bots`);
  - ``llm:<model>@<base_url>`` - a chat model behind an OpenAI-compatible endpoint (the project's
    ``OpenAIChatClient``), through :class:`~arena.avalon.llm_seat.LLMSeat`;
  - ``checkpoint:<path>`` - a text policy in a model folder (an ``evolver train`` output or ``checkpoint-N``
    folder, its ``start`` policy, or any chat model folder such as SmolLM2-135M-Instruct), played as
    training plays it (``evolver_train.arena_seat.PolicySeat``): the training chat template and
    codec, one chat per game fed what is new since its last turn, replies sampled from the policy (seeded)
    among the legal ones only, so it never needs a fallback. The arena depends only on
    ``evolver_gym.core``: it finds that seat through the entry point ``checkpoint`` of the group
    ``evolver_gym.arena_seats`` (``SEAT_PLUGINS``), which the package declares;
  - ``self`` - the policy being trained; only a host that the policy plays through can seat it (the
    multi-seat environment, :mod:`arena.avalon.seats`), so this factory refuses it.
* ``check_opponent`` - the spec, validated (its error names the spec and the choices).
* ``OPPONENT_KINDS`` - the plain kinds, ``SELF`` - the policy's own spec.

Example:
    >>> make_opponent("rule")().name
    'rule'
    >>> check_opponent("llm:qwen@http://127.0.0.1:8000/v1")
    'llm:qwen@http://127.0.0.1:8000/v1'
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .bots import PLAYER_KINDS, Player, make_player

__all__ = ["OPPONENT_KINDS", "SELF", "SEAT_PLUGINS", "check_opponent", "make_opponent"]

SELF = "self"
SEAT_PLUGINS = "evolver_gym.arena_seats"  # entry-point group of seat kinds that live outside the arena
OPPONENT_KINDS = (*PLAYER_KINDS, SELF)
_HELP = f"use one of {OPPONENT_KINDS}, 'llm:<model>@<base_url>' or 'checkpoint:<path>'"


def check_opponent(spec: Any) -> str:
    """``spec`` if it names an opponent, else a ``ValueError`` naming it and the choices."""
    if not isinstance(spec, str):
        raise ValueError(f"an opponent spec must be a string, got {spec!r}; {_HELP}")
    if spec.startswith("llm:"):
        if not spec[4:].partition("@")[0]:
            raise ValueError(f"opponent {spec!r} lacks a model: use 'llm:<model>@<base_url>'")
        return spec
    if spec.startswith("checkpoint:"):
        path = Path(spec[len("checkpoint:"):])
        if not path.is_dir():
            raise ValueError(f"opponent {spec!r}: {str(path)!r} is not a model folder")
        return spec
    if spec not in OPPONENT_KINDS:
        raise ValueError(f"unknown opponent {spec!r}; {_HELP}")
    return spec


def make_opponent(spec: str, name: str | None = None, *, greedy: bool = False) -> Callable[[], Player]:
    """A factory of fresh players for ``spec`` (see the module docstring).

    ``greedy``: ``checkpoint:`` seats take the most probable legal reply instead of sampling one.
    """
    if not isinstance(greedy, bool):
        raise ValueError(f"greedy must be True or False, got {greedy!r}")
    spec = check_opponent(spec)
    if spec == SELF:
        raise ValueError("opponent 'self' is the policy being trained: only the multi-seat environment "
                         "(evolver/AvalonSeats-v0) can seat it")
    if spec.startswith("llm:"):
        model, _, base_url = spec[4:].partition("@")

        def llm() -> Player:
            from evolver_gym.core.llm import OpenAIChatClient

            from .llm_seat import LLMSeat

            return LLMSeat(OpenAIChatClient(model=model, base_url=base_url or None, role="arena"), name=name or spec)

        return llm
    if spec.startswith("checkpoint:"):
        path, seat = str(Path(spec[len("checkpoint:"):]).resolve()), _seat_plugin("checkpoint")
        return lambda: seat(path, name or spec, greedy=greedy)
    return lambda: make_player(spec, name)


def _seat_plugin(kind: str) -> Callable[..., Player]:
    """The seat factory registered as ``kind`` in the ``SEAT_PLUGINS`` entry-point group."""
    from importlib.metadata import entry_points

    found = entry_points(group=SEAT_PLUGINS, name=kind)
    if not found:
        raise RuntimeError(f"opponent kind {kind!r} needs the seat registered as entry point {kind!r} of group "
                           f"{SEAT_PLUGINS!r}, which evolver-gym declares: reinstall it (pip install -e '.[train]')")
    return next(iter(found)).load()
