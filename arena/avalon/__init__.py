"""Avalon (The Resistance: Avalon) for PettingZoo and Gymnasium.

* ``AvalonConfig`` - rules and variant flags; ``AvalonGame`` - the pure rules engine; ``SeatView``.
* ``raw_env`` / ``env`` / ``parallel_env`` - the PettingZoo environments (manual: ``arena.avalon_v0``).
* ``RandomBot``, ``RuleBot`` - baseline players; ``LLMSeat`` - a seat played by a chat model.
* ``SingleSeat`` - one seat as a Gymnasium text environment (``evolver/AvalonSeat-v0``).
* ``run_tournament`` - tournaments with fair seating, Wilson intervals and Elo.
"""

from __future__ import annotations

from .actions import ActionCodec, Parsed, ParseError, parse_action, strip_private
from .engine import PHASES, AvalonGame, IllegalAction, SeatView
from .rules import EVIL_ROLES, GOOD_ROLES, ROLES, AvalonConfig, Knowledge, night_knowledge

__all__ = [
    "ActionCodec",
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
]


def __getattr__(name: str):
    # The PettingZoo and Gymnasium layers are imported on first use so the engine stays light.
    if name in ("raw_env", "env", "parallel_env"):
        from . import env as _env

        return getattr(_env, name)
    raise AttributeError(f"module 'arena.avalon' has no attribute {name!r}")
