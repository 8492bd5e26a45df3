"""The scenario templates over the generated world's facts (no apps needed: the facts are a fixture).

``world_seed0.json`` is what ``_server.build_world(0, ...)`` returns (our generator's names and
content, not AppWorld's data); ``test_env.py`` checks that a fresh build gives the same facts.
"""

import json
from collections import Counter
from pathlib import Path

import pytest

from evolver_gym.appworld_apps.tasks import (
    SPLIT_SCHEMES,
    SPLITS,
    TEMPLATES,
    all_specs,
    build_tasks,
    held_out_apps,
    task_apps,
)

WORLD = json.loads((Path(__file__).parent / "world_seed0.json").read_text())
USER_APPS = {"amazon", "file_system", "gmail", "phone", "simple_note", "splitwise", "spotify", "todoist", "venmo"}


def _all(scheme="goal"):
    return [t for s in SPLITS for t in build_tasks(WORLD, s, scheme)]


def test_templates_cover_every_app_every_level_and_cross_app():
    assert len(TEMPLATES) >= 90
    assert set().union(*(t.apps for t in TEMPLATES.values())) == USER_APPS
    assert {t.difficulty for t in TEMPLATES.values()} == {1, 2, 3}
    cross = [t for t in TEMPLATES.values() if len(t.apps) > 1]
    assert len(cross) >= 10
    assert all(t.difficulty >= 2 for t in cross)


@pytest.mark.parametrize("scheme", SPLIT_SCHEMES)
def test_splits_partition_the_tasks(scheme):
    tasks = _all(scheme)
    assert len(tasks) == len(all_specs(WORLD)) >= 550
    ids = [t.task_id for t in tasks]
    assert len(set(ids)) == len(ids)
    per_split = Counter(t.split for t in tasks)
    assert all(per_split[s] > 0 for s in SPLITS), per_split
    challenge = {t.task_id for t in tasks if t.split == "test_challenge"}
    assert challenge == {t.task_id for t in tasks if "gmail" in t.goal["apps"]}  # an app unseen in training
    if scheme == "scenario":  # whole templates held out: no template in two of train/dev/test_normal
        homes = {}
        for t in tasks:
            homes.setdefault(t.goal["scenario"], set()).add(t.split)
        assert all(len(v) == 1 for v in homes.values())


def test_every_task_can_fail_and_checks_collateral():
    for t in _all():
        kinds = [x["kind"] for x in t.goal["tests"]]
        assert any(x["label"] == "no_op_fail" for x in t.goal["tests"]), t.task_id
        assert kinds[-1] == "no_collateral", t.task_id
        assert t.reference and "apis.supervisor.complete_task(" in t.reference[-1], t.task_id
        assert t.difficulty in (1, 2, 3)
        assert "reference" not in t.public()


def test_references_use_appworld_login_and_real_app_names():
    for t in _all():
        code = "\n".join(t.reference)
        assert "apis.supervisor.show_account_passwords()" in code
        for app in t.goal["apps"]:
            assert f"apis.{app}.login(" in code, (t.task_id, app)


def test_tasks_are_deterministic_and_compile():
    a, b = _all(), _all()
    assert [t.to_dict() for t in a] == [t.to_dict() for t in b]
    for t in a:
        for cell in t.reference:
            compile(cell, t.task_id, "exec")


def test_bad_split_names_the_value():
    with pytest.raises(ValueError, match="'nope'"):
        build_tasks(WORLD, "nope")
    with pytest.raises(ValueError, match="'bogus'"):
        build_tasks(WORLD, "train", "bogus")


def test_app_split_holds_out_whole_apps():
    held = held_out_apps(WORLD, "app")
    # seed 0's draw, as docs/appworld-apps.md states it
    assert held == {"dev": ["venmo"], "test_normal": ["splitwise", "todoist"], "test_challenge": ["gmail"]}
    tasks = {s: build_tasks(WORLD, s, "app") for s in SPLITS}
    sizes = {s: len(v) for s, v in tasks.items()}
    assert sizes == {"train": 457, "dev": 127, "test_normal": 179, "test_challenge": 110}
    every = set().union(*held.values())
    for t in tasks["train"]:
        assert not task_apps(t) & every, (t.task_id, task_apps(t))
        assert not any(f"apis.{app}." in cell for app in every for cell in t.reference), t.task_id
    assert all(task_apps(t) & set(held["dev"]) and not task_apps(t) & {"gmail", *held["test_normal"]}
               for t in tasks["dev"])
    assert all(task_apps(t) & set(held["test_normal"]) and "gmail" not in task_apps(t) for t in tasks["test_normal"])
    assert all("gmail" in task_apps(t) for t in tasks["test_challenge"])
    # a reference that reads another app counts: todoist_overdue_count asks phone for the date
    overdue = next(t for s in tasks.values() for t in s if t.goal["scenario"] == "todoist_overdue_count")
    assert task_apps(overdue) == {"todoist", "phone"}


def test_app_split_is_drawn_from_the_seed_and_deterministic():
    assert held_out_apps(WORLD, "app") == held_out_apps(json.loads(json.dumps(WORLD)), "app")
    draws = {json.dumps(held_out_apps({**WORLD, "seed": seed}, "app"), sort_keys=True) for seed in range(4)}
    assert len(draws) > 1
    for seed in range(4):
        held = held_out_apps({**WORLD, "seed": seed}, "app")
        assert held["dev"] and held["test_normal"] and not set(held["dev"]) & set(held["test_normal"])
        assert "gmail" not in held["dev"] + held["test_normal"]
    assert held_out_apps(WORLD, "goal") == held_out_apps(WORLD, "scenario") == {
        "dev": [], "test_normal": [], "test_challenge": ["gmail"]}
    with pytest.raises(ValueError, match="'apps'"):
        held_out_apps(WORLD, "apps")
