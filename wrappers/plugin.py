"""The mechanism plugin contract: how a self-evolution mechanism plugs into a training run.

* ``Mechanism`` - one mechanism: its name, its typed config class and ``attach(config, run)``.
* ``RunContext`` - what a mechanism may use from the run: output folder, seeds, the training tasks,
  a probe environment.
* ``Attachment`` - what ``attach`` returns: the environment layer and the ``TrainingHooks``.
* ``TrainingHooks`` - the calls the trainer makes into a mechanism; every member is optional.
* ``RowContext`` - which rollout a ``reset_options`` hook is asked about.
* ``ClipStats`` - the clipped loss on the rows a mechanism trained on its plain observation.
* ``register_mechanism``, ``get_mechanism``, ``mechanism_names`` - the registry the trainer loops over.
* ``TrajectoryRecorder`` - the one recorder of an episode's steps that wrappers share.

The trainer never names a mechanism: it asks the registry for the ones a config enables, calls
``attach``, stacks the layers innermost first and calls the hooks. A fourth mechanism registers
itself with ``register_mechanism`` and is enabled by adding its name to ``wrappers``.

Example:
    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class CountConfig:
    ...     count_bonus: float = field(default=0.0, metadata={"help": "Bonus per step."})
    >>> def attach(config, run):
    ...     return Attachment(layer=None, hooks=TrainingHooks(name="count"))
    >>> _ = register_mechanism(Mechanism("count", CountConfig, attach))
    >>> "count" in mechanism_names()
    True
    >>> unregister_mechanism("count")
"""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from evolver_gym.core import Step, Task, Trajectory

__all__ = ["json_mapping", "Mechanism", "RunContext", "Attachment", "TrainingHooks", "RowContext", "ClipStats",
           "register_mechanism",
           "unregister_mechanism", "get_mechanism", "mechanism_names", "TrajectoryRecorder", "BUILTIN_MECHANISMS"]

# name -> "module:attribute" of the built-in mechanisms, imported on first use.
BUILTIN_MECHANISMS: dict[str, str] = {
    "questioning": "wrappers.questioning.plugin:MECHANISM",
    "navigation": "wrappers.navigation.plugin:MECHANISM",
    "attribution": "wrappers.attribution.plugin:MECHANISM",
    "league": "wrappers.league.plugin:MECHANISM",
}


def json_mapping(value: Any, name: str) -> dict[str, Any]:
    """A dict from a YAML mapping or a JSON string given on a command line (``None``/``""``: empty).

    Example:
        >>> json_mapping('{"top_k": 2}', "x"), json_mapping(None, "x")
        ({'top_k': 2}, {})
    """
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name} must be a JSON object, got {value!r}: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a mapping, got {value!r}")
    return dict(value)


@dataclass(frozen=True)
class RowContext:
    """One rollout the trainer is about to reset.

    Args:
        mode: ``"train"`` or ``"eval"``.
        step: The optimiser step the rollout belongs to.
        group: Its GRPO group (task slot).
        index: Its position within the group (0..group_size-1).
        group_size: G, rollouts per task (1 in evaluation).
        seed: The run's rollout seed.
    """

    mode: str
    step: int
    group: int
    index: int
    group_size: int
    seed: int


@dataclass(frozen=True)
class ClipStats:
    """The clipped loss on the rows one mechanism trained on its plain observation (one loss
    computation, summed over processes). Ratios are the loss's importance ratios (per token, or per
    row at ``importance_sampling_level="sequence"``), counted over the model tokens in the loss.

    Args:
        rows: Rows trained on the plain observation.
        tokens: Their model tokens.
        low: Tokens clipped below: ratio < 1 - epsilon_low where the advantage is negative.
        high: Tokens clipped above: ratio > 1 + clip_high where the advantage is positive.
        ratio_sum: Sum of the ratios over those tokens.
        max_ratio_deviation: Largest ``|ratio - 1|`` among them (0 when the ratio never moved).

    Example:
        >>> s = ClipStats(rows=2, tokens=10, low=1, high=2, ratio_sum=10.5, max_ratio_deviation=0.7)
        >>> s.low_rate, s.high_rate, s.region_rate, s.ratio_mean
        (0.1, 0.2, 0.3, 1.05)
    """

    rows: int
    tokens: int
    low: int
    high: int
    ratio_sum: float
    max_ratio_deviation: float

    @property
    def low_rate(self) -> float:
        return self.low / max(self.tokens, 1)

    @property
    def high_rate(self) -> float:
        return self.high / max(self.tokens, 1)

    @property
    def region_rate(self) -> float:
        return (self.low + self.high) / max(self.tokens, 1)

    @property
    def ratio_mean(self) -> float:
        return self.ratio_sum / self.tokens if self.tokens else 1.0


@dataclass
class TrainingHooks:
    """What one mechanism asks of the trainer; every member is optional.

    Args:
        name: The mechanism's name (metric prefixes, checkpoint keys).
        reset_options: ``(RowContext) -> dict`` merged into the ``options`` of the rollout's ``reset``.
        plain_observation: ``(first observation, reset info) -> str | None``; the first observation
            without what this mechanism injected (``None``: unchanged). Episodes are recorded with it
            (anchor states, trajectories), and trained on it when ``train_on_plain_observation``.
        train_on_plain_observation: Train on the plain observation instead of the one the action was
            sampled on (AgentEvolver's experience stripping).
        clip_high: Upper clip of the ratio for rows trained on the plain observation.
        behaviour_ratio: Rows trained on the plain observation take their old log-probs from the
            sampling pass (the behaviour policy, which saw the injection), so the ratio the loss clips is
            pi(a | plain) / pi(a | injected) from the first pass on, instead of 1: an off-policy
            correction of stripped rows. Every row's old log-probs are then the sampling ones.
        clip_metrics: ``(ClipStats) -> metrics``; the clipped loss on the rows trained on the plain
            observation, after each loss computation that has such rows.
        step_rewards: ``(final info) -> list[float] | None``; a reward per step (step labels), the
            input of the attributed advantage.
        step_reward_weight: ``(optimiser step) -> float``; the weight of those step rewards (ADCA alpha).
        finish_cut_episode: ``(trajectory) -> info entries`` for an episode the trainer cut (turn cap,
            token budget) before the environment ended it: what the mechanism's layer writes at the end
            of an episode (attribution: its labels), added to the episode's final info.
        task_sampler: ``(n, seed) -> list[task dict]``; draws the tasks of ``n`` groups when the dataset
            rows are slots rather than fixed tasks.
        on_episodes: ``(training trajectories) -> metrics``; called after each optimiser step.
        on_step_end: ``(optimiser step) -> metrics``; periodic work such as a synthesis cycle.
        episode_metrics: ``(list of (reset info, final info)) -> metrics`` logged with each rollout.
        progress: metric key -> short label: the mechanism's metrics shown in the printed step line
            (every metric goes to TensorBoard either way).
        stateful: name -> object with ``state_dict()`` / ``load_state_dict(state)``, saved with checkpoints.
    """

    name: str = ""
    reset_options: Callable[[RowContext], dict[str, Any]] | None = None
    plain_observation: Callable[[str, dict[str, Any]], str | None] | None = None
    train_on_plain_observation: bool = False
    clip_high: float | None = None
    behaviour_ratio: bool = False
    clip_metrics: Callable[[ClipStats], dict[str, float]] | None = None
    step_rewards: Callable[[dict[str, Any]], list[float] | None] | None = None
    step_reward_weight: Callable[[int], float] | None = None
    finish_cut_episode: Callable[[Trajectory], dict[str, Any]] | None = None
    task_sampler: Callable[[int, int], list[dict[str, Any]]] | None = None
    on_episodes: Callable[[list[Trajectory]], dict[str, float]] | None = None
    on_step_end: Callable[[int], dict[str, float]] | None = None
    episode_metrics: Callable[[list[tuple[dict[str, Any], dict[str, Any]]]], dict[str, float]] | None = None
    progress: dict[str, str] = field(default_factory=dict)
    stateful: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunContext:
    """What a mechanism may use from the training run it is attached to.

    Args:
        output_dir: The run's folder (default home of pools and stores).
        seed: The rollout seed (task draws, experience allocation).
        task_split: The split trained on.
        train_tasks: The seed tasks of that split.
        probe: An environment of the run (base env, shaped), for services that explore it.
        env_id: The environment's id.
        settings: The whole training config, read-only, for settings a mechanism shares with the run.
    """

    output_dir: str
    seed: int
    task_split: str
    train_tasks: list[Task]
    probe: gym.Env | None = None
    env_id: str = ""
    settings: Any = None


@dataclass
class Attachment:
    """What ``attach`` returns: an environment layer (``env -> wrapped env``) and the trainer's hooks."""

    layer: Callable[[gym.Env], gym.Env] | None
    hooks: TrainingHooks
    services: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Mechanism:
    """A registered mechanism.

    Args:
        name: The name a config enables it by (in ``wrappers``).
        config_class: Its typed config dataclass; every field with ``metadata["help"]``, names
            prefixed so they are unique across mechanisms (they are flat command-line options).
        attach: ``(config, run) -> Attachment``.
    """

    name: str
    config_class: type
    attach: Callable[[Any, RunContext], Attachment]


_REGISTRY: dict[str, Mechanism] = {}


def register_mechanism(mechanism: Mechanism) -> Mechanism:
    """Add ``mechanism`` to the registry (a name can be registered once)."""
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"register_mechanism needs a Mechanism, got {type(mechanism).__name__}")
    if not mechanism.name or not mechanism.name.isidentifier():
        raise ValueError(f"mechanism name must be an identifier, got {mechanism.name!r}")
    _load_builtins()
    taken = _REGISTRY.get(mechanism.name)
    if taken is not None and taken is not mechanism:
        raise ValueError(f"a mechanism named {mechanism.name!r} is already registered")
    _REGISTRY[mechanism.name] = mechanism
    return mechanism


def unregister_mechanism(name: str) -> None:
    """Remove a registered mechanism (tests, notebooks)."""
    _REGISTRY.pop(name, None)


def _load_builtins() -> None:
    for name, target in BUILTIN_MECHANISMS.items():
        if name not in _REGISTRY:
            module, attr = target.split(":")
            _REGISTRY[name] = getattr(importlib.import_module(module), attr)


def mechanism_names() -> tuple[str, ...]:
    """Every registered mechanism, built-ins first."""
    _load_builtins()
    return tuple(_REGISTRY)


def get_mechanism(name: str) -> Mechanism:
    """The mechanism registered as ``name``."""
    _load_builtins()
    if name not in _REGISTRY:
        raise ValueError(f"unknown mechanism {name!r}; choose from {list(_REGISTRY)}")
    return _REGISTRY[name]


class TrajectoryRecorder:
    """Records an episode's steps as a wrapper sees them: the one way wrappers copy ``info``.

    Each step keeps the observation the action was taken on, the action, the reward and a deep
    copy of ``info`` without the keys in ``exclude`` (a wrapper's own key, which it writes later).

    Example:
        >>> rec = TrajectoryRecorder(exclude=("mine",))
        >>> rec.start("obs0", {"task": {"task_id": "t", "env_id": "e", "instruction": "do"}})
        >>> _ = rec.record("act", "obs1", 1.0, {"mine": 1, "other": [2]})
        >>> traj = rec.finish(True, False, {"success": True, "score": 1.0})
        >>> traj.steps[0].info, traj.success, traj.score
        ({'other': [2]}, True, 1.0)
    """

    def __init__(self, exclude: Sequence[str] = (), keep_info: bool = True) -> None:
        self.exclude, self.keep_info = frozenset(exclude), bool(keep_info)
        self.trajectory: Trajectory | None = None
        self._observation: Any = ""

    @property
    def active(self) -> bool:
        return self.trajectory is not None

    def start(self, observation: Any, info: dict[str, Any], task: Task | None = None, **metadata: Any) -> None:
        """Begin an episode from the reset observation and ``info`` (its ``task`` unless given)."""
        if task is None:
            raw = info.get("task")
            try:
                task = Task.from_dict(raw)
            except (TypeError, ValueError, KeyError):
                task = Task("unknown", "unknown", str(info.get("instruction", "")))
        self.trajectory = Trajectory(task=task, metadata=dict(metadata))
        self._observation = observation

    def record(self, action: Any, observation: Any, reward: float, info: dict[str, Any]) -> Step:
        """Append one step; ``observation`` is the one the next action will be taken on."""
        if self.trajectory is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        kept = copy.deepcopy({k: v for k, v in info.items() if k not in self.exclude}) if self.keep_info else {}
        step = Step(observation=self._observation, action=str(action), reward=float(reward), info=kept)
        self.trajectory.steps.append(step)
        self._observation = observation
        return step

    def finish(self, terminated: bool, truncated: bool, info: dict[str, Any]) -> Trajectory:
        """Close the episode: outcome from the final ``info``; the recorder is then idle."""
        if self.trajectory is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        traj, self.trajectory = self.trajectory, None
        traj.terminated, traj.truncated = bool(terminated), bool(truncated)
        traj.success = bool(info.get("success", False))
        traj.score = float(info.get("score", traj.total_reward))
        return traj
