"""Environments and mechanisms of a training run, built from its configs.

* ``make_env`` - ``gym.make``, or a multi-seat environment's class (``gym.make`` takes only
  ``gym.Env``s); ``check_multi_seat`` - a multi-seat run's settings.
* ``make_base_env`` / ``shape_environment`` - ``make_env`` plus the observation shapers the
  environment itself offers (``env.unwrapped.observation_shaper(name)``); ``express_action`` - an
  action of the unwrapped environment (its oracle's) in the form the shaped environment shows.
* ``TrainingEnvironment`` - the env factory, one ``TrainingHooks`` per enabled mechanism, train/eval tasks.
* ``build_training_environment`` - attach every mechanism named in ``config.wrappers`` (innermost first).

The trainer never names a mechanism: each one is looked up in the registry of ``wrappers.plugin``,
given its typed config and a ``RunContext``, and returns its environment layer and its hooks.
Services are built once per mechanism and shared by every environment copy of the pool.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from evolver_gym.core import Task
from wrappers.plugin import RunContext, TrainingHooks, get_mechanism

from .config import NO_TASK_SPLIT, ConfigError, EvolverGRPOConfig
from .seat_rollout import is_multi_seat

__all__ = ["TrainingEnvironment", "build_training_environment", "check_multi_seat", "check_task_source",
           "express_action", "make_base_env", "make_env", "shape_environment", "mechanism_configs"]


def shape_environment(env: gym.Env, names: Sequence[str]) -> gym.Env:
    """``env`` wrapped by the shapers it offers under ``names``, in order."""
    names = list(names)
    if not names:
        return env
    shaper = getattr(env.unwrapped, "observation_shaper", None)
    if shaper is None:
        raise ValueError(f"environment {type(env.unwrapped).__name__} offers no observation shapers, "
                         f"got observation_shaping={names!r}")
    for name in names:
        env = shaper(name)(env)
    return env


def express_action(env: gym.Env, action: str) -> str:
    """``action`` of ``env.unwrapped`` as the policy of ``env`` would write it, on the current page.

    A shaper that changes the action interface (WebShop's ``numbered_results``: a click by position
    instead of by id) offers ``express_action``; the others leave the action alone. Demonstrations
    replay the unwrapped environment's oracle through this, so they teach the interface the policy
    is given.
    """
    layer = env
    while isinstance(layer, gym.Wrapper):
        express = getattr(type(layer), "express_action", None)
        if express is not None:
            action = express(layer, action)
        layer = layer.env
    return action


def make_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> Any:
    """``gym.make(env_id)``, or for an id whose entry point is a multi-seat PettingZoo ``ParallelEnv``
    (``evolver/AvalonSeats-v0``, which ``gym.make`` refuses), that class built with the same kwargs."""
    import evolver_gym  # noqa: F401 - registers the environment ids

    module, _, name = env_id.rpartition(":")  # Gymnasium's "module:id" form imports the module first
    if module:
        importlib.import_module(module)
    spec = gym.spec(name)
    creator = spec.entry_point
    if isinstance(creator, str):
        from gymnasium.envs.registration import load_env_creator

        creator = load_env_creator(creator)
    if isinstance(creator, type) and not issubclass(creator, gym.Env):
        try:
            from pettingzoo import ParallelEnv
        except ImportError:  # no PettingZoo: no multi-seat env either; gym.make says what is wrong
            ParallelEnv = ()  # noqa: N806
        if ParallelEnv and issubclass(creator, ParallelEnv):
            return creator(**{**spec.kwargs, **dict(env_kwargs or {})})
    return gym.make(env_id, disable_env_checker=True, **dict(env_kwargs or {}))


def make_base_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None,
                  observation_shaping: Sequence[str] = ()) -> gym.Env:
    """The environment of a run before any mechanism: :func:`make_env` and its observation shapers."""
    env = make_env(env_id, env_kwargs)
    if is_multi_seat(env):
        if observation_shaping:
            raise ConfigError(f"observation_shaping: {env_id} is a multi-seat environment and offers no shapers")
        return env
    return shape_environment(env, observation_shaping)


def check_multi_seat(config: EvolverGRPOConfig, env: Any, hooks: Sequence[TrainingHooks],
                     layered: Sequence[str]) -> None:
    """A multi-seat run's settings: each GRPO group is whole games (``num_generations`` a multiple of the
    learning seats of a game), and every mechanism with an environment layer can finish an episode from
    its hooks instead (``finish_cut_episode``: the seats of a game share one environment, so no
    single-agent layer wraps a seat)."""
    seats = env.num_learning_seats
    if config.num_generations % seats:
        raise ConfigError(f"num_generations: {config.env_id} plays {seats} learning seats per game, so a GRPO "
                          f"group of G games has G x {seats} rows; got {config.num_generations}")
    finishing = {h.name for h in hooks if h.finish_cut_episode is not None}
    for name in layered:
        if name not in finishing:
            raise ConfigError(f"wrappers: {name!r} wraps single-agent environments; {config.env_id} is a "
                              f"multi-seat environment (mechanisms it takes: attribution, league)")


@dataclass
class TrainingEnvironment:
    """What a training run needs from the environment side.

    ``env_factory`` makes the training environment (base env and mechanism layers); ``base_env_factory``
    the base env alone, for work that must not reach the mechanisms (the tiny tokenizer's oracle
    episodes would otherwise count as successes in the curriculum and feed the experience pool).
    """

    env_factory: Callable[[], gym.Env]
    base_env_factory: Callable[[], gym.Env]
    hooks: list[TrainingHooks]
    train_tasks: list[Task]
    eval_tasks: list[Task]
    services: dict[str, Any] = field(default_factory=dict)

    @property
    def samples_tasks(self) -> bool:
        """Whether a mechanism draws the training tasks (the dataset is then slots, not fixed tasks)."""
        return any(h.task_sampler is not None for h in self.hooks)


def mechanism_configs(config: EvolverGRPOConfig, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The typed config of every enabled mechanism: ``given[name]`` or the mechanism's defaults."""
    given = dict(given or {})
    out = {}
    for name in config.wrappers:
        mechanism = get_mechanism(name)
        value = given.get(name)
        if value is None:
            value = mechanism.config_class()
        if not isinstance(value, mechanism.config_class):
            raise ConfigError(f"mechanism {name!r} needs a {mechanism.config_class.__name__}, "
                              f"got {type(value).__name__}")
        out[name] = value
    return out


def check_task_source(task_split: str, wrappers: Sequence[str]) -> None:
    """``task_split: none`` (no human task) needs the questioning mechanism: its pool holds every task."""
    if task_split == NO_TASK_SPLIT and "questioning" not in wrappers:
        raise ConfigError(f"task_split {NO_TASK_SPLIT!r} trains on synthesised tasks only: it needs questioning in "
                          f"wrappers, got {list(wrappers)!r}")


def build_training_environment(config: EvolverGRPOConfig,
                               mechanisms: Mapping[str, Any] | None = None) -> TrainingEnvironment:
    """The env factory (base env + mechanism layers), their hooks and the task lists for ``config``.

    Args:
        config: The training config (environment, splits, ``wrappers`` = enabled mechanisms in order).
        mechanisms: name -> typed config of each enabled mechanism (defaults where missing).
    """
    def base() -> gym.Env:
        return make_base_env(config.env_id, config.env_kwargs, config.observation_shaping)

    check_task_source(config.task_split, config.wrappers)
    probe = base()
    unwrapped = probe.unwrapped
    # No human task at all: the questioning mechanism's pool holds every training task.
    train_tasks = [] if config.task_split == NO_TASK_SPLIT else list(unwrapped.tasks(config.task_split))
    if config.num_train_tasks is not None:
        train_tasks = train_tasks[: config.num_train_tasks]
    eval_tasks = list(unwrapped.tasks(config.evolver_eval_split)) if config.evolver_eval_episodes else []
    run = RunContext(output_dir=config.output_dir, seed=config.rollout_seed, task_split=config.task_split,
                     train_tasks=train_tasks, probe=probe, env_id=config.env_id, settings=config)
    hooks: list[TrainingHooks] = []
    services: dict[str, Any] = {}
    layers: list[Callable[[gym.Env], gym.Env]] = []
    layered: list[str] = []
    for name, mech_config in mechanism_configs(config, mechanisms).items():
        attachment = get_mechanism(name).attach(mech_config, run)
        if attachment.layer is not None:
            layers.append(attachment.layer)
            layered.append(name)
        attachment.hooks.name = attachment.hooks.name or name
        hooks.append(attachment.hooks)
        services.update(attachment.services)
    if is_multi_seat(probe):  # the hooks finish each seat's episode (evolver_train.seat_rollout)
        check_multi_seat(config, probe, hooks, layered)
        layers = []

    def factory() -> gym.Env:
        env = base()
        for layer in layers:
            env = layer(env)
        return env

    return TrainingEnvironment(env_factory=factory, hooks=hooks, train_tasks=train_tasks, eval_tasks=eval_tasks,
                               services=services, base_env_factory=base)
