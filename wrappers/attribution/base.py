"""Step labels and the attributor interface.

* ``LABELS`` - ``("GOOD", "BAD")``.
* ``StepLabel`` - one step's label, score and reason.
* ``AttributionResult`` - the labels of one trajectory, who made them, and whether they are a
  fallback; ``to_info()`` gives the ``info["attribution"]`` record.
* ``Attributor`` - the base class. A user's attributor overrides ``label_step`` (one step at a
  time) or ``attribute`` (a whole trajectory); ``attribute_batch`` may be overridden to batch.
* ``outcome_score`` / ``outcome_positive`` - the outcome as the judge sees it, and its sign.
* ``label_reward`` - the one label -> step reward mapping (GOOD +1, BAD -1).
* ``AttributionPayload`` - the typed ``info["attribution"]`` record, ``from_info`` / ``step_rewards``.

Example:
    >>> from evolver_gym.core import Step, Task, Trajectory
    >>> class LongActionsAreBad(Attributor):
    ...     name = "long-actions"
    ...     def label_step(self, trajectory, index):
    ...         bad = len(trajectory.steps[index].action) > 20
    ...         return StepLabel(index, "BAD" if bad else "GOOD", reason="length")
    >>> t = Trajectory(Task("t/0", "demo", "do it"), [Step("o", "search[x]"), Step("o", "x" * 30)])
    >>> [l.label for l in LongActionsAreBad().attribute(t).labels]
    ['GOOD', 'BAD']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evolver_gym.core import Trajectory

__all__ = ["LABELS", "Attributor", "AttributionPayload", "AttributionResult", "StepLabel", "label_reward",
           "outcome_positive", "outcome_score"]

LABELS = ("GOOD", "BAD")


def label_reward(label: str) -> float:
    """The step reward of an ungraded label: +1.0 for GOOD, -1.0 for BAD.

    Example:
        >>> label_reward("GOOD"), label_reward("BAD")
        (1.0, -1.0)
    """
    if label not in LABELS:
        raise ValueError(f"label must be one of {LABELS}, got {label!r}")
    return 1.0 if label == "GOOD" else -1.0


@dataclass
class StepLabel:
    """The credit of one step. ``score`` is +1.0 for GOOD and -1.0 for BAD unless graded."""

    step: int
    label: str
    score: float | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"StepLabel.label must be one of {LABELS}, got {self.label!r}")
        if self.score is None:
            self.score = label_reward(self.label)
        self.score = float(self.score)
        self.step = int(self.step)

    @classmethod
    def of(cls, step: int, good: bool, reason: str = "") -> StepLabel:
        return cls(step, "GOOD" if good else "BAD", reason=reason)

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "label": self.label, "score": self.score, "reason": self.reason}


@dataclass
class AttributionResult:
    """Labels of every step of one trajectory, in order."""

    attributor: str
    labels: list[StepLabel] = field(default_factory=list)
    fallback: bool = False

    def to_info(self) -> dict[str, Any]:
        """The ``info["attribution"]`` record of the project's contract."""
        return {"attributor": self.attributor, "labels": [lab.to_dict() for lab in self.labels],
                "fallback": bool(self.fallback)}

    @property
    def flags(self) -> list[bool]:
        """``True`` for each GOOD step."""
        return [lab.label == "GOOD" for lab in self.labels]


@dataclass
class AttributionPayload:
    """``info["attribution"]`` on an episode's final step: who labelled it, the labels, whether a fallback,
    and, when the wrapper has a reference attributor, the reference's labels (``reference``, for agreement).

    Example:
        >>> info = {"attribution": AttributionResult("oracle", [StepLabel(1, "BAD"), StepLabel(0, "GOOD")]).to_info()}
        >>> AttributionPayload.from_info(info).step_rewards()
        [1.0, -1.0]
        >>> AttributionPayload.from_info({"attribution": {"labels": []}}) is None
        True
    """

    attributor: str
    labels: list[StepLabel]
    fallback: bool = False
    reference: list[str] | None = None

    @classmethod
    def from_info(cls, info: dict[str, Any], key: str = "attribution") -> AttributionPayload | None:
        """The payload under ``info[key]``; ``None`` when there is none or it has no labels."""
        raw = info.get(key)
        if not isinstance(raw, dict) or not raw.get("labels"):
            return None
        labels = [StepLabel(int(lab.get("step", 0)), str(lab.get("label", "GOOD")), lab.get("score"),
                            str(lab.get("reason", ""))) for lab in raw["labels"]]
        ref = raw.get("reference")
        reference = [str(x) for x in ref["labels"]] if isinstance(ref, dict) and ref.get("labels") else None
        return cls(str(raw.get("attributor", "")), labels, bool(raw.get("fallback", False)), reference)

    def step_labels(self) -> list[str]:
        """The labels in step order."""
        return [lab.label for lab in sorted(self.labels, key=lambda lab: lab.step)]

    def step_rewards(self) -> list[float]:
        """One reward per step, in step order (the input of the attributed advantage)."""
        return [float(lab.score) for lab in sorted(self.labels, key=lambda lab: lab.step)]


def outcome_score(trajectory: Trajectory) -> float:
    """The outcome rescaled to [-1, 1] as AgentEvolver shows it to its judge: ``2 * (score - 0.5)``
    for a score in [0, 1] (scores outside are clipped first)."""
    score = min(1.0, max(0.0, float(trajectory.score)))
    return 2.0 * (score - 0.5)


def outcome_positive(trajectory: Trajectory) -> bool:
    """The outcome's sign: positive when the episode succeeded or its rescaled score is above 0."""
    return bool(trajectory.success) or outcome_score(trajectory) > 0.0


class Attributor:
    """Base class of attributors: label every step of a finished trajectory GOOD or BAD.

    Override ``label_step`` for a per-step rule, or ``attribute`` for a whole-trajectory method
    (and ``attribute_batch`` to batch many trajectories, as the LLM judge does). ``name`` is
    written into ``info["attribution"]["attributor"]``.
    """

    name: str = "attributor"

    def label_step(self, trajectory: Trajectory, index: int) -> StepLabel:
        raise NotImplementedError(f"{type(self).__name__} must override label_step or attribute")

    def attribute(self, trajectory: Trajectory) -> AttributionResult:
        labels = [self.label_step(trajectory, i) for i in range(len(trajectory.steps))]
        return AttributionResult(self.name, labels)

    def attribute_batch(self, trajectories: list[Trajectory]) -> list[AttributionResult]:
        return [self.attribute(t) for t in trajectories]

    def fallback(self, trajectory: Trajectory, reason: str) -> AttributionResult:
        """Every step labelled with the outcome's sign (what AgentEvolver does when labelling fails)."""
        good = outcome_positive(trajectory)
        labels = [StepLabel.of(i, good, reason=reason) for i in range(len(trajectory.steps))]
        return AttributionResult(self.name, labels, fallback=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
