"""The Task record shared by every environment, wrapper, task pool and the trainer.

* ``Task`` - one JSON-serialisable task: instruction, goal, reference solution, provenance.

A task is identified by ``task_id``. A synthetic task derived from another gets a fresh id
(:meth:`Task.derive`) and remembers its ``parent_id``; GRPO groups are keyed by ``task_id``.
The ``reference`` (actions that solve the task) is never shown to the acting policy:
:meth:`Task.public` drops it, and environments put only the public view into ``info``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Task", "TASK_ORIGINS"]

TASK_ORIGINS = ("seed", "synthetic")


@dataclass
class Task:
    """One task of one environment.

    Args:
        task_id: Unique id. Environments use ``"<env>/<split>/<index>"`` for seed tasks.
        env_id: The Gymnasium id of the environment the task belongs to.
        instruction: What the agent is asked to do, in natural language.
        split: ``train``, ``dev``, ``test`` (or an environment's own split names).
        seed: Seed of the world the task is played in; same seed and task give the same episode.
        origin: ``"seed"`` for the environment's own tasks, ``"synthetic"`` for generated ones.
        goal: Environment-specific JSON, enough to score the task.
        reference: Actions that solve the task. Never rendered into the policy's input.
        difficulty: Difficulty level or estimate (``None`` when unknown).
        parent_id: For synthetic tasks, the task they were derived from.
        metadata: Free-form JSON (provenance, proposer, filter results, ...).

    Example:
        >>> t = Task(task_id="demo/0", env_id="evolver/WebShop-v0", instruction="buy socks",
        ...          goal={"asin": "B000000001"}, reference=["search[socks]"])
        >>> "reference" in t.public()
        False
        >>> Task.from_dict(t.to_dict()) == t
        True
    """

    task_id: str
    env_id: str
    instruction: str
    split: str = "train"
    seed: int = 0
    origin: str = "seed"
    goal: dict[str, Any] = field(default_factory=dict)
    reference: list[Any] = field(default_factory=list)
    difficulty: float | int | None = None
    parent_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.task_id, str) or not self.task_id:
            raise ValueError(f"Task.task_id must be a non-empty string, got {self.task_id!r}")
        if not isinstance(self.instruction, str):
            raise TypeError(f"Task.instruction must be a string, got {type(self.instruction)}")
        if self.origin not in TASK_ORIGINS:
            raise ValueError(f"Task.origin must be one of {TASK_ORIGINS}, got {self.origin!r}")
        if not isinstance(self.goal, dict):
            raise TypeError(f"Task.goal must be a dict, got {type(self.goal)}")
        self.seed = int(self.seed)

    # -- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (deep-copied)."""
        return json.loads(json.dumps(dataclasses.asdict(self)))

    def to_json(self) -> str:
        """One JSON line, keys sorted, for JSONL files."""
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | Task) -> Task:
        """Build a task from :meth:`to_dict` output; unknown keys go to ``metadata``."""
        if isinstance(data, Task):
            return data
        if not isinstance(data, dict):
            raise TypeError(f"a Task is built from a dict, got {type(data)}")
        names = {f.name for f in dataclasses.fields(cls)}
        known = {k: v for k, v in data.items() if k in names}
        extra = {k: v for k, v in data.items() if k not in names}
        missing = {"task_id", "env_id", "instruction"} - known.keys()
        if missing:
            raise ValueError(f"task dict lacks required keys {sorted(missing)}: {data!r:.200}")
        if extra:
            known["metadata"] = {**known.get("metadata", {}), **extra}
        return cls(**known)

    @classmethod
    def from_json(cls, line: str) -> Task:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(json.loads(line))

    # -- views ---------------------------------------------------------------------------
    def public(self) -> dict[str, Any]:
        """The view that may be shown anywhere: every field except ``reference``."""
        data = self.to_dict()
        data.pop("reference")
        return data

    def derive(self, *, instruction: str, goal: dict[str, Any], reference: list[Any],
               proposer: str, **changes: Any) -> Task:
        """A synthetic child task with a content-derived id and ``parent_id`` set to this one."""
        digest = hashlib.blake2b(
            json.dumps([self.task_id, instruction, goal], sort_keys=True).encode(), digest_size=6
        ).hexdigest()
        metadata = {**changes.pop("metadata", {}), "proposer": proposer}
        return dataclasses.replace(
            self,
            task_id=f"{self.env_id}/synthetic/{digest}",
            instruction=instruction,
            goal=goal,
            reference=list(reference),
            origin="synthetic",
            parent_id=self.task_id,
            metadata=metadata,
            **changes,
        )
