"""Multi-agent games on PettingZoo, with single-seat Gymnasium views.

* ``arena.avalon_v0`` - Avalon as a PettingZoo module (``env``, ``raw_env``, ``parallel_env``).
* ``arena.avalon`` - the rules engine, bots, LLM seats, tournaments and the web viewer.

Importing ``arena`` registers ``evolver/AvalonSeat-v0`` (one Avalon seat as a Gymnasium text
environment): ``gym.make("evolver/AvalonSeat-v0")`` after ``import arena``, or
``gym.make("arena:evolver/AvalonSeat-v0")``.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

__all__: list[str] = []

if "evolver/AvalonSeat-v0" not in registry:
    register(
        id="evolver/AvalonSeat-v0",
        entry_point="arena.avalon.single_seat:SingleSeat",
        max_episode_steps=1000,  # a game has far fewer learner turns; guards against endless retry loops
    )
