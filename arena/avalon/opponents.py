"""The one factory of Avalon seat players: training, evaluation and tournaments name opponents the same way.

* ``make_opponent`` - a factory of fresh players for a spec:

  - ``rule`` / ``rule_votes`` / ``random`` - the baseline bots (:mod:`arena.avalon.bots`);
  - ``llm:<model>@<base_url>`` - a chat model behind an OpenAI-compatible endpoint (the project's
    ``OpenAIChatClient``), through :class:`~arena.avalon.llm_seat.LLMSeat`;
  - ``checkpoint:<path>`` - a saved text policy (a model folder with its tokenizer, e.g. a
    ``checkpoint-N`` of ``evolver train``), generating locally and greedily with transformers;
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
from functools import lru_cache
from pathlib import Path
from typing import Any

from .bots import PLAYER_KINDS, Player, make_player

__all__ = ["OPPONENT_KINDS", "SELF", "check_opponent", "make_opponent"]

SELF = "self"
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


@lru_cache(maxsize=8)
def _local_client(path: str) -> Any:
    """One loaded model per checkpoint folder and process, shared by every seat it plays."""
    from evolver_gym.core.llm.local import TransformersChatClient

    return TransformersChatClient(model=path, backend="transformers", temperature=0.0, max_tokens=48,
                                  role=f"checkpoint:{Path(path).name}")


def make_opponent(spec: str, name: str | None = None, *, conversation: bool = False) -> Callable[[], Player]:
    """A factory of fresh players for ``spec`` (see the module docstring).

    ``conversation``: the host gives a model seat what is new since its last turn (the multi-seat
    environment does), so ``checkpoint:`` seats keep one chat per game as the policy did in training;
    otherwise they read the whole transcript in one message, as ``llm:`` seats always do.
    """
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
        path = str(Path(spec[len("checkpoint:"):]).resolve())

        def checkpoint() -> Player:
            from .llm_seat import LLMSeat

            # The policy trained without retries and without the LLM seats' system prompt.
            return LLMSeat(_local_client(path), name=name or spec, max_retries=0, system_prompt="",
                           conversation=conversation)

        return checkpoint
    return lambda: make_player(spec, name)
