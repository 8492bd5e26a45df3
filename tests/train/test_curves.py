"""learning_curves.png: the warm start, error bars on the held-out points, labelled axes, a title that fits,
and the mechanisms' own curves."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

from evolver_train.curves import learning_curves_figure, plot_learning_curves  # noqa: E402

TITLE = ("evolver/WebShop-v0(goals=synthetic, max_steps=8, num_products=600, split_scheme=product), "
         "mechanisms: questioning, navigation, attribution")
BEFORE = {"success_rate": 0.345, "success_rate_ci95": [0.307, 0.384], "score": 0.61}
AFTER = {"success_rate": 0.352, "success_rate_ci95": [0.314, 0.392], "score": 0.63}
SFT = [{"step": s, "loss": 3.0 / s} for s in range(100, 1841, 100)]


def _history(keys=("tasks/synthetic_rate", "exp/injection_rate", "exp/pool_size", "attr/good_rate_success",
                   "attr/good_rate_failure", "entropy", "env/invalid_action_rate")):
    return [{"step": s, "env/success_rate": 0.3 + s / 100, "env/score_mean": 0.6, **{k: 0.5 for k in keys}}
            for s in range(1, 21)]


def _by_title(fig):
    return {ax.get_title(): ax for ax in fig.axes}


def test_every_part_of_the_run_is_drawn_and_labelled():
    fig = learning_curves_figure(_history(), before=BEFORE, after=AFTER, title=TITLE, warm_start=SFT)
    try:
        axes = _by_title(fig)
        assert set(axes) == {"warm start: supervised fine-tuning", "GRPO: success rate", "GRPO: score",
                             "self-questioning", "self-navigating: injection", "self-navigating: experience pool",
                             "self-attributing", "policy"}
        for ax in fig.axes:  # every axis says what it shows
            assert ax.get_xlabel() and ax.get_ylabel()
        assert axes["warm start: supervised fine-tuning"].get_xlabel() == "warm-start (SFT) step"
        # the held-out points carry their 95% intervals
        bars = [c for c in axes["GRPO: success rate"].containers if isinstance(c, ErrorbarContainer)]
        assert len(bars) == 2
        (_, caps, _) = bars[0].lines
        assert sorted(round(float(c.get_ydata()[0]), 3) for c in caps) == [0.307, 0.384]
        labels = axes["GRPO: success rate"].get_legend_handles_labels()[1]
        assert "training rollouts (train + synthesised tasks)" in labels and "held-out, before RL (95% CI)" in labels
        assert axes["self-attributing"].get_legend_handles_labels()[1] == ["in successful episodes",
                                                                          "in failed episodes"]
        # the title is wrapped inside the figure: nothing clipped on either side
        fig.canvas.draw()
        box, frame = fig._suptitle.get_window_extent(), fig.bbox
        assert box.x0 >= frame.x0 and box.x1 <= frame.x1 and "\n" not in fig._suptitle.get_text()[:10]
    finally:
        plt.close(fig)


def test_panels_follow_what_the_run_logged():
    fig = learning_curves_figure(_history(keys=("entropy",)), title="x" * 400)
    try:
        assert set(_by_title(fig)) == {"GRPO: success rate", "GRPO: score", "policy"}
        fig.canvas.draw()
        box, frame = fig._suptitle.get_window_extent(), fig.bbox
        assert box.x0 >= frame.x0 and box.x1 <= frame.x1  # a title longer than the figure wraps
    finally:
        plt.close(fig)


def test_the_png_finds_the_warm_start_evolver_train_wrote(tmp_path):
    (tmp_path / "sft").mkdir()
    (tmp_path / "sft" / "sft_config.json").write_text(json.dumps({"log_history": SFT}))
    png = plot_learning_curves(_history(), tmp_path / "learning_curves.png", before=BEFORE, after=AFTER, title=TITLE)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    height, width, _ = matplotlib.image.imread(png).shape
    assert width == 1380 and height == 1170  # 3 columns: the warm start, success, score; 2 rows of mechanisms
    # no mechanism metrics: one row; the warm start found next to the PNG adds a third column, False drops it
    found = plot_learning_curves(_history(keys=()), tmp_path / "found.png")
    dropped = plot_learning_curves(_history(keys=()), tmp_path / "dropped.png", warm_start=False)
    assert matplotlib.image.imread(found).shape[:2] == (390, 1380)
    assert matplotlib.image.imread(dropped).shape[:2] == (390, 920)
