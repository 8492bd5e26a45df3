"""Environments and mechanism services for a training run, built from an ``EvolverGRPOConfig``.

* ``TrainingEnvironment`` - the env factory, the trainer's ``TrainingHooks``, train/eval tasks.
* ``build_training_environment`` - make all of it from a config.

Services are built once and shared by every environment copy of the pool: one task pool (SQLite),
one experience pool (Milvus), one attributor. Wrappers are applied innermost first, in the order
of ``config.wrappers``; their constructor kwargs come from ``config.wrapper_kwargs[name]``:

* ``questioning``: ``pool`` (SQLite path, default ``<output_dir>/task_pool.sqlite``), ``new_tasks``
  (tasks asked of each synthesis cycle, default 8), ``synthesis`` (``SynthesisConfig`` fields),
  ``curriculum`` (``CurriculumConfig`` fields).
* ``navigation``: ``uri`` (milvus-lite file, default ``<output_dir>/experience.db``), ``top_k``,
  ``threshold``, ``max_chars``, ``summarizer_min_score``.
* ``attribution``: ``attributor`` (``oracle``, ``rule``, ``llm``) and that attributor's kwargs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from evolver_gym.core import Task, make_rng

from .config import EvolverGRPOConfig
from .trainer import TrainingHooks

__all__ = ["TrainingEnvironment", "build_training_environment"]


@dataclass
class TrainingEnvironment:
    """What a training run needs from the environment side."""

    env_factory: Callable[[], gym.Env]
    hooks: TrainingHooks
    train_tasks: list[Task]
    eval_tasks: list[Task]
    services: dict[str, Any] = field(default_factory=dict)


class _TaskPoolState:
    """Checkpoint view of the task pool: the pool lives in its SQLite file; we save where and how big."""

    def __init__(self, pool: Any, sampler_rng: Any):
        self.pool, self.rng = pool, sampler_rng

    def state_dict(self) -> dict[str, Any]:
        return {"path": str(getattr(self.pool, "path", "")), "size": len(self.pool),
                "synthetic": len(self.pool.ids(origin="synthetic", status=None)),
                "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "rng" in state:
            self.rng.bit_generator.state = state["rng"]


class _ExperiencePoolState:
    """Checkpoint view of the experience pool: its URI and the ids present at save time."""

    def __init__(self, pool: Any):
        self.pool = pool
        self.restored: dict[str, Any] = {}

    def state_dict(self) -> dict[str, Any]:
        self.pool.flush()
        return {"uri": self.pool.config.uri, "count": len(self.pool.all())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.restored = dict(state)


def build_training_environment(config: EvolverGRPOConfig) -> TrainingEnvironment:
    """The env factory (base env + wrappers), mechanism hooks and task lists for ``config``."""
    import evolver_gym  # noqa: F401 - registers the environment ids

    from .observation import shape_environment

    def base() -> gym.Env:
        env = gym.make(config.env_id, disable_env_checker=True, **config.env_kwargs)
        return shape_environment(env, config.observation_shaping)

    probe = base()
    unwrapped = probe.unwrapped
    train_tasks = list(unwrapped.tasks(config.task_split))
    if config.num_train_tasks is not None:
        train_tasks = train_tasks[: config.num_train_tasks]
    eval_tasks = list(unwrapped.tasks(config.evolver_eval_split)) if config.evolver_eval_episodes else []
    hooks = TrainingHooks()
    services: dict[str, Any] = {}
    layers: list[Callable[[gym.Env], gym.Env]] = []
    kw_all = config.wrapper_kwargs

    for name in config.wrappers:
        kw = dict(kw_all.get(name, {}))
        if name == "questioning":
            layers.append(_questioning(config, kw, probe, train_tasks, hooks, services))
        elif name == "navigation":
            layers.append(_navigation(config, kw, hooks, services))
        elif name == "attribution":
            from wrappers.attribution import Attribution, make_attributor

            attributor = make_attributor(kw.pop("attributor", "oracle"), **kw)
            services["attributor"] = attributor
            layers.append(lambda env, a=attributor: Attribution(env, attributor=a))

    def factory() -> gym.Env:
        env = base()
        for layer in layers:
            env = layer(env)
        return env

    return TrainingEnvironment(env_factory=factory, hooks=hooks, train_tasks=train_tasks, eval_tasks=eval_tasks,
                               services=services)


def _questioning(config: EvolverGRPOConfig, kw: dict[str, Any], probe: gym.Env, train_tasks: list[Task],
                 hooks: TrainingHooks, services: dict[str, Any]) -> Callable[[gym.Env], gym.Env]:
    from wrappers.questioning import (
        Curriculum,
        CurriculumConfig,
        SelfQuestioning,
        SynthesisConfig,
        TaskPool,
        build_synthesizer,
    )

    path = kw.pop("pool", os.path.join(config.output_dir, "task_pool.sqlite"))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    pool = TaskPool(path)
    pool.add_many(train_tasks)
    curriculum_cfg = CurriculumConfig(**kw.pop("curriculum", {}))
    curriculum = Curriculum(pool, curriculum_cfg)
    rng = make_rng(config.rollout_seed, "task-sampler")
    new_tasks = int(kw.pop("new_tasks", 8))
    synth_cfg = SynthesisConfig(**{"seed": config.rollout_seed, "seed_split": config.task_split,
                                   "add_seed_tasks": False, **kw.pop("synthesis", {})})
    synthesizer = build_synthesizer(probe, pool, synth_cfg, embedder=kw.pop("embedder", None))

    def sample(n: int, seed: int) -> list[dict[str, Any]]:
        draw = make_rng(seed, "draw") if seed is not None else rng
        return [pool.get(curriculum.sample(draw)).to_dict() for _ in range(n)]

    def cycle(step: int) -> dict[str, int]:
        before = synthesizer.report.get("stages", {}).get("propose", {}).get("in", 0)
        admitted_before = synthesizer.report.get("admitted", 0)
        report = synthesizer.cycle(new_tasks)
        generated = report.get("stages", {}).get("propose", {}).get("in", 0) - before
        return {"generated": int(generated), "accepted": int(report.get("admitted", 0) - admitted_before)}

    hooks.task_sampler, hooks.questioning_cycle = sample, cycle
    hooks.stateful["task_pool"] = _TaskPoolState(pool, rng)
    services.update(task_pool=pool, synthesizer=synthesizer)
    return lambda env: SelfQuestioning(env, pool, curriculum_cfg, seed=config.rollout_seed, **kw)


def _navigation(config: EvolverGRPOConfig, kw: dict[str, Any], hooks: TrainingHooks,
                services: dict[str, Any]) -> Callable[[gym.Env], gym.Env]:
    from wrappers.navigation import ExperienceContext, ExperiencePool, OfflineSummarizer, PoolConfig, is_training_task

    uri = kw.pop("uri", os.path.join(config.output_dir, "experience.db"))
    os.makedirs(os.path.dirname(os.path.abspath(uri)) or ".", exist_ok=True)
    pool_kw = {k: kw.pop(k) for k in ("top_k", "threshold") if k in kw}
    pool = ExperiencePool(PoolConfig(uri=uri, **pool_kw))
    summarizer = OfflineSummarizer(min_score=float(kw.pop("summarizer_min_score", 1.0)))

    def sink(trajectories: list[Any]) -> int:
        by_task: dict[str, list[Any]] = {}
        for traj in trajectories:
            if is_training_task(traj.task):
                by_task.setdefault(traj.task.task_id, []).append(traj)
        added = 0
        for group in by_task.values():
            experiences = summarizer.summarize(group)
            if experiences:
                added += len(pool.add(experiences))
        return added

    hooks.experience_sink = sink
    hooks.stateful["experience_pool"] = _ExperiencePoolState(pool)
    services["experience_pool"] = pool
    # Experience goes to the share of rollouts the trainer picks (reset option "experience").
    return lambda env: ExperienceContext(env, pool, enabled=False, continual=False, **kw)
