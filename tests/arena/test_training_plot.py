"""The arena training plot: one readable, non-overlapping label per pairing, whatever their number."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("torch")  # arena.train is the learning side: the 'train' extra

from arena.train import training_figure, write_plot  # noqa: E402

ENTRANTS = ["learner@60", "learner@50", "league@40", "rule", "random", "llm:qwen2.5-7b-instruct@localhost"]


def _report(n_good: int) -> dict:
    rows = []
    for good, evil in itertools.product(ENTRANTS[:n_good], ["rule", "random", "learner@60"]):
        rate = (len(rows) * 0.37) % 1.0
        rows.append({"good": good, "evil": evil, "good_win_rate": rate, "games": 500,
                     "ci95": [max(rate - 0.05, 0.0), min(rate + 0.05, 1.0)]})
    return {"evaluation": rows,
            "elo_history": [{"step": s, "elo": {"learner": 1500 + s, "rule": 1500}} for s in (10, 20, 30)]}


@pytest.mark.parametrize("n_good", [1, 4, 6])
def test_pairing_labels_never_overlap_and_each_bar_shows_its_rate(n_good):
    report = _report(n_good)
    fig = training_figure(report)
    try:
        fig.canvas.draw()
        ax = fig.axes[1]
        ticks = [t for t in ax.get_yticklabels() if t.get_text()]
        assert [t.get_text() for t in ticks] == [f"{r['good']} vs {r['evil']}" for r in report["evaluation"]]
        boxes = [t.get_window_extent() for t in ticks]
        for a, b in itertools.combinations(boxes, 2):
            assert not a.overlaps(b)
        assert all(box.x0 >= 0 for box in boxes)  # inside the figure on the left
        texts = sorted(t.get_text() for t in ax.texts)
        assert texts == sorted(f"{r['good_win_rate']:.2f}" for r in report["evaluation"])
        assert ax.get_xlabel() and ax.get_ylabel() and fig.axes[0].get_xlabel() and fig.axes[0].get_ylabel()
    finally:
        plt.close(fig)


def test_write_plot_saves_the_figure(tmp_path):
    assert write_plot(_report(2), tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"
