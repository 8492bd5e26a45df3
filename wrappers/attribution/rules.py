"""Attributors that need no model: the simulator oracle and simple rules.

* ``OracleAttributor`` - labels from the environment's privileged ``info["progress"]``.
* ``RuleAttributor`` - invalid actions (``info["action_valid"] is False``) and actions that
  changed nothing (the observation after equals the one before) are BAD; every other step gets
  ``valid_label``.
"""

from __future__ import annotations

from evolver_gym.core import Trajectory

from .base import AttributionResult, Attributor, StepLabel, outcome_positive

__all__ = ["OracleAttributor", "RuleAttributor", "progress_of"]

_EPS = 1e-9


def progress_of(trajectory: Trajectory, index: int) -> float:
    """``info["progress"]`` after step ``index`` (``index=-1``: after reset, 0.0 when absent)."""
    if index < 0:
        return float(trajectory.metadata.get("reset_info", {}).get("progress", 0.0))
    info = trajectory.steps[index].info
    if "progress" not in info:
        raise ValueError(f"step {index} has no info['progress']: the oracle needs an environment that "
                         f"emits it (info keys: {sorted(info)})")
    return float(info["progress"])


class OracleAttributor(Attributor):
    """Ground-truth labels from the simulator's share of the goal achieved.

    A step is GOOD when it moves the goal forward: ``progress`` after it is higher than before
    it. The episode's last step, when the episode *terminated* (the agent finalized, e.g. bought),
    is GOOD iff the episode succeeded: finalizing a wrong result is BAD even if the final
    evaluation gave partial credit, and finalizing the right one is GOOD even when no further
    progress is measurable. A truncated episode's last step follows the progress rule.
    """

    name = "oracle"

    def attribute(self, trajectory: Trajectory) -> AttributionResult:
        labels = []
        before = progress_of(trajectory, -1)
        last = len(trajectory.steps) - 1
        for i in range(len(trajectory.steps)):
            after = progress_of(trajectory, i)
            if i == last and trajectory.terminated:
                good = bool(trajectory.success)
                reason = "finalized a correct result" if good else "finalized a wrong result"
            else:
                good = after > before + _EPS
                reason = f"progress {before:.3f} -> {after:.3f}"
            labels.append(StepLabel.of(i, good, reason=reason))
            before = after
        return AttributionResult(self.name, labels)


class RuleAttributor(Attributor):
    """Invalid actions and actions without effect are BAD; other steps get ``valid_label``.

    An action has no effect when the observation it produced equals the one it was taken on
    (re-running the same search, clicking a dead link, waiting). The last step's result is
    ``trajectory.metadata["final_observation"]`` when recorded (the ``Attribution`` wrapper does).

    Args:
        valid_label: ``"GOOD"`` (default), ``"BAD"``, or ``"outcome"`` (the outcome's sign).
        no_effect_bad: Label actions without effect BAD.
    """

    name = "rules"

    def __init__(self, valid_label: str = "GOOD", no_effect_bad: bool = True) -> None:
        if valid_label not in ("GOOD", "BAD", "outcome"):
            raise ValueError(f"valid_label must be 'GOOD', 'BAD' or 'outcome', got {valid_label!r}")
        self.valid_label = valid_label
        self.no_effect_bad = bool(no_effect_bad)

    def label_step(self, trajectory: Trajectory, index: int) -> StepLabel:
        step = trajectory.steps[index]
        if step.info.get("action_valid") is False:
            return StepLabel(index, "BAD", reason=f"invalid action: {step.info.get('error', '')}"[:300])
        if self.no_effect_bad:
            steps = trajectory.steps
            after = (steps[index + 1].observation if index + 1 < len(steps)
                     else trajectory.metadata.get("final_observation"))
            if after == step.observation:
                return StepLabel(index, "BAD", reason="the action changed nothing")
        if self.valid_label == "outcome":
            return StepLabel.of(index, outcome_positive(trajectory), reason="valid action; outcome's sign")
        return StepLabel(index, self.valid_label, reason="valid action")
