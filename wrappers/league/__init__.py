"""The league: past checkpoints of the policy as opponents of multi-seat games, with Elo.

* ``LeagueConfig`` - the mechanism's settings (flat ``league_*`` options of ``evolver train``).
* ``League`` - the checkpoints it draws from and the Elo ratings of everyone met (``plugin.py``).
"""

from __future__ import annotations

from .plugin import League, LeagueConfig

__all__ = ["League", "LeagueConfig"]
