"""Self-attributing as a training mechanism: its settings, and what it adds to a run.

* ``AttributionConfig`` - every setting of the mechanism (the one home of each; flat ``attribution_*``
  and ``attributor*`` options of ``evolver train``).
* ``cosine_alpha`` - the ADCA weight schedule (cosine decay, off after a cutoff step).
* ``attach`` - the ``Attribution`` layer with one shared attributor, and the trainer hooks: the step
  rewards read from ``info[attribution_info_key]`` and their weight alpha at each optimiser step, and
  the labels of episodes the trainer cuts before the environment ends them.

Metrics: ``attr/labelled_rate``, ``attr/fallback_rate`` (labelled episodes whose labels are only the outcome's
sign: a failed LLM call, or an episode without ``info["progress"]`` for the oracle, such as a judge-graded
synthetic task), ``attr/good_rate`` (and ``_success`` / ``_failure``); with a non-oracle
attributor on an environment that emits ``info["progress"]``, the agreement of its labels with the
oracle's on the training episodes: ``attr/oracle_agreement`` (share of steps labelled alike),
``attr/oracle_kappa`` (Cohen's kappa) and ``attr/oracle_checked_rate`` (episodes with oracle labels).
* ``MECHANISM`` - the registry entry (name ``attribution``).

Reads: every step's observation, action, reward and ``info`` (``progress`` for the oracle). Writes:
``info[attribution_info_key]`` on the final step (an :class:`~wrappers.attribution.base.AttributionPayload`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..plugin import Attachment, Mechanism, RunContext, TrainingHooks, json_mapping
from .base import AttributionPayload
from .evaluate import cohen_kappa

__all__ = ["AttributionConfig", "cosine_alpha", "attach", "MECHANISM"]


def cosine_alpha(step: int, *, alpha: float, alpha_min: float = 0.0, decay_steps: int | None = None,
                 cutoff_step: int | None = None) -> float:
    """The attribution weight at training step ``step``.

    ``alpha_t = alpha_min + (alpha - alpha_min) * (1 + cos(pi * p)) / 2`` with ``p = step / decay_steps``
    clamped to [0, 1] (constant ``alpha`` when ``decay_steps`` is ``None``); 0 from ``cutoff_step`` on.

    Example:
        >>> cosine_alpha(0, alpha=0.2, decay_steps=10), cosine_alpha(10, alpha=0.2, decay_steps=10)
        (0.2, 0.0)
        >>> cosine_alpha(5, alpha=0.2, cutoff_step=5)
        0.0
    """
    if cutoff_step is not None and step >= cutoff_step:
        return 0.0
    if not decay_steps:
        return float(alpha)
    p = min(max(step / decay_steps, 0.0), 1.0)
    return float(alpha_min + 0.5 * (alpha - alpha_min) * (1.0 + math.cos(math.pi * p)))


@dataclass
class AttributionConfig:
    """Settings of self-attributing (step labels and the ADCA advantage they feed)."""

    _argument_group_name = "self-attributing (wrappers: attribution)"

    attributor: str = field(default="oracle", metadata={
        "help": "Who labels the steps: 'oracle' (the simulator's progress signal), 'rules', 'env-rules' (the "
                "environment's own judgement, info['step_credit']: Avalon's hidden-state credit) or 'llm-judge'."})
    attributor_kwargs: dict | str | None = field(default=None, metadata={
        "help": "Constructor kwargs of the attributor (YAML mapping or JSON string), e.g. "
                "{\"llm_config\": \"roles.yaml\"} for llm-judge."})
    attribution_alpha: float = field(default=0.0, metadata={
        "help": "ADCA alpha: weight of the suffix-summed, group-z-scored step labels (AgentEvolver 0.1-0.2). "
                "0 turns attribution advantages off."})
    attribution_alpha_min: float = field(default=0.0, metadata={"help": "Floor of the cosine alpha decay."})
    attribution_decay_steps: int | None = field(default=None, metadata={
        "help": "Steps of the cosine decay from attribution_alpha to attribution_alpha_min; None = constant."})
    attribution_cutoff_step: int | None = field(default=None, metadata={
        "help": "Training step from which attribution advantages are off (AgentEvolver prm_steps)."})
    attribution_oracle_agreement: bool = field(default=True, metadata={
        "help": "With an attributor other than the oracle, also label training episodes with the oracle where "
                "the environment emits info['progress'], and log the agreement (attr/oracle_agreement, "
                "attr/oracle_kappa). The oracle's labels never become rewards."})
    attribution_info_key: str = field(default="attribution", metadata={"help": "The info key the wrapper writes."})

    def __post_init__(self) -> None:
        from .wrapper import ATTRIBUTOR_NAMES

        if self.attributor not in ATTRIBUTOR_NAMES:
            raise ValueError(f"attributor must be one of {ATTRIBUTOR_NAMES}, got {self.attributor!r}")
        self.attributor_kwargs = json_mapping(self.attributor_kwargs, "attributor_kwargs")
        if self.attribution_alpha < 0 or self.attribution_alpha_min < 0:
            raise ValueError(f"attribution_alpha and attribution_alpha_min must be >= 0, got "
                             f"{self.attribution_alpha!r}, {self.attribution_alpha_min!r}")
        for name in ("attribution_decay_steps", "attribution_cutoff_step"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0 or None, got {value!r}")
        if not self.attribution_info_key:
            raise ValueError(f"attribution_info_key must be a non-empty string, got {self.attribution_info_key!r}")

    def alpha_at(self, step: int) -> float:
        """alpha at optimiser step ``step``."""
        return cosine_alpha(step, alpha=self.attribution_alpha, alpha_min=self.attribution_alpha_min,
                            decay_steps=self.attribution_decay_steps, cutoff_step=self.attribution_cutoff_step)


def training_hooks(config: AttributionConfig, attributor: Any = None, reference: Any = None) -> TrainingHooks:
    """The trainer's hooks: step rewards from the payload, weighted by the alpha schedule; with
    ``attributor``, episodes the trainer cuts are labelled too (``reference``: the oracle, for agreement)."""
    from .wrapper import attribution_record

    key = config.attribution_info_key

    def finish_cut_episode(trajectory: Any) -> dict[str, Any]:
        return {key: attribution_record(attributor, trajectory, reference)}

    def step_rewards(info: dict[str, Any]) -> list[float] | None:
        payload = AttributionPayload.from_info(info, key)
        return payload.step_rewards() if payload is not None else None

    def episode_metrics(episodes: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, float]:
        finished = [(AttributionPayload.from_info(final, key), final) for _, final in episodes]
        labelled = [(p, final) for p, final in finished if p is not None]
        out = {"attr/labelled_rate": len(labelled) / max(len(finished), 1)}
        if labelled:  # labels that are the outcome's sign only (a failed LLM call, no progress to label by)
            out["attr/fallback_rate"] = sum(p.fallback for p, _ in labelled) / len(labelled)

        def good_rate(group: list[tuple[AttributionPayload, dict[str, Any]]]) -> float:
            labels = [lab for p, _ in group for lab in p.labels]
            return sum(lab.score > 0 for lab in labels) / max(len(labels), 1)

        checked = [p for p, _ in labelled if p.reference is not None and len(p.reference) == len(p.labels)]
        if checked:
            reference = [lab for p in checked for lab in p.reference]
            predicted = [lab for p in checked for lab in p.step_labels()]
            out["attr/oracle_agreement"] = sum(a == b for a, b in zip(reference, predicted)) / len(reference)
            out["attr/oracle_kappa"] = cohen_kappa(reference, predicted)
            out["attr/oracle_checked_rate"] = len(checked) / len(labelled)
        if labelled:
            out["attr/good_rate"] = good_rate(labelled)
            ok = [x for x in labelled if x[1].get("success", False)]
            bad = [x for x in labelled if not x[1].get("success", False)]
            if ok:
                out["attr/good_rate_success"] = good_rate(ok)
            if bad:
                out["attr/good_rate_failure"] = good_rate(bad)
        return out

    return TrainingHooks(name="attribution", step_rewards=step_rewards, step_reward_weight=config.alpha_at,
                         finish_cut_episode=finish_cut_episode if attributor is not None else None,
                         episode_metrics=episode_metrics, progress={"attr/oracle_agreement": "agree"})


def attach(config: AttributionConfig, run: RunContext) -> Attachment:
    """One attributor shared by every environment copy, the ``Attribution`` layer and the hooks."""
    from .rules import OracleAttributor
    from .wrapper import Attribution, make_attributor

    attributor = make_attributor(config.attributor, **dict(config.attributor_kwargs or {}))
    reference = OracleAttributor() if config.attribution_oracle_agreement and config.attributor != "oracle" else None

    def layer(env: Any) -> Any:
        return Attribution(env, attributor=attributor, info_key=config.attribution_info_key, reference=reference)

    return Attachment(layer=layer, hooks=training_hooks(config, attributor, reference),
                      services={"attributor": attributor})


MECHANISM = Mechanism("attribution", AttributionConfig, attach)
