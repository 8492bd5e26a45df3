"""Avalon (The Resistance: Avalon) for PettingZoo and Gymnasium.

* ``AvalonConfig`` - rules and variant flags; ``AvalonGame`` - the pure rules engine; ``SeatView``.
* ``raw_env`` / ``env`` / ``parallel_env`` - the PettingZoo environments (manual: ``arena.avalon_v0``).
* ``RandomBot``, ``RuleBot`` - baseline players; ``LLMSeat`` - a seat played by a chat model behind a
  chat client; a seat played by a local text policy as in training is the opponent ``checkpoint:<path>``
  (``evolver_train.arena_seat.PolicySeat``, found by entry point: the arena does not import the trainer).
* ``SingleSeat`` - one seat as a Gymnasium text environment (``evolver/AvalonSeat-v0``).
* ``run_tournament`` - tournaments with fair seating, Wilson intervals and Elo.
"""

from __future__ import annotations

from .actions import ActionCodec, Parsed, ParseError, parse_action, strip_private
from .engine import PHASES, AvalonGame, IllegalAction, SeatView
from .rules import EVIL_ROLES, GOOD_ROLES, ROLES, AvalonConfig, Knowledge, night_knowledge

__all__ = [
    "ActionCodec",
    "LLMSeat",
    "RandomBot",
    "RuleBot",
    "SingleSeat",
    "play_game",
    "run_tournament",
    "AvalonConfig",
    "AvalonGame",
    "EVIL_ROLES",
    "GOOD_ROLES",
    "IllegalAction",
    "Knowledge",
    "PHASES",
    "ParseError",
    "Parsed",
    "ROLES",
    "SeatView",
    "env",
    "night_knowledge",
    "parallel_env",
    "parse_action",
    "raw_env",
    "strip_private",
    "turn_based_parallel_env",
]


_LAZY = {
    "raw_env": ".env",
    "env": ".env",
    "parallel_env": ".parallel",
    "turn_based_parallel_env": ".env",
    "RandomBot": ".bots",
    "RuleBot": ".bots",
    "LLMSeat": ".llm_seat",
    "SingleSeat": ".single_seat",
    "play_game": ".play",
    "run_tournament": ".tournament",
}


def __getattr__(name: str):
    # The PettingZoo, Gymnasium and LLM layers load on first use so the engine stays light.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'arena.avalon' has no attribute {name!r}")
