"""Split schemes on AppWorld: whole scenario templates held out; the old split unchanged; the leakage
interface (same target, a reference that solves a protected task)."""

from __future__ import annotations

import hashlib
import json

import pytest

from evolver_gym.appworld.env import AppWorldEnv
from evolver_gym.appworld.tasks import SPLITS, build_tasks, split_table
from wrappers.questioning import LeakageGuard

SPLIT_NAMES = ("train", "dev", "test_normal", "test_challenge")


def _templates(tasks):
    return {t.goal["scenario"] for t in tasks}


def test_goal_scheme_is_the_old_split():
    # Fingerprints of every task (ids, instructions, goals, references), recorded before schemes existed.
    expected = {"train": "25523595703b10d4", "dev": "43b4b4c2e359abe3", "test_normal": "50c07107945366b7",
                "test_challenge": "1e61025329b22d1d"}
    got = {s: hashlib.sha256(json.dumps([t.to_dict() for t in build_tasks(s, 0, "goal")], sort_keys=True,
                                        default=str).encode()).hexdigest()[:16] for s in SPLIT_NAMES}
    assert got == expected and split_table("goal") is SPLITS
    # The old split shares every dev and test_normal template with train; that is what the new scheme fixes.
    assert _templates(build_tasks("dev", 0)) <= _templates(build_tasks("train", 0))


@pytest.mark.parametrize("seed", [0, 1])
def test_scenario_scheme_holds_templates_out_of_train(seed):
    tasks = {s: build_tasks(s, seed, "scenario") for s in SPLIT_NAMES}
    train = _templates(tasks["train"])
    assert train and not train & (_templates(tasks["dev"]) | _templates(tasks["test_normal"]))
    assert not _templates(tasks["dev"]) & _templates(tasks["test_normal"])
    assert tasks["test_challenge"] == build_tasks("test_challenge", seed, "goal")
    assert [len(tasks[s]) for s in SPLIT_NAMES] == [48, 24, 48, 24]
    ids = [t.task_id for s in SPLIT_NAMES for t in tasks[s]]
    assert len(set(ids)) == len(ids)
    # Deterministic from the seed; another seed holds out other templates.
    assert [t.to_dict() for t in tasks["dev"]] == [t.to_dict() for t in build_tasks("dev", seed, "scenario")]
    assert _templates(build_tasks("dev", 1 - seed, "scenario")) != _templates(tasks["dev"])


def test_env_selects_the_scheme_and_held_out_tasks_are_solvable():
    env = AppWorldEnv(split="dev", split_scheme="scenario")
    try:
        assert env.profile()["split_scheme"] == "scenario"
        dev = env.tasks()
        assert not _templates(dev) & _templates(env.tasks("train"))
        for task in dev[::3]:  # one task of each held-out scenario: its reference passes its tests
            env.reset(options={"task": task})
            for cell in task.reference:
                *_, term, trunc, info = env.step(cell)
            assert term and info["success"], (task.task_id, info["evaluation"]["failures"])
        # A scenario-scheme id resolves in an env of the old scheme (ids are the same task everywhere).
        _, info = AppWorldEnv().reset(options={"task_id": dev[0].task_id})
        assert info["instruction"] == dev[0].instruction
        with pytest.raises(ValueError, match="split_scheme must be one of .*'template'"):
            AppWorldEnv(split_scheme="template")
    finally:
        env.close()


def test_leakage_interface_finds_recreated_targets():
    env = AppWorldEnv(split_scheme="scenario")
    try:
        dev = env.tasks("dev")
        train = env.tasks("train")
        target = next(t for t in dev if any(x["kind"] in ("added", "updated", "removed") for x in t.goal["tests"]))
        # Same checks, reworded: the same target.
        reworded_tests = [{**x, "requirement": "?"} for x in target.goal["tests"]]
        reworded = target.derive(instruction="something else entirely", proposer="test", reference=target.reference,
                                 goal={**target.goal, "tests": reworded_tests})
        # A train-parented task whose reference is the dev task's solution: it teaches that solution.
        copied = train[0].derive(instruction="do the thing", goal=dict(train[0].goal), reference=target.reference,
                                 proposer="test")
        honest = train[0].derive(instruction="do the train thing", goal=dict(train[0].goal),
                                 reference=train[0].reference, proposer="test")
        assert env.target_key(reworded) == env.target_key(target) != env.target_key(copied)
        assert env.solves(copied, target) and not env.solves(honest, target)
        assert env.split_unit(target) == target.goal["scenario"] and env.split_unit(honest) not in _templates(dev)
        guard = LeakageGuard(dev, env=env)
        assert guard.near([reworded, copied, honest]) == [
            "same target as a dev/test task", "its reference solves a dev/test task", None]
        assert LeakageGuard(dev).near([copied, honest]) == [None, None]  # text alone sees nothing
    finally:
        env.close()
