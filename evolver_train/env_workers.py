"""Where rollout environments run: in this process, or as Ray actors on this machine or a cluster.

* ``EnvWorkerConfig`` - the backend (``local`` or ``ray``), the number of Ray actors, Ray's address.
* ``RayEnvPool`` - the ``EnvPool`` interface (``take(n)``, ``close()``) over Ray actors; ``take``
  returns a ``RemoteEnvs`` batch whose ``reset_many`` / ``step_many`` send one call per actor, so
  the actors step their environments in parallel.
* ``make_env_pool`` - the pool of a backend.
* ``init_ray`` - join a Ray cluster, or start a local one patient enough for a busy machine.

``play_episodes`` (``evolver_train.rollout``) uses ``reset_many`` / ``step_many`` when the batch has
them and steps environments one by one otherwise, so both backends play the same episodes for the
same rows and seeds: an environment's episode depends only on its reset seed, options and actions.

Environment ``i`` of a batch lives on actor ``i % num_actors``. The factory is shipped to the actors
by Ray (cloudpickle): it must build its environment from configuration (ids, kwargs, URIs of shared
services such as an experience pool on a Milvus server), not capture open handles.

Example:
    >>> pool = make_env_pool(lambda: gym.make("evolver/WebShop-v0"), EnvWorkerConfig("ray", 2))  # doctest: +SKIP
    >>> envs = pool.take(8)                        # 8 environments, 4 on each of 2 actors   # doctest: +SKIP
    >>> envs.reset_many([(i, {"seed": i}) for i in range(8)])                                # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .rollout import EnvPool

__all__ = ["EnvWorkerConfig", "RayEnvPool", "RemoteEnvs", "make_env_pool", "init_ray", "ENV_BACKENDS"]

ENV_BACKENDS = ("local", "ray")


def init_ray(address: str | None = None, **kwargs: Any) -> None:
    """``ray.init`` for environment workers: no dashboard, actors' logs kept off the driver's console.

    A local head's control service publishes its port only once it is up; Ray waits 30 s for that by default,
    which a machine busy with training (or a loaded CI runner) can exceed. This waits up to 120 s unless
    ``RAY_gcs_server_port_wait_time_s`` says otherwise.
    """
    import ray

    os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "120")
    ray.init(address=address, include_dashboard=False, log_to_driver=False, **kwargs)


@dataclass
class EnvWorkerConfig:
    """Where rollout environments run."""

    backend: str = field(default="local", metadata={
        "help": "local (environments in the training process) or ray (environments in Ray actors)"})
    num_actors: int = field(default=2, metadata={"help": "Ray actors the environments are spread over"})
    address: str | None = field(default=None, metadata={
        "help": "Ray cluster address (e.g. 'auto' or 'ray://head:10001'); None = start or join a local Ray"})
    num_cpus_per_actor: float = field(default=1.0, metadata={"help": "CPUs Ray reserves for each actor"})

    def __post_init__(self) -> None:
        if self.backend not in ENV_BACKENDS:
            raise ValueError(f"env backend must be one of {ENV_BACKENDS}, got {self.backend!r}")
        if not isinstance(self.num_actors, int) or self.num_actors < 1:
            raise ValueError(f"env worker num_actors must be a positive int, got {self.num_actors!r}")
        if float(self.num_cpus_per_actor) < 0:
            raise ValueError(f"num_cpus_per_actor must be >= 0, got {self.num_cpus_per_actor!r}")


class _EnvActor:
    """Holds environments built by the factory; resets and steps a list of them per call."""

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory
        self.envs: list[Any] = []

    def ensure(self, n: int) -> int:
        while len(self.envs) < n:
            self.envs.append(self.factory())
        return len(self.envs)

    def reset_many(self, calls: list[tuple[int, dict[str, Any]]]) -> list[tuple[Any, dict[str, Any]]]:
        return [self.envs[slot].reset(**kwargs) for slot, kwargs in calls]

    def step_many(self, calls: list[tuple[int, Any]]) -> list[tuple[Any, ...]]:
        return [tuple(self.envs[slot].step(action)) for slot, action in calls]

    def close(self) -> None:
        for env in self.envs:
            env.close()
        self.envs.clear()


class RemoteEnvs(Sequence):
    """``n`` environments spread over Ray actors, reset and stepped in batches (one call per actor)."""

    def __init__(self, actors: list[Any], n: int) -> None:
        self.actors, self.n = actors, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: Any) -> Any:
        raise TypeError("environments in Ray actors are reached through reset_many/step_many, not one by one")

    def _fan_out(self, method: str, calls: Sequence[tuple[int, Any]]) -> list[Any]:
        import ray

        k = len(self.actors)
        per_actor: dict[int, list[tuple[int, Any]]] = {}
        order: dict[int, list[int]] = {}
        for pos, (index, payload) in enumerate(calls):
            if not 0 <= index < self.n:
                raise IndexError(f"environment {index} is not in this batch of {self.n}")
            per_actor.setdefault(index % k, []).append((index // k, payload))
            order.setdefault(index % k, []).append(pos)
        refs = {a: getattr(self.actors[a], method).remote(batch) for a, batch in per_actor.items()}
        out: list[Any] = [None] * len(calls)
        for a, ref in refs.items():
            for pos, result in zip(order[a], ray.get(ref)):
                out[pos] = result
        return out

    def reset_many(self, calls: Sequence[tuple[int, dict[str, Any]]]) -> list[tuple[Any, dict[str, Any]]]:
        """``[(env index, reset kwargs)]`` -> ``[(obs, info)]`` in the same order."""
        return self._fan_out("reset_many", calls)

    def step_many(self, calls: Sequence[tuple[int, Any]]) -> list[tuple[Any, ...]]:
        """``[(env index, action)]`` -> ``[(obs, reward, terminated, truncated, info)]`` in the same order."""
        return self._fan_out("step_many", calls)


class RayEnvPool:
    """Environments in Ray actors, made on demand by ``factory`` and reused across batches.

    Args:
        factory: Builds one environment; shipped to every actor, so it must be picklable by Ray.
        config: :class:`EnvWorkerConfig` (``backend`` ignored).
    """

    def __init__(self, factory: Callable[[], Any], config: EnvWorkerConfig) -> None:
        try:
            import ray
        except ImportError as exc:
            raise RuntimeError("env backend 'ray' needs Ray: pip install 'evolver-gym[scale]'") from exc
        if not ray.is_initialized():
            init_ray(config.address)
        actor_cls = ray.remote(num_cpus=config.num_cpus_per_actor)(_EnvActor)
        try:
            self.actors = [actor_cls.remote(factory) for _ in range(config.num_actors)]
        except TypeError as exc:  # cloudpickle could not serialise something the factory captures
            raise ValueError(f"env backend 'ray' needs a picklable environment factory; {factory!r} is not: {exc}. "
                             "Build environments from configuration (URIs of shared services), not open handles."
                             ) from exc
        self.size = 0

    def take(self, n: int) -> RemoteEnvs:
        import ray

        if n > self.size:
            k = len(self.actors)
            ray.get([a.ensure.remote(-(-n // k)) for a in self.actors])  # ceil(n / k) environments per actor
            self.size = n
        return RemoteEnvs(self.actors, n)

    def close(self) -> None:
        import ray

        ray.get([a.close.remote() for a in self.actors])
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []


def make_env_pool(factory: Callable[[], Any], config: EnvWorkerConfig | None = None) -> EnvPool | RayEnvPool:
    """An ``EnvPool`` (in this process) or a :class:`RayEnvPool`, as ``config.backend`` says."""
    config = config or EnvWorkerConfig()
    return EnvPool(factory) if config.backend == "local" else RayEnvPool(factory, config)
