"""Attributors that need no model: the simulator oracle and simple rules.

* ``OracleAttributor`` - labels from the environment's privileged ``info["progress"]`` (and, where
  present, ``info["available_actions"]`` to tell enabling navigation from wasted steps).
* ``RuleAttributor`` - invalid actions (``info["action_valid"] is False``) and actions that
  changed nothing (the observation after equals the one before) are BAD; every other step gets
  ``valid_label``.
* ``EnvRuleAttributor`` - the environment's own rules: ``info["step_credit"]`` after each step (the
  Avalon seats' hidden-state credit, ``arena.avalon.credit``); a step no rule judges gets the outcome's sign.
"""

from __future__ import annotations

import re

from evolver_gym.core import Trajectory

from .base import AttributionResult, Attributor, StepLabel, outcome_positive

__all__ = ["EnvRuleAttributor", "MissingProgress", "OracleAttributor", "RuleAttributor", "progress_of"]

_EPS = 1e-9
_CLICK = re.compile(r"click\[(.*)\]", re.IGNORECASE | re.DOTALL)


class MissingProgress(ValueError):
    """An episode without ``info["progress"]``: the oracle cannot label it.

    Either the environment never emits it, or this episode's progress is not measurable (a synthetic task
    graded by a judge: ``SelfQuestioning`` drops the env's progress, which is measured against another goal).
    """


def progress_of(trajectory: Trajectory, index: int) -> float:
    """``info["progress"]`` after step ``index`` (``index=-1``: after reset, 0.0 when absent)."""
    if index < 0:
        return float(trajectory.metadata.get("reset_info", {}).get("progress", 0.0))
    info = trajectory.steps[index].info
    if "progress" not in info:
        raise MissingProgress(f"step {index} has no info['progress']: the oracle needs an environment that "
                         f"emits it (info keys: {sorted(info)})")
    return float(info["progress"])


def _clickables(info: dict) -> set[str] | None:
    avail = info.get("available_actions")
    if isinstance(avail, dict) and isinstance(avail.get("clickables"), list):
        return {str(c).strip().lower() for c in avail["clickables"]}
    return None


def _click_target(action: str) -> str | None:
    m = _CLICK.fullmatch(action.strip())
    return m.group(1).strip().lower() if m else None


class OracleAttributor(Attributor):
    """Ground-truth labels from the simulator's privileged ``info["progress"]``.

    Rules, in order, for step ``i`` (``p`` is ``progress`` before and after the step):

    1. an invalid action (``info["action_valid"] is False``) is BAD: it changed nothing;
    2. the last step of a *terminated* episode (the agent finalized, e.g. bought) is GOOD iff the
       episode succeeded: finalizing a wrong result is BAD even with partial credit;
    3. progress went up: GOOD; down: BAD;
    4. progress unchanged and the observation unchanged: BAD (no effect);
    5. progress unchanged but the page changed (opening an item, paging): GOOD iff the step
       *enabled* a later GOOD step that raised progress or finalized correctly, directly or
       through a chain of enabling steps. Where ``info["available_actions"]["clickables"]`` is
       known, step ``i`` enables step ``k`` when ``k`` clicks something that became clickable
       through step ``i``; without it, the first later change of progress must be a rise.

    So on WebShop, opening the right product before choosing its options is GOOD, a search
    that shows nothing useful and is replaced by another search is BAD, and clicking a wrong
    option that a later click overrides is BAD. A truncated episode's last step follows 3-5.
    """

    name = "oracle"

    def attribute(self, trajectory: Trajectory) -> AttributionResult:
        steps = trajectory.steps
        n = len(steps)
        progress = [progress_of(trajectory, i) for i in range(-1, n)]  # progress[i + 1] after step i
        reset_info = trajectory.metadata.get("reset_info", {})
        final_obs = trajectory.metadata.get("final_observation")
        labels: list[StepLabel | None] = [None] * n
        # Backwards, so rule 5 can look at the labels of the steps a flat step enabled.
        for i in range(n - 1, -1, -1):
            info = steps[i].info
            before, after = progress[i], progress[i + 1]
            if info.get("action_valid") is False:
                labels[i] = StepLabel(i, "BAD", reason="invalid action")
            elif i == n - 1 and trajectory.terminated:
                good = bool(trajectory.success)
                labels[i] = StepLabel.of(i, good, "finalized a correct result" if good else "finalized a wrong result")
            elif after > before + _EPS:
                labels[i] = StepLabel(i, "GOOD", reason=f"progress {before:.3f} -> {after:.3f}")
            elif after < before - _EPS:
                labels[i] = StepLabel(i, "BAD", reason=f"progress {before:.3f} -> {after:.3f}")
            else:
                next_obs = steps[i + 1].observation if i + 1 < n else final_obs
                if next_obs == steps[i].observation:
                    labels[i] = StepLabel(i, "BAD", reason="no effect")
                else:
                    labels[i] = self._flat(trajectory, i, progress, labels, reset_info)
        return AttributionResult(self.name, [lab for lab in labels if lab is not None])

    @staticmethod
    def _flat(trajectory: Trajectory, i: int, progress: list[float], labels: list[StepLabel | None],
              reset_info: dict) -> StepLabel:
        steps = trajectory.steps
        before_set = _clickables(steps[i - 1].info if i > 0 else reset_info)
        after_set = _clickables(steps[i].info)
        if before_set is not None and after_set is not None:
            new = after_set - before_set
            for k in range(i + 1, len(steps)):
                target = _click_target(steps[k].action)
                lab = labels[k]
                if target in new and lab is not None and lab.label == "GOOD":
                    return StepLabel(i, "GOOD", reason=f"enabled step {k} ({steps[k].action[:60]})")
            return StepLabel(i, "BAD", reason="progress unchanged and nothing it enabled helped")
        level = progress[i + 1]
        for k in range(i + 1, len(steps)):
            if abs(progress[k + 1] - level) > _EPS or (k == len(steps) - 1 and trajectory.terminated):
                good = labels[k] is not None and labels[k].label == "GOOD" and progress[k + 1] >= level - _EPS
                return StepLabel.of(i, good, f"progress unchanged; next change at step {k} "
                                             f"({'a gain' if good else 'no gain'})")
        return StepLabel(i, "BAD", reason="progress unchanged until the end")


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


class EnvRuleAttributor(Attributor):
    """Labels from the environment's own judgement of each step, ``info["step_credit"]``.

    An environment that knows rules for some decisions (Avalon: a good seat proposing a team with a
    player it knows is evil, ``arena.avalon.credit``) writes, after each step, a credit below 0 (BAD),
    0 or above (GOOD) or ``None`` (no rule applies). An invalid action is BAD; a step without a credit
    gets the outcome's sign, as an outcome-conditioned judge would give it. The credit is privileged:
    it is read from ``info``, never shown to the policy.

    Example:
        >>> from evolver_gym.core import Step, Task, Trajectory
        >>> t = Trajectory(Task("t", "e", "win"), [Step("o", "TEAM: 0, 3", info={"step_credit": -1.0}),
        ...                                       Step("o", "VOTE: approve", info={"step_credit": None})],
        ...                success=True, score=1.0)
        >>> [lab.label for lab in EnvRuleAttributor().attribute(t).labels]
        ['BAD', 'GOOD']
    """

    name = "env-rules"

    def label_step(self, trajectory: Trajectory, index: int) -> StepLabel:
        info = trajectory.steps[index].info
        if info.get("action_valid") is False:
            return StepLabel(index, "BAD", reason=f"invalid action: {info.get('error', '')}"[:300])
        credit = info.get("step_credit")
        if credit is None:
            return StepLabel.of(index, outcome_positive(trajectory), reason="no rule judges this step; the outcome")
        return StepLabel.of(index, float(credit) >= 0, reason=f"the environment's rules: credit {float(credit):+g}")
