"""A curriculum that keeps training at the edge of the policy's ability.

* ``CurriculumConfig`` - the target pass-rate band, the estimation window and the sampling weights.
* ``Curriculum`` - weighted task sampling from a :class:`~wrappers.questioning.pool.TaskPool`.

A task's pass rate is the mean of its last ``window`` outcomes in the pool (episodes played by the
training policy and difficulty estimates alike), so the estimate follows the policy as it improves:
a task that was too hard drifts into the band, a task that became easy drifts out of it. Tasks in
the band are sampled with ``in_band_weight``, tasks outside it with the small ``out_of_band_weight``
(they are still seen now and then, which is what re-estimates them), tasks with fewer than
``min_observations`` outcomes with ``unknown_weight``. With ``seed_ratio`` set, that share of draws
comes from the seed tasks and the rest from the synthetic ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .pool import TaskPool

__all__ = ["Curriculum", "CurriculumConfig"]


@dataclass
class CurriculumConfig:
    """How the curriculum weighs tasks. All pass rates are in [0, 1]."""

    band: tuple[float, float] = field(default=(0.2, 0.8), metadata={"help": "target pass-rate band [low, high]"})
    window: int = field(default=8, metadata={"help": "the last N outcomes of a task estimate its pass rate"})
    min_observations: int = field(default=2, metadata={"help": "fewer outcomes than this: pass rate unknown"})
    in_band_weight: float = field(default=1.0, metadata={"help": "sampling weight of a task in the band"})
    out_of_band_weight: float = field(default=0.05, metadata={"help": "weight outside the band (> 0 re-estimates)"})
    unknown_weight: float = field(default=1.0, metadata={"help": "weight of a task not yet estimated"})
    seed_ratio: float | None = field(
        default=None, metadata={"help": "share of draws from seed tasks; None: one pool, no distinction"})

    def __post_init__(self) -> None:
        lo, hi = self.band
        if not (0.0 <= lo <= hi <= 1.0):
            raise ValueError(f"CurriculumConfig.band must satisfy 0 <= low <= high <= 1, got {self.band!r}")
        self.band = (float(lo), float(hi))
        if not isinstance(self.window, int) or self.window < 1:
            raise ValueError(f"CurriculumConfig.window must be a positive int, got {self.window!r}")
        if not isinstance(self.min_observations, int) or not 0 <= self.min_observations <= self.window:
            raise ValueError(f"CurriculumConfig.min_observations must be in [0, window], got {self.min_observations!r}")
        for name in ("in_band_weight", "out_of_band_weight", "unknown_weight"):
            if getattr(self, name) < 0:
                raise ValueError(f"CurriculumConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.seed_ratio is not None and not 0.0 <= self.seed_ratio <= 1.0:
            raise ValueError(f"CurriculumConfig.seed_ratio must be None or in [0, 1], got {self.seed_ratio!r}")


class Curriculum:
    """Samples pool tasks by their current pass rate, and records new outcomes.

    Example:
        >>> import numpy as np
        >>> from evolver_gym.core import Task
        >>> pool = TaskPool(None)
        >>> for i in range(3):
        ...     _ = pool.add(Task(f"toy/{i}", "toy", f"task {i}"))
        >>> cur = Curriculum(pool, CurriculumConfig(band=(0.2, 0.8), min_observations=1))
        >>> cur.update("toy/0", True); cur.update("toy/1", False); cur.update("toy/1", True)
        >>> cur.status("toy/0"), cur.status("toy/1"), cur.status("toy/2")
        ('above', 'in_band', 'unknown')
        >>> cur.sample(np.random.default_rng(0)) in {"toy/0", "toy/1", "toy/2"}
        True
    """

    def __init__(self, pool: TaskPool, config: CurriculumConfig | None = None):
        if not isinstance(pool, TaskPool):
            raise TypeError(f"Curriculum.pool must be a TaskPool, got {type(pool)}")
        self.pool = pool
        self.config = config or CurriculumConfig()

    # -- estimates -----------------------------------------------------------------------
    def pass_rate(self, task_id: str) -> float | None:
        """Windowed pass rate, ``None`` while the task has fewer than ``min_observations`` outcomes."""
        hist = self.pool.history(task_id)[-self.config.window:]
        return self._rate(hist)

    def _rate(self, hist: list[float]) -> float | None:
        hist = hist[-self.config.window:]
        if not hist or len(hist) < self.config.min_observations:
            return None
        return float(sum(hist) / len(hist))

    def status(self, task_id: str) -> str:
        """``unknown``, ``below`` (too hard), ``in_band`` or ``above`` (too easy)."""
        return self._status(self.pass_rate(task_id))

    def _status(self, rate: float | None) -> str:
        if rate is None:
            return "unknown"
        lo, hi = self.config.band
        return "below" if rate < lo else "above" if rate > hi else "in_band"

    def difficulty(self, task_id: str) -> float | None:
        """``1 - pass rate``: 0 = always solved, 1 = never; ``None`` when not estimated yet."""
        rate = self.pass_rate(task_id)
        return None if rate is None else 1.0 - rate

    def weights(self, task_ids: list[str]) -> np.ndarray:
        """Sampling weight of each task (not normalised)."""
        hists = self.pool.histories(task_ids)
        table = {"unknown": self.config.unknown_weight, "in_band": self.config.in_band_weight,
                 "below": self.config.out_of_band_weight, "above": self.config.out_of_band_weight}
        return np.array([table[self._status(self._rate(hists[t]))] for t in task_ids], dtype=float)

    # -- sampling ------------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, exclude: set[str] | frozenset[str] = frozenset()) -> str:
        """One task id drawn by weight (and by ``seed_ratio`` between seed and synthetic tasks),
        never one of ``exclude``."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"Curriculum.sample needs a numpy Generator, got {type(rng)}")
        ratio = self.config.seed_ratio
        if ratio is None:
            groups = [[t for t in self.pool.ids() if t not in exclude]]
        else:
            seed_ids = [t for t in self.pool.ids(origin="seed") if t not in exclude]
            synth_ids = [t for t in self.pool.ids(origin="synthetic") if t not in exclude]
            # One uniform draw decides the group, so the same rng state gives the same choice.
            first, second = (seed_ids, synth_ids) if rng.random() < ratio else (synth_ids, seed_ids)
            groups = [first, second]
        for ids in groups:
            if not ids:
                continue
            w = self.weights(ids)
            if w.sum() <= 0:
                w = np.ones(len(ids))
            return ids[int(rng.choice(len(ids), p=w / w.sum()))]
        raise LookupError("the task pool has no active task to sample")

    def update(self, task_id: str, success: bool | float, source: str = "train") -> None:
        """Record one outcome of ``task_id``; later draws use the new estimate."""
        self.pool.record_outcome(task_id, success, source=source)

    def summary(self) -> dict[str, Any]:
        """How many active tasks are below, in and above the band, or not estimated."""
        ids = self.pool.ids()
        hists = self.pool.histories(ids)
        counts = {"unknown": 0, "below": 0, "in_band": 0, "above": 0}
        for t in ids:
            counts[self._status(self._rate(hists[t]))] += 1
        return {"band": list(self.config.band), **counts}
