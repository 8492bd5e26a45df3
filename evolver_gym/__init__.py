"""evolver-gym: language-agent environments for self-evolving LLM agents.

Importing this package registers its environments with Gymnasium::

    import gymnasium as gym
    import evolver_gym  # noqa: F401  (registers the ids)
    env = gym.make("evolver/WebShop-v0")

or, without the import, ``gym.make("evolver_gym:evolver/WebShop-v0")``.
"""

from gymnasium.envs.registration import register, registry

__version__ = "0.1.0"


def _register(env_id: str, entry_point: str, **kwargs) -> None:
    if env_id not in registry:
        register(id=env_id, entry_point=entry_point, **kwargs)


_register("evolver/WebShop-v0", "evolver_gym.webshop.env:WebShopEnv")
_register("evolver/AppWorld-v0", "evolver_gym.appworld.env:AppWorldEnv")
_register("evolver/AppWorldReal-v0", "evolver_gym.appworld.real:RealAppWorldEnv")
# AppWorld's own 9 apps on a generated world; the apps run from their own virtualenv (docs/appworld-apps.md).
_register("evolver/AppWorldApps-v0", "evolver_gym.appworld_apps.env:AppWorldAppsEnv")
# BFCL-v3 multi-turn needs bfcl-eval (installed with --no-deps, see docs/bfcl.md); it loads on gym.make.
_register("evolver/BFCL-v0", "evolver_gym.bfcl.env:BFCLEnv")
# The Avalon seat lives in the arena package (PettingZoo underneath); the string entry point keeps
# this import light: arena loads on the first gym.make of the id.
_register("evolver/AvalonSeat-v0", "arena.avalon.single_seat:SingleSeat", max_episode_steps=1000)
# Several Avalon seats played by one policy: a PettingZoo ParallelEnv, which gym.make refuses; it is
# registered here so the id is known to `evolver train`/`eval` (evolver_train.envs.make_env builds it).
_register("evolver/AvalonSeats-v0", "arena.avalon.seats:AvalonSeats")


def _warn_on_shadowed_packages() -> None:
    # `arena` and `wrappers` share their names with other packages (see evolver_gym.install_check).
    import warnings

    from .install_check import check_install

    try:
        check_install()
    except ImportError as exc:
        warnings.warn(str(exc), stacklevel=3)


_warn_on_shadowed_packages()
