"""Learning curves of a training run as a PNG (matplotlib, Agg backend: no display needed).

* ``plot_learning_curves`` - one figure for the whole run: the warm start's loss, the training rollouts'
  success rate and score per GRPO step (raw and smoothed) with the held-out evaluations before and after
  RL (95% interval as error bars), and one panel per mechanism whose metrics the run logged.
* ``learning_curves_figure`` - the same figure as a matplotlib ``Figure``, not saved.
* ``MECHANISM_PANELS`` - those panels: title, y-axis label and the logged metrics each draws.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["MECHANISM_PANELS", "learning_curves_figure", "plot_learning_curves"]

#: ``(title, y label, [(metric, legend label), ...])`` of the panels drawn below the main ones, each only
#: when the run logged at least one of its metrics (``log_history`` keys of the trainer and the mechanisms).
MECHANISM_PANELS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("self-questioning", "share of rollouts", (("tasks/synthetic_rate", "on a synthesised task"),)),
    ("self-navigating: injection", "share of rollouts", (("exp/injection_rate", "experience injected"),)),
    ("self-navigating: experience pool", "experiences", (("exp/pool_size", "pool size"),)),
    ("self-attributing", "share of steps labelled GOOD", (("attr/good_rate_success", "in successful episodes"),
                                                          ("attr/good_rate_failure", "in failed episodes"))),
    ("policy", "per step / per action", (("entropy", "token entropy (nats)"),
                                         ("env/invalid_action_rate", "invalid action rate"))),
)


def _series(history: Sequence[dict[str, Any]], key: str) -> tuple[list[float], list[float]]:
    steps, values = [], []
    for row in history:
        if key in row and "step" in row and row[key] is not None:
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


def _warm_start_history(warm_start: str | Path | bool | None, png: Path) -> list[dict[str, Any]]:
    """The warm start's ``log_history`` from its ``sft_config.json`` (``None``: ``<png folder>/sft``)."""
    if warm_start is False:
        return []
    folder = png.parent / "sft" if warm_start is None or warm_start is True else Path(warm_start)
    try:
        record = json.loads((folder / "sft_config.json").read_text())
    except (OSError, ValueError):
        return []
    rows = record.get("log_history") if isinstance(record, dict) else None
    return [r for r in rows or [] if isinstance(r, dict) and "step" in r and "loss" in r]


def _held_out(ax: Any, point: dict[str, Any] | None, x: float, key: str, colour: str, name: str) -> None:
    if not point or key not in point:
        return
    y = float(point[key])
    ci = point.get(f"{key}_ci95")
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        err = [[max(y - float(ci[0]), 0.0)], [max(float(ci[1]) - y, 0.0)]]
        ax.errorbar([x], [y], yerr=err, fmt="o", color=colour, ms=7, capsize=5, zorder=3, label=f"{name} (95% CI)")
    else:
        ax.scatter([x], [y], color=colour, s=50, zorder=3, label=name)


def plot_learning_curves(history: Sequence[dict[str, Any]], path: str | Path, *, before: dict[str, Any] | None = None,
                         after: dict[str, Any] | None = None, title: str = "",
                         warm_start: str | Path | bool | None = None) -> Path:
    """Write ``path`` (PNG) and return it.

    Panels: the warm start's loss per SFT step (when there is one); the success rate and the score of the
    training rollouts per GRPO step (on the training tasks, synthesised ones included; raw and smoothed), with
    the held-out evaluations ``before`` and ``after`` RL drawn at the first and last step, the success rate's
    95% interval (``success_rate_ci95``) as an error bar; then one panel per :data:`MECHANISM_PANELS` entry
    whose metrics ``history`` holds.

    Args:
        history: Rows ``{"step": int, "env/success_rate": float, ...}`` (a trainer's ``state.log_history``).
        path: The PNG written (its folder is created).
        before, after: Held-out evaluations (``success_rate``, ``score``, optionally ``success_rate_ci95``).
        title: The figure's title (wrapped to the figure's width).
        warm_start: The warm start's folder (its ``sft_config.json`` records ``log_history``); ``None`` looks
            for ``<path's folder>/sft``, where ``evolver train`` writes it; ``False``: no warm-start panel.

    Example:
        >>> import tempfile
        >>> rows = [{"step": s, "env/success_rate": s / 10, "env/score_mean": s / 10, "entropy": 1 - s / 20}
        ...         for s in range(1, 11)]
        >>> png = plot_learning_curves(rows, tempfile.mkdtemp() + "/curves.png", warm_start=False,
        ...                            before={"success_rate": 0.1, "success_rate_ci95": [0.05, 0.2], "score": 0.3})
        >>> png.stat().st_size > 0
        True
    """
    import matplotlib.pyplot as plt

    path = Path(path)
    fig = learning_curves_figure(history, before=before, after=after, title=title,
                                 warm_start=_warm_start_history(warm_start, path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def learning_curves_figure(history: Sequence[dict[str, Any]], *, before: dict[str, Any] | None = None,
                           after: dict[str, Any] | None = None, title: str = "",
                           warm_start: Sequence[dict[str, Any]] = ()) -> Any:
    """The figure :func:`plot_learning_curves` saves (``warm_start``: the warm start's ``log_history`` rows);
    the caller closes it (``matplotlib.pyplot.close(fig)``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sft = list(warm_start)
    mechanisms = [(name, ylabel, [(k, lab) for k, lab in metrics if _series(history, k)[0]])
                  for name, ylabel, metrics in MECHANISM_PANELS]
    mechanisms = [m for m in mechanisms if m[2]]
    top = (["warm start"] if sft else []) + ["success rate", "score"]
    columns = max(len(top), min(len(mechanisms), 3), 1)
    rows = 1 + -(-len(mechanisms) // columns)
    from matplotlib.ticker import MaxNLocator

    fig = plt.figure(figsize=(4.6 * columns, 3.9 * rows), layout="constrained")
    grid = fig.add_gridspec(rows, columns)

    panel = 0
    if sft:
        ax = fig.add_subplot(grid[0, panel])
        panel += 1
        steps = [float(r["step"]) for r in sft]
        ax.plot(steps, [float(r["loss"]) for r in sft], color="tab:purple", marker=".", label="loss (smoothed)")
        ax.set_title("warm start: supervised fine-tuning", fontsize=10)
        ax.set_xlabel("warm-start (SFT) step")
        ax.set_ylabel("loss on action tokens")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", fontsize=8)
    for key, eval_key, label in (("env/success_rate", "success_rate", "success rate"),
                                 ("env/score_mean", "score", "score")):
        ax = fig.add_subplot(grid[0, panel])
        panel += 1
        steps, values = _series(history, key)
        if steps:
            ax.plot(steps, values, color="tab:blue", alpha=0.3, label="training rollouts (train + synthesised tasks)")
            ax.plot(steps, _smooth(values, max(1, len(values) // 10)), color="tab:blue", label="same, smoothed")
        last = steps[-1] if steps else 1.0
        _held_out(ax, before, 0.0, eval_key, "tab:orange", "held-out, before RL")
        _held_out(ax, after, last, eval_key, "tab:green", "held-out, after RL")
        ax.set_title(f"GRPO: {label}", fontsize=10)
        ax.set_xlabel("GRPO step")
        ax.set_ylabel(f"{label} (0-1)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="best", fontsize=7)
    for i, (name, ylabel, metrics) in enumerate(mechanisms):
        ax = fig.add_subplot(grid[1 + i // columns, i % columns])
        for colour, (key, label) in zip(("tab:red", "tab:cyan", "tab:olive"), metrics):
            steps, values = _series(history, key)
            ax.plot(steps, values, color=colour, marker="." if len(steps) < 40 else None, label=label)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("GRPO step")
        ax.set_ylabel(ylabel)
        if ylabel.startswith("share"):  # rates on the full [0, 1] scale: a constant share is a flat line
            ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="best", fontsize=7)
    if title:
        # Wrapped to the figure's width (about 11 characters an inch at this size), so no side is clipped.
        fig.suptitle("\n".join(textwrap.wrap(title, width=max(40, int(4.6 * columns * 11)))), fontsize=10)
    return fig
