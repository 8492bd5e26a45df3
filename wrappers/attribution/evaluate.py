"""Agreement of an attributor with a reference attributor (by default the simulator oracle).

* ``cohen_kappa`` - chance-corrected agreement of two label sequences.
* ``evaluate_attributor`` - accuracy, Cohen's kappa, per-label precision/recall/F1, confusion
  counts and the fallback rate of an attributor over a set of trajectories.

Use it to measure a judge model on recorded episodes before paying for a training run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evolver_gym.core import Trajectory

from .base import LABELS, AttributionResult, Attributor
from .rules import OracleAttributor

__all__ = ["cohen_kappa", "evaluate_attributor"]


def cohen_kappa(reference: Sequence[str], predicted: Sequence[str]) -> float:
    """Cohen's kappa ``(p_o - p_e) / (1 - p_e)``; 1.0 for identical constant sequences.

    Example:
        >>> cohen_kappa(["GOOD", "BAD", "GOOD", "BAD"], ["GOOD", "BAD", "BAD", "BAD"])
        0.5
    """
    if len(reference) != len(predicted):
        raise ValueError(f"label sequences differ in length: {len(reference)} vs {len(predicted)}")
    n = len(reference)
    if n == 0:
        return 0.0
    p_o = sum(a == b for a, b in zip(reference, predicted)) / n
    labels = set(reference) | set(predicted)
    p_e = sum((list(reference).count(lab) / n) * (list(predicted).count(lab) / n) for lab in labels)
    if p_e >= 1.0:
        return 1.0 if p_o >= 1.0 else 0.0
    return (p_o - p_e) / (1.0 - p_e)


def evaluate_attributor(attributor: Attributor, trajectories: Sequence[Trajectory],
                        reference: Attributor | None = None) -> dict[str, Any]:
    """Compare ``attributor``'s step labels with ``reference``'s (default: :class:`OracleAttributor`).

    Both label every trajectory (through ``attribute_batch``, so an LLM judge batches its calls).
    Returns ``{"n_trajectories", "n_steps", "accuracy", "kappa", "per_label": {label:
    {"precision", "recall", "f1", "support"}}, "confusion": {ref: {pred: count}}, "fallback_rate"}``.
    """
    trajectories = list(trajectories)
    reference = reference if reference is not None else OracleAttributor()
    ref_results: list[AttributionResult] = reference.attribute_batch(trajectories)
    pred_results: list[AttributionResult] = attributor.attribute_batch(trajectories)
    ref_labels: list[str] = []
    pred_labels: list[str] = []
    for t, r, p in zip(trajectories, ref_results, pred_results):
        if len(r.labels) != len(t.steps) or len(p.labels) != len(t.steps):
            raise ValueError(f"trajectory {t.task.task_id!r}: {len(t.steps)} steps but {len(r.labels)} reference "
                             f"and {len(p.labels)} predicted labels")
        ref_labels += [lab.label for lab in r.labels]
        pred_labels += [lab.label for lab in p.labels]
    n = len(ref_labels)
    confusion = {a: {b: 0 for b in LABELS} for a in LABELS}
    for a, b in zip(ref_labels, pred_labels):
        confusion[a][b] += 1
    per_label = {}
    for lab in LABELS:
        tp = confusion[lab][lab]
        predicted = sum(confusion[a][lab] for a in LABELS)
        actual = sum(confusion[lab].values())
        precision = tp / predicted if predicted else 0.0
        recall = tp / actual if actual else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_label[lab] = {"precision": precision, "recall": recall, "f1": f1, "support": actual}
    return {
        "n_trajectories": len(trajectories),
        "n_steps": n,
        "accuracy": (sum(a == b for a, b in zip(ref_labels, pred_labels)) / n) if n else 0.0,
        "kappa": cohen_kappa(ref_labels, pred_labels),
        "per_label": per_label,
        "confusion": confusion,
        "fallback_rate": (sum(p.fallback for p in pred_results) / len(pred_results)) if pred_results else 0.0,
    }
