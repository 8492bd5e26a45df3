"""Learning curves of a training run as a PNG (matplotlib, Agg backend: no display needed).

* ``plot_learning_curves`` - training success rate and score per step (raw and smoothed), with the
  held-out evaluation before and after training marked, from a trainer's ``log_history``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot_learning_curves"]


def _series(history: Sequence[dict[str, Any]], key: str) -> tuple[list[float], list[float]]:
    steps, values = [], []
    for row in history:
        if key in row and "step" in row:
            steps.append(float(row["step"]))
            values.append(float(row[key]))
    return steps, values


def _smooth(values: list[float], window: int) -> list[float]:
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= window:
            acc -= values[i - window]
        out.append(acc / min(i + 1, window))
    return out


def plot_learning_curves(history: Sequence[dict[str, Any]], path: str | Path, *, before: dict[str, float] | None = None,
                         after: dict[str, float] | None = None, title: str = "") -> Path:
    """Write ``path`` (PNG): ``env/success_rate`` and ``env/score_mean`` per training step.

    ``history`` rows are ``{"step": int, "env/success_rate": float, ...}`` (a trainer's
    ``state.log_history`` with the step folded in); ``before``/``after`` are held-out evaluations
    (``success_rate``, ``score``) drawn as points at the first and last step.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for ax, key, eval_key, label in ((axes[0], "env/success_rate", "success_rate", "success rate"),
                                     (axes[1], "env/score_mean", "score", "score")):
        steps, values = _series(history, key)
        if steps:
            ax.plot(steps, values, color="tab:blue", alpha=0.3, label="training episodes")
            ax.plot(steps, _smooth(values, max(1, len(values) // 10)), color="tab:blue", label="smoothed")
        last = steps[-1] if steps else 1.0
        for point, x, colour, name in ((before, 0.0, "tab:orange", "held-out, before RL"),
                                       (after, last, "tab:green", "held-out, after RL")):
            if point and eval_key in point:
                ax.scatter([x], [point[eval_key]], color=colour, s=60, zorder=3, label=name)
        ax.set_xlabel("training step")
        ax.set_ylabel(label)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
