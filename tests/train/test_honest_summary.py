"""``benchmarks/honest_split.py --over-seeds``: reports summarised over seeds, only when comparable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def honest(load_benchmark):
    return load_benchmark("honest_split")


def _report(folder: Path, successes: int, n: int = 100, fingerprint: str = "abc") -> None:
    folder.mkdir(parents=True)
    dev = {"num_episodes": n, "success_rate": successes / n, "sample": {"fingerprint": fingerprint}}
    (folder / "report.json").write_text(json.dumps({"dev": dev}))


def test_rows_and_paired_differences_over_seeds(honest, tmp_path):
    for seed, (rl, base) in enumerate([(12, 10), (9, 10), (15, 10)]):
        _report(tmp_path / f"rl{seed}", rl)
        _report(tmp_path / f"base{seed}", base)
    table = honest.over_seeds([f"rl={tmp_path}/rl{{seed}}", f"base={tmp_path}/base{{seed}}"], [0, 1, 2], "base")
    assert "| rl | 12.0 | 9.0 | 15.0 | 12.0 [" in table  # per-seed and mean of the per-seed means
    assert "| base | 10.0 | 10.0 | 10.0 | 10.0 [10.0, 10.0] |" in table  # no spread over seeds
    # per-seed differences +2, -1, +5: mean +2, t(2) interval 2 +- 4.303 * 3 / sqrt(3)
    assert "| rl − base | +2.0 | -1.0 | +5.0 | +2.0 [-5.5, +9.5] |" in table


def test_reports_of_other_episodes_are_refused(honest, tmp_path):
    _report(tmp_path / "a0", 5)
    _report(tmp_path / "b0", 5, fingerprint="other")
    with pytest.raises(SystemExit, match="not comparable"):
        honest.over_seeds([f"a={tmp_path}/a{{seed}}", f"b={tmp_path}/b{{seed}}"], [0], None)
    with pytest.raises(SystemExit, match="LABEL=FOLDER"):
        honest.over_seeds([f"{tmp_path}/a{{seed}}"], [0], None)
    with pytest.raises(SystemExit, match="'nope'"):
        honest.over_seeds([f"a={tmp_path}/a{{seed}}"], [0], "nope")


def test_purchase_breakdown_counts_what_each_purchase_missed(honest):
    import gymnasium as gym

    import evolver_gym  # noqa: F401 - registers the environment ids

    counts = honest.PurchaseBreakdown.new_counts()
    env = honest.PurchaseBreakdown(gym.make("evolver/WebShop-v0", num_products=200, max_steps=8,
                                            goals="synthetic"), counts)
    tasks = env.unwrapped.tasks("dev")[:3]
    plans = [env.unwrapped.oracle(t) for t in tasks]
    assert all(t.goal["goal_options"] for t in tasks)
    for task, plan in zip(tasks[:2], [plans[0], plans[1][:2] + plans[1][-1:]]):  # the oracle; no option chosen
        env.reset(options={"task": task})
        for action in plan:
            env.step(action)
    env.reset(options={"task": tasks[2]})  # cut before buying
    env.step(plans[2][0])
    assert counts == {"episodes": 3, "successes": 1, "not_bought": 1, "purchases": 2, "purchases_wrong_type": 0,
                      "purchases_with_options_asked": 2, "purchases_missing_option": 1,
                      "purchases_missing_attribute": 0, "purchases_over_price": 0}


def test_copy_count_splits_the_first_searchs_words_by_whether_a_train_goal_uses_them(honest):
    import gymnasium as gym

    import evolver_gym  # noqa: F401 - registers the environment ids

    counts = honest.CopyCount.new_counts()
    env = honest.CopyCount(gym.make("evolver/WebShop-v0", num_products=200, max_steps=8, goals="synthetic"),
                           counts, train_words={"red", "shoes", "find"})
    task = env.unwrapped.tasks("dev")[0]
    _, info = env.reset(options={"task": task})
    instruction = honest.words(info["instruction"])
    used = instruction & {"red", "shoes", "find"}
    assert used and instruction - used
    env.step(f"search[{info['instruction'].lower()}]")  # the oracle's query: every word kept
    env.step("search[red shoes]")  # a second search is not counted
    assert counts["searches"] == 2 and counts["searches_repeating_the_instruction"] == 1
    assert counts["first_search_words_train_goals_use"] == counts["of_which_kept"] == len(used)
    assert counts["first_search_words_no_train_goal_uses"] == counts["of_which_kept_unused"] == len(instruction - used)
    env.reset(options={"task": task})
    env.step("search[find]")  # keeps one train word, no other
    assert counts["of_which_kept"] == len(used) + 1
    assert counts["of_which_kept_unused"] == len(instruction - used)  # unchanged
    assert counts["first_search_words_no_train_goal_uses"] == 2 * len(instruction - used)


def test_the_script_registers_the_environments_it_makes():
    """Its --copying and --failures paths make the shop before anything else imports evolver_gym."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "honest_split.py"
    code = (f"import runpy, gymnasium as gym; runpy.run_path({str(script)!r}, run_name='probe'); "
            "gym.make('evolver/WebShop-v0', num_products=20).close()")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
