"""Diplomacy in the arena: the ``diplomacy`` engine (an optional AGPL-3.0 dependency) as PettingZoo
environments, with rule and random bots, games, tournaments and an SVG viewer.

* :mod:`arena.diplomacy.game` - :class:`DiplomacyGame` (stages, press, scoring) over the engine.
* :mod:`arena.diplomacy.env` / :mod:`arena.diplomacy.parallel` - the AEC and parallel environments.
* :mod:`arena.diplomacy.bots` - ``random`` and ``rule`` players.
* :mod:`arena.diplomacy.llm_seat` - a power played by a chat model.
* :mod:`arena.diplomacy.play` - one game between players, with its record.
* :mod:`arena.diplomacy.tournament` - fair seating over the powers, scores, Elo.
* :mod:`arena.diplomacy.viewer` - a web page with the engine's SVG map of every phase.

The engine is installed by ``pip install 'evolver-gym[diplomacy]'``; it is never bundled.
"""

from __future__ import annotations

from .game import AGENTS, POWERS, DiplomacyConfig, DiplomacyGame, require_engine

__all__ = ["AGENTS", "POWERS", "DiplomacyConfig", "DiplomacyGame", "require_engine"]
