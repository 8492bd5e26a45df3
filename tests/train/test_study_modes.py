"""The learning benchmark's modes are the recipe with one thing changed: what each mode runs, checked on
the configs it builds (``benchmarks/learning_webshop.py``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def study(load_benchmark):
    return load_benchmark("learning_webshop")


def _args(recipe_args: str = "") -> argparse.Namespace:
    return argparse.Namespace(steps=3, tasks_per_step=0, group=8, recipe_args=recipe_args)


def test_each_mode_changes_only_what_it_names(study, tmp_path):
    configs = {mode: study._config(mode, _args(), 0, tmp_path / mode, "tiny") for mode in study.MODES}
    assert configs["overall"].train.wrappers == ["questioning", "navigation", "attribution"]
    assert configs["basic"].train.wrappers == [] and configs["basic"].train.gigpo_omega == 0.0
    assert configs["gigpo"].train.wrappers == [] and configs["gigpo"].train.gigpo_omega == 1.0
    oracle, rules = configs["attribution"].mechanisms["attribution"], configs["attribution_rules"].mechanisms[
        "attribution"]
    assert (oracle.attributor, rules.attributor) == ("oracle", "rules")
    assert rules.attribution_alpha == oracle.attribution_alpha > 0  # the same ADCA weight, other labels
    for mode in ("questioning", "navigation", "attribution"):
        assert configs[mode].train.wrappers == [mode]
    keep, strip = configs["navigation"].mechanisms["navigation"], configs["navigation_strip"].mechanisms["navigation"]
    assert configs["navigation_strip"].train.wrappers == ["navigation"]
    assert (keep.experience_mode, strip.experience_mode) == ("keep", "strip")
    assert dataclasses.replace(strip, experience_mode="keep") == keep  # nothing else changes
    # the same budget and rollout settings everywhere
    assert {(c.train.max_steps, c.train.learning_rate, c.train.max_turns, c.train.num_generations)
            for c in configs.values()} == {(3, configs["basic"].train.learning_rate, 8, 8)}


def test_recipe_args_reach_every_mode(study, tmp_path):
    shop = {"num_products": 200, "max_steps": 15, "goals": "synthetic", "split_scheme": "product",
            "sponsored_results": 10}
    extra = f"--env-kwargs '{json.dumps(shop)}' --max-turns 15 --max-episode-tokens 1024"
    for mode in ("basic", "attribution_rules", "gigpo"):
        train = study._config(mode, _args(extra), 0, tmp_path / mode, "tiny").train
        assert train.env_kwargs == shop and (train.max_turns, train.max_episode_tokens) == (15, 1024)


def _budget_args(**changes) -> argparse.Namespace:
    base = dict(steps=3, eval_every=1, eval_episodes=4, sft_steps=5, sft_demos=8, tasks_per_step=0, group=8,
                recipe_args="", title="")
    return argparse.Namespace(**{**base, **changes})


def test_a_finished_run_is_reused_only_under_the_same_budget(study, tmp_path, monkeypatch):
    trained: list[tuple[str, int]] = []

    def run(mode, args, seed, sft_dir, folder):  # stands in for a GRPO run: here only the bookkeeping is tested
        trained.append((mode, args.steps))
        return {"curve": [{"step": args.steps, "success_rate": 0.5}], "train_seconds": 1.0}

    monkeypatch.setattr(study, "_run", run)
    record = tmp_path / "records" / "seed0" / "basic.json"
    first = study._run_or_reuse("basic", _budget_args(), 0, "sft", tmp_path, record)
    assert trained == [("basic", 3)] and first["code"]  # the commit it ran from travels with the result
    again = study._run_or_reuse("basic", _budget_args(), 0, "sft", tmp_path, record)
    assert trained == [("basic", 3)] and again == first  # reused, not trained again
    study._run_or_reuse("basic", _budget_args(steps=4), 0, "sft", tmp_path, record)
    assert trained == [("basic", 3), ("basic", 4)]  # another budget: run again, and recorded in its place
    assert study._saved(record, study._budget(_budget_args(steps=4))) is not None
    assert study._saved(record, study._budget(_budget_args())) is None
    assert len(record.read_text().splitlines()) == 1  # compact: a record is committed next to its table


def test_a_study_whose_runs_are_all_recorded_trains_nothing(study, tmp_path, monkeypatch):
    def never(*args):
        raise AssertionError("trained although every run is recorded")

    monkeypatch.setattr(study, "_warm_start", never)
    monkeypatch.setattr(study, "_run", never)
    argv = ["--seeds", "2", "--steps", "20", "--eval-every", "20", "--eval-episodes", "4", "--modes",
            "basic,attribution", "--out-dir", str(tmp_path / "out"), "--results", str(tmp_path / "table.md")]
    budget = study._budget(argparse.Namespace(steps=20, eval_every=20, eval_episodes=4, sft_steps=0, sft_demos=0,
                                              tasks_per_step=0, group=8, recipe_args=""))
    for seed in (0, 1):  # the default records folder: next to the table
        for mode in ("basic", "attribution"):
            study._save(tmp_path / "table_runs" / f"seed{seed}" / f"{mode}.json", budget,
                        _finished({0: [1, 0, 0, 0], 20: [1, 1, 0, 0]}, {}))
    assert study.main(argv) == 0
    table = (tmp_path / "table.md").read_text()
    assert "Seeds [0, 1]" in table and "| +attributing |" in table and (tmp_path / "table.png").exists()


def test_an_unfinished_or_unreadable_result_is_not_reused(study, tmp_path):
    budget = study._budget(_budget_args())
    assert study._saved(tmp_path / "missing.json", budget) is None
    (tmp_path / "cut.json").write_text('{"budget": ')  # a write killed half way
    assert study._saved(tmp_path / "cut.json", budget) is None
    # the warm start's marker keys only what shapes the warm start: the GRPO budget may change around it
    assert study._budget(_budget_args(steps=60), warm_start=True) == study._budget(_budget_args(), warm_start=True)


def test_seeds_are_a_count_or_a_list_and_never_none(study, monkeypatch, tmp_path):
    def first_warm_start(args, seed, folder):  # stops the study at the first seed it would train
        raise RuntimeError(f"seed {seed}")

    monkeypatch.setattr(study, "_warm_start", first_warm_start)
    for value, first in (("2", 0), ("2,", 2), ("1,0", 1)):
        with pytest.raises(RuntimeError, match=f"seed {first}"):
            study.main(["--seeds", value, "--out-dir", str(tmp_path), "--results", str(tmp_path / "t.md")])
    for bad in ("0", ",", "a,b"):
        with pytest.raises(SystemExit, match="--seeds"):
            study.main(["--seeds", bad, "--out-dir", str(tmp_path), "--results", str(tmp_path / "t.md")])


@pytest.fixture
def small_synthesis(study, tmp_path, monkeypatch):
    """The recipe with a warm start that synthesises 16 tasks, not 2,000: these tests check the study's
    bookkeeping around a real warm start, not self-questioning (tested in tests/questioning)."""
    import yaml

    recipe = yaml.safe_load(study.RECIPE.read_text())
    recipe["sft"]["synthesize_tasks"] = 16
    small = tmp_path / "recipe" / "quickstart.yaml"
    small.parent.mkdir()
    small.write_text(yaml.safe_dump(recipe))
    monkeypatch.setattr(study, "RECIPE", small)


@pytest.mark.usefixtures("small_synthesis")
def test_an_existing_warm_start_is_used_only_when_trained_the_same_way(study, tmp_path):
    args = _budget_args(sft_steps=2, sft_demos=4, warm_start="")
    trained = study._warm_start(args, 0, tmp_path / "seed0")  # a real (two-step) warm start
    pattern = str(tmp_path / "seed{seed}" / "sft")
    assert study._warm_start(_budget_args(sft_steps=2, sft_demos=4, warm_start=pattern), 0, tmp_path / "x") == trained
    with pytest.raises(SystemExit, match="max_steps=2"):  # another step budget
        study._warm_start(_budget_args(sft_steps=3, sft_demos=4, warm_start=pattern), 0, tmp_path / "x")
    with pytest.raises(SystemExit, match="seed=0"):  # another seed's checkpoint
        study._warm_start(_budget_args(sft_steps=2, sft_demos=4, warm_start=str(trained)), 1, tmp_path / "x")
    with pytest.raises(SystemExit, match="no sft_config.json"):
        study._warm_start(_budget_args(sft_steps=2, sft_demos=4, warm_start=str(tmp_path)), 0, tmp_path / "x")
    assert not (tmp_path / "x").exists()  # a refused checkpoint trains nothing and writes nothing


def test_processes_that_split_a_seed_share_one_warm_start(study, tmp_path, monkeypatch):
    import threading

    import evolver_train.train_cli as train_cli

    trained = []

    def warm_start(run):  # a slow warm start, so that the second caller arrives while the first trains
        trained.append(run.train.seed)
        time.sleep(0.5)
        (Path(run.train.output_dir) / "sft").mkdir()
        (Path(run.train.output_dir) / "sft" / "config.json").write_text("{}")
        return str(Path(run.train.output_dir) / "sft")

    monkeypatch.setattr(train_cli, "run_warm_start", warm_start)
    args, folder, found = _budget_args(warm_start=""), tmp_path / "seed0", []
    callers = [threading.Thread(target=lambda: found.append(study._warm_start(args, 0, folder))) for _ in range(2)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert trained == [0] and found == [str(folder / "sft")] * 2


def _finished(successes_by_step: dict[int, list[int]], metrics: dict[str, float]) -> dict:
    curve = [{"step": s, "success_rate": sum(v) / len(v), "successes": v, "sample": "abc"}
             for s, v in successes_by_step.items()]
    return {"curve": curve, "train_seconds": 60.0, "metrics": metrics, "code": "1234567"}


def test_the_table_says_when_grpo_never_beat_its_warm_start(study, tmp_path):
    start, worse = [1, 1, 0, 0], [1, 0, 0, 0]
    runs = {"basic": {s: _finished({0: start, 20: worse}, {}) for s in (0, 1)},
            "attribution": {s: _finished({0: start, 20: worse}, {"attr/good_rate": 0.25}) for s in (0, 1)}}
    args = argparse.Namespace(**{**vars(_budget_args(steps=20)), "warm_start": "runs/qs_s{seed}/sft"})
    table = study._markdown(study._summarise(runs), args, "cmd", tmp_path / "c.png", [0, 1], "setup")
    assert "The best of basic is its warm start" in table  # steps@.9 is then 0 for every mode and means nothing
    assert "GOOD 0.25" in table and "`runs/qs_s{seed}/sft`" in table and "Code: 1234567." in table
    runs["basic"] = {s: _finished({0: worse, 20: start}, {}) for s in (0, 1)}  # GRPO improved: no such line
    table = study._markdown(study._summarise(runs), args, "cmd", tmp_path / "c.png", [0, 1], "setup")
    assert "The best of basic is its warm start" not in table and "| 20 |" in table


@pytest.mark.usefixtures("small_synthesis")
def test_the_warm_starts_evaluation_is_played_once_per_seed_and_read_back_by_its_other_modes(study, tmp_path, capsys):
    args = _budget_args(steps=1, eval_every=1, eval_episodes=3, sft_steps=2, sft_demos=4, warm_start="",
                        tasks_per_step=1, group=2, recipe_args="--max-turns 2 --max-episode-tokens 120")
    folder = tmp_path / "seed0"
    sft_dir = study._warm_start(args, 0, folder)
    basic = study._run("basic", args, 0, sft_dir, folder)
    assert "read from step0_" not in capsys.readouterr().out  # the first mode plays it
    attribution = study._run("attribution", args, 0, sft_dir, folder)
    assert "read from step0_" in capsys.readouterr().out  # the second reads it back
    assert attribution["curve"][0] == basic["curve"][0] and basic["curve"][0]["step"] == 0
    assert len(basic["curve"][0]["successes"]) == 3 and [p["step"] for p in attribution["curve"]] == [0, 1]
    # Anything the evaluation depends on changes its key: another episode count plays it again.
    study._run("basic", _budget_args(**{**vars(args), "eval_episodes": 2}), 0, sft_dir, folder)
    assert "read from step0_" not in capsys.readouterr().out
    assert len(list(folder.glob("step0_*.json"))) == 2 and not list(folder.glob("*.tmp"))


def test_any_mode_can_be_the_reference_of_the_comparison(study, tmp_path):
    keep, strip = [1, 0, 0, 0], [1, 1, 0, 0]
    runs = {"navigation": {s: _finished({0: keep, 20: keep}, {}) for s in (0, 1)},
            "navigation_strip": {s: _finished({0: keep, 20: strip}, {"clip_ratio/experience_region_mean": 0.125})
                                 for s in (0, 1)}}
    summary = study._summarise(runs, "navigation")
    assert "versus" not in summary["navigation"] and summary["navigation_strip"]["versus"]["difference"] == 0.25
    assert summary["target"] == 0.9 * 0.25 and summary["navigation_strip"]["steps_at_90"] == 0
    table = study._markdown(summary, _budget_args(steps=20, warm_start=""), "cmd", tmp_path / "n.png", [0, 1], "setup")
    assert "keep against strip" in table and "final − +navigating |" in table
    assert "+0.250" in table and "experience rows clipped 0.125" in table
    with pytest.raises(SystemExit, match="--reference must be one of"):
        study.main(["--modes", "basic", "--reference", "navigation", "--out-dir", str(tmp_path)])


def test_the_reference_defaults_to_basic_or_else_the_first_mode_run(study):
    # A study split by --modes (one process per core) must run without naming a reference.
    assert study._parse(["--modes", "attribution,basic"])[0].reference == "basic"
    assert study._parse(["--modes", "attribution_rules,gigpo"])[0].reference == "attribution_rules"
    assert study._parse(["--modes", "gigpo,basic", "--reference", "gigpo"])[0].reference == "gigpo"
    with pytest.raises(SystemExit, match="--modes must name"):  # no mode at all: no first mode either
        study._parse(["--modes", ","])
