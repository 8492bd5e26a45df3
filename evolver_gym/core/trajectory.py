"""Trajectory records: what happened in one episode, and the token-exact record for training.

* ``Step`` - one observation, the action taken on it, the reward and the step's ``info``.
* ``TokenRecord`` - the exact token ids of a multi-turn episode as the policy sampled them.
* ``Trajectory`` - a task, its steps, the outcome, and optionally the token record. JSONL-ready.
* ``record_episode`` - play a policy in an environment and return its trajectory.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .task import Task

__all__ = ["Step", "TokenRecord", "Trajectory", "record_episode", "read_jsonl", "read_tasks", "write_jsonl"]


def _jsonable(value: Any) -> Any:
    """A JSON-safe copy of ``value`` (numpy scalars and tuples made plain)."""
    return json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


@dataclass
class Step:
    """One step: the observation the agent saw, the action it took, and what came back."""

    observation: str
    action: str
    reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.reward = float(self.reward)


@dataclass
class TokenRecord:
    """Token-exact record of a multi-turn episode.

    ``completion_ids`` holds the episode after the prompt: model tokens exactly as sampled and
    environment tokens in between. ``env_mask[i]`` is 1 for a model token, 0 for an environment
    token; ``step_ids[i]`` is the step a token belongs to; ``logprobs[i]`` is the sampling
    log-probability of a model token (0.0 for environment tokens).
    """

    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    step_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        n = len(self.completion_ids)
        lengths = {"env_mask": len(self.env_mask), "step_ids": len(self.step_ids), "logprobs": len(self.logprobs)}
        bad = {k: v for k, v in lengths.items() if v != n}
        if bad:
            raise ValueError(f"TokenRecord fields must have {n} entries like completion_ids, got {bad}")

    def extend(self, ids: Iterable[int], *, model: bool, step: int, logprobs: Iterable[float] | None = None) -> None:
        """Append tokens of one kind; ``logprobs`` is required for model tokens."""
        ids = list(ids)
        if model:
            lps = list(logprobs) if logprobs is not None else None
            if lps is None or len(lps) != len(ids):
                raise ValueError("model tokens need one sampling logprob each")
        else:
            lps = [0.0] * len(ids)
        self.completion_ids += ids
        self.env_mask += [int(model)] * len(ids)
        self.step_ids += [step] * len(ids)
        self.logprobs += lps


@dataclass
class Trajectory:
    """One episode of one task.

    Example:
        >>> t = Trajectory(task=Task("demo/0", "evolver/WebShop-v0", "buy socks"))
        >>> t.steps.append(Step("WebShop [SEP] ...", "search[socks]", 0.0))
        >>> Trajectory.from_json(t.to_json()).steps[0].action
        'search[socks]'
    """

    task: Task
    steps: list[Step] = field(default_factory=list)
    success: bool = False
    score: float = 0.0
    terminated: bool = False
    truncated: bool = False
    tokens: TokenRecord | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def total_reward(self) -> float:
        return sum(s.reward for s in self.steps)

    @property
    def actions(self) -> list[str]:
        return [s.action for s in self.steps]

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task.to_dict(),
            "steps": [_jsonable(asdict(s)) for s in self.steps],
            "success": bool(self.success),
            "score": float(self.score),
            "terminated": bool(self.terminated),
            "truncated": bool(self.truncated),
            "tokens": asdict(self.tokens) if self.tokens is not None else None,
            "metadata": _jsonable(self.metadata),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        tokens = data.get("tokens")
        return cls(
            task=Task.from_dict(data["task"]),
            steps=[Step(**s) for s in data.get("steps", [])],
            success=bool(data.get("success", False)),
            score=float(data.get("score", 0.0)),
            terminated=bool(data.get("terminated", False)),
            truncated=bool(data.get("truncated", False)),
            tokens=TokenRecord(**tokens) if tokens else None,
            metadata=data.get("metadata", {}),
        )

    @classmethod
    def from_json(cls, line: str) -> Trajectory:
        return cls.from_dict(json.loads(line))


def write_jsonl(path: str | Path, records: Iterable[Trajectory | Task]) -> int:
    """Write records one JSON per line; returns how many were written."""
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(r.to_json() + "\n")
            n += 1
    return n


def read_jsonl(path: str | Path, kind: type = Trajectory) -> Iterator[Any]:
    """Yield ``kind.from_json`` of every non-empty line of ``path``."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield kind.from_json(line)


def read_tasks(path: str | Path, env_id: str, name: str = "tasks file") -> list[Task]:
    """The tasks of a JSONL file (one ``Task.to_dict()`` per line), all of them for ``env_id``.

    Raises ``ValueError`` naming the file (as ``name``) and the line when a line is not a task, a task
    belongs to another environment, or the file holds none.
    """
    tasks: list[Task] = []
    with open(Path(path).expanduser(), encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                task = Task.from_json(line)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{name} {str(path)!r} line {number} is not a task: "
                                 f"{' '.join(str(exc).split())[:200]}") from None
            if task.env_id != env_id:
                raise ValueError(f"{name} {str(path)!r} line {number} is a task of {task.env_id!r}, "
                                 f"not of env_id {env_id!r}")
            tasks.append(task)
    if not tasks:
        raise ValueError(f"{name} {str(path)!r} holds no task")
    return tasks


def record_episode(env: Any, policy: Callable[[str, dict[str, Any]], str], *,
                   seed: int | None = None, options: dict[str, Any] | None = None,
                   max_steps: int = 1000, task: Task | None = None) -> Trajectory:
    """Play ``policy(observation, info) -> action`` in ``env`` for one episode.

    The policy ends the episode early by raising ``StopIteration`` (a replayed action list that
    runs out, say). The environment's final ``info`` supplies ``success`` and ``score``; each step
    keeps the ``info`` it returned, so wrapper keys (``attribution``, ``experience``, ...) travel
    along; ``metadata["final_observation"]`` is the last observation. ``task`` is recorded as the
    episode's task when given (else the env's ``info["task"]``).
    """
    obs, info = env.reset(seed=seed, options=options)
    if task is None:
        task = Task.from_dict(info["task"]) if "task" in info else Task("unknown", "unknown", "")
    reset_info = _jsonable({k: v for k, v in info.items() if k != "task"})
    traj = Trajectory(task=task, metadata={"reset_info": reset_info})
    for _ in range(max_steps):
        try:
            action = policy(obs, info)
        except StopIteration:
            break
        next_obs, reward, terminated, truncated, info = env.step(action)
        traj.steps.append(Step(observation=obs, action=action, reward=float(reward), info=info))
        obs = next_obs
        if terminated or truncated:
            traj.terminated, traj.truncated = bool(terminated), bool(truncated)
            break
    traj.metadata["final_observation"] = obs
    traj.success = bool(info.get("success", False))
    traj.score = float(info.get("score", traj.total_reward))
    return traj
