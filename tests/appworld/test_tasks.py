"""Scenarios and evaluation: split sizes, determinism, TGC = 100% for references, perturbations fail."""

from __future__ import annotations

import pytest

from evolver_gym.appworld.apis import REGISTRY
from evolver_gym.appworld.apps import HELD_OUT_APPS
from evolver_gym.appworld.env import AppWorldEnv
from evolver_gym.appworld.evaluation import compute_metrics
from evolver_gym.appworld.tasks import MISSED_PAGE_PREAMBLE, SPLITS, build_tasks
from evolver_gym.appworld.world import generate_world

SPLIT_NAMES = ("train", "dev", "test_normal", "test_challenge")


@pytest.fixture(scope="module")
def env():
    e = AppWorldEnv()
    yield e
    e.close()


def run(env, task, actions):
    env.reset(options={"task": task})
    info = {}
    for a in actions:
        *_, term, trunc, info = env.step(a)
        if term or trunc:
            break
    if "success" not in info:  # the solution stopped before completing the task: judge the state anyway
        info = {**info, "evaluation": env.evaluate()}
        info["success"] = info["evaluation"]["success"]
    return info


def test_world_is_deterministic_and_large_enough():
    a, b = generate_world(0), generate_world(0)
    assert a.people == b.people and a.rows == b.rows and a.now == b.now
    assert generate_world(1).rows != a.rows
    assert sum(len(specs) for specs in REGISTRY.values()) >= 100
    assert len([app for app in REGISTRY if app not in ("api_docs", "supervisor")]) >= 6


def test_splits_scenarios_and_determinism():
    scenarios = 0
    for split in SPLIT_NAMES:
        tasks = build_tasks(split, 0)
        assert len(tasks) == 3 * len(SPLITS[split])
        assert [t.to_dict() for t in tasks] == [t.to_dict() for t in build_tasks(split, 0)]
        ids = [t.task_id for t in tasks]
        assert len(set(ids)) == len(ids) and all(i.rsplit("_", 1)[1] in "123" for i in ids)
        scenarios += len(SPLITS[split])
        for t in tasks:
            assert t.difficulty in (1, 2, 3) and t.reference and t.goal["tests"]
            assert {x["label"] for x in t.goal["tests"]} <= {"no_op_pass", "no_op_fail"}
            uses_mail = "mail" in t.metadata["apps"]
            assert uses_mail == (split == "test_challenge")  # the held-out app only in the challenge split
    assert scenarios >= 40
    assert HELD_OUT_APPS == ("mail",)
    levels = {t.difficulty for s in SPLIT_NAMES for t in build_tasks(s, 0)}
    assert levels == {1, 2, 3}


def test_reference_passes_dev_and_challenge(env):
    results = []
    for split in ("dev", "test_challenge"):
        for task in env.tasks(split):
            info = run(env, task, env.oracle(task))
            assert info["success"], (task.task_id, info["evaluation"]["failures"])
            results.append({"task_id": task.task_id, "success": True, "difficulty": task.difficulty})
    m = compute_metrics(results)
    assert m["overall"]["task_goal_completion"] == 100.0 and m["overall"]["scenario_goal_completion"] == 100.0


@pytest.mark.slow
@pytest.mark.parametrize("split", SPLIT_NAMES)
def test_reference_tgc_is_100_on_every_split(env, split):
    results = []
    for task in env.tasks(split):
        info = run(env, task, env.oracle(task))
        results.append({"task_id": task.task_id, "success": info["success"], "difficulty": task.difficulty})
    assert compute_metrics(results)["overall"]["task_goal_completion"] == 100.0


def _perturbed(task, kind):
    code = task.metadata["perturbations"][kind]
    return [MISSED_PAGE_PREAMBLE, task.reference[1]] if kind == "missed_page" else [task.reference[0], code]


def test_one_perturbation_of_each_kind_fails(env):
    seen = set()
    for task in env.tasks("train") + env.tasks("test_challenge"):
        for kind in task.metadata["perturbations"]:
            if kind in seen:
                continue
            seen.add(kind)
            info = run(env, task, _perturbed(task, kind))
            assert not info["success"], (kind, task.task_id)
            assert run(env, task, env.oracle(task))["success"]
    assert seen == {"wrong_person", "off_by_one", "missed_page"}


@pytest.mark.slow
def test_every_perturbation_fails(env):
    n = 0
    for split in SPLIT_NAMES:
        for task in env.tasks(split):
            for kind in task.metadata["perturbations"]:
                assert not run(env, task, _perturbed(task, kind))["success"], (kind, task.task_id)
                n += 1
    assert n >= 100


def test_metrics_follow_appworld():
    results = [
        {"task_id": "s1_1", "success": True, "difficulty": 1},
        {"task_id": "s1_2", "success": True, "difficulty": 1},
        {"task_id": "s1_3", "success": False, "difficulty": 1},
        {"task_id": "s2_1", "success": True, "difficulty": 3},
        {"task_id": "s2_2", "success": True, "difficulty": 3},
        {"task_id": "s2_3", "success": True, "difficulty": 3},
    ]
    m = compute_metrics(results)
    assert m["overall"] == {
        "num_tasks": 6,
        "num_scenarios": 2,
        "task_goal_completion": 83.33,
        "scenario_goal_completion": 50.0,
    }
    assert (
        m["difficulty_1"]["scenario_goal_completion"] == 0.0
        and m["difficulty_3"]["task_goal_completion"] == 100.0
    )
    assert m["difficulty_2"]["num_tasks"] == 0


def test_partial_solution_gets_partial_progress_and_fails(env):
    task = next(t for t in env.tasks("train") if t.metadata["template"] == "split_bill")
    code = task.reference[1].replace("for name in [", "for name in [").split("apis.supervisor")[0]
    names = code.split("for name in ")[1].split("]")[0] + "]"
    first_only = code.replace(names, names.split(",")[0] + "]")
    info = run(env, task, [task.reference[0], first_only, "apis.supervisor.complete_task()"])
    assert not info["success"] and 0 < info["evaluation"]["pass_share"] < 1
    assert 0 < info["progress"] < 1
