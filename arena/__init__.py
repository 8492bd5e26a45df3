"""Multi-agent games on PettingZoo, with single-seat Gymnasium views.

* ``arena.avalon_v0`` - Avalon as a PettingZoo module (``env``, ``raw_env``, ``parallel_env``).
* ``arena.diplomacy_v0`` - Diplomacy as a PettingZoo module (needs the optional AGPL-3.0 ``diplomacy``
  engine: ``pip install 'evolver-gym[diplomacy]'``).
* ``arena.avalon`` - the rules engine, bots, LLM seats, tournaments and the web viewer.

Importing ``arena`` registers:

* Gymnasium ``evolver/AvalonSeat-v0`` (one Avalon seat as a text environment):
  ``gym.make("evolver/AvalonSeat-v0")`` after ``import arena`` or ``import evolver_gym`` (which
  registers it by a string entry point, without importing this package);
* ``evolver/AvalonSeats-v0`` (the seats of chosen roles played by one text policy, what ``evolver train``
  trains on the arena): a PettingZoo ``ParallelEnv``, so ``arena.avalon.seats.AvalonSeats(...)`` or
  ``evolver_train.envs.make_env`` builds it (``gym.make`` takes only Gymnasium envs);
* PettingZoo (1.27+ registry) ``arena/avalon-v0`` and ``arena/diplomacy-v0`` for both
  ``pettingzoo.make("aec", ...)`` and ``pettingzoo.make("parallel", ...)``.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

__all__: list[str] = []

# Marks this package as evolver-gym's (another distribution on the registry is also named `arena`).
__evolver_gym_package__ = True

if "evolver/AvalonSeat-v0" not in registry:
    register(
        id="evolver/AvalonSeat-v0",
        entry_point="arena.avalon.single_seat:SingleSeat",
        max_episode_steps=1000,  # a game has far fewer learner turns; guards against endless retry loops
    )
if "evolver/AvalonSeats-v0" not in registry:  # a ParallelEnv: evolver_train.envs.make_env builds it
    register(id="evolver/AvalonSeats-v0", entry_point="arena.avalon.seats:AvalonSeats")


def _register_pettingzoo() -> None:
    try:
        import pettingzoo
        from pettingzoo.env_registry import registration as pz_registry
    except ImportError:  # pettingzoo is the 'arena' extra; older versions have no registry
        return
    for game in ("avalon", "diplomacy"):
        for env_type, entry in (("aec", f"arena.{game}_v0:env"), ("parallel", f"arena.{game}_v0:parallel_env")):
            table = pz_registry.aec_registry if env_type == "aec" else pz_registry.parallel_registry
            if f"arena/{game}-v0" not in table:
                pettingzoo.register(env_type, f"arena/{game}-v0", entry_point=entry)


_register_pettingzoo()
