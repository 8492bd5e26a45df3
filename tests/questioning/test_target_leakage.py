"""The leakage guard on targets: synthesised WebShop tasks that recreate a dev/test goal are refused.

Hindsight goals are written differently from dataset goals (options as a list, attributes and price
bound resampled), so a text or goal comparison never matches them. The leaks are found here by brute
force, independently of the guard: each synthesised reference is replayed and its purchase scored
against every dev/test goal with the shop's own reward.
"""

from __future__ import annotations

import pytest

from evolver_gym.core import Task
from evolver_gym.webshop import WebShopEnv
from wrappers.questioning import LeakageGuard, SynthesisConfig, TaskPool, build_synthesizer, replay

# The quickstart's shop (configs/quickstart.yaml): synthetic goals, one per option combination.
SHOP = dict(num_products=200, goals="synthetic", max_steps=8)
CONFIG = dict(batch=64, seed=0, max_steps=8, embedding_threshold=None, leakage_cosine=None)


def _protected(env: WebShopEnv) -> list[Task]:
    return env.tasks("dev") + env.tasks("test")


def _leaks(env: WebShopEnv, tasks: list[Task]) -> dict[str, list[str]]:
    """Synthesised task id -> the dev/test task ids its reference's purchase scores 1.0 on."""
    protected = _protected(env)
    out = {}
    for t in tasks:
        traj = replay(env, t, t.reference)
        bought = traj.steps[-1].info["evaluation"]["purchased"]
        hits = [p.task_id for p in protected
                if env.world.reward(p.goal, bought["asin"], bought["options"])[0] == 1.0]
        if hits:
            out[t.task_id] = hits
    return out


@pytest.fixture(scope="module")
def text_guarded():
    """300 tasks synthesised with the text-and-goal guard alone (the guard before target checks)."""
    env = WebShopEnv(**SHOP)
    pool = TaskPool(None)
    synth = build_synthesizer(env, pool, SynthesisConfig(**CONFIG), embedder=None)
    synth.filters = [LeakageGuard(_protected(env)) if f.name == "leakage_guard" else f for f in synth.filters]
    synth.run(300)
    tasks = pool.tasks(origin="synthetic")
    return env, tasks, _leaks(env, tasks)


def test_text_guard_lets_through_tasks_that_recreate_dev_goals(text_guarded):
    env, tasks, leaks = text_guarded
    assert len(tasks) == 300
    same_target = [t for t in tasks if t.task_id in leaks and env.target_key(t) in
                   {env.target_key(p) for p in _protected(env)}]
    # Measured: 18 of 300 references solve a dev/test goal, 5 of them with that goal's product and options.
    assert len(leaks) >= 5 and len(same_target) >= 3
    for t in same_target:  # the goal is written differently, so the old comparison cannot see it
        assert isinstance(t.goal["goal_options"], list)
    old = LeakageGuard(_protected(env)).near([t for t in tasks if t.task_id in leaks])
    assert old == [None] * len(leaks)


def test_target_guard_rejects_every_leak(text_guarded):
    env, tasks, leaks = text_guarded
    guard = LeakageGuard(_protected(env), env=env)
    verdicts = dict(zip([t.task_id for t in tasks], guard.near(tasks), strict=True))
    assert all(verdicts[tid] is not None for tid in leaks), {tid: verdicts[tid] for tid in leaks}
    reasons = {verdicts[tid] for tid in leaks}
    assert reasons <= {"same target as a dev/test task", "its reference solves a dev/test task"}
    # Without the reverse check, tasks whose references solve nothing protected pass.
    assert all(verdicts[t.task_id] is None for t in tasks if t.task_id not in leaks)


def test_synthesis_with_the_default_guard_admits_no_leak():
    env = WebShopEnv(**SHOP)
    pool = TaskPool(None)
    report = build_synthesizer(env, pool, SynthesisConfig(**CONFIG), embedder=None).run(150)
    tasks = pool.tasks(origin="synthetic")
    assert len(tasks) == 150 and _leaks(env, tasks) == {}
    reasons = report["stages"]["leakage_guard"]["reasons"]
    assert reasons.get("its reference solves a dev/test task", 0) + reasons.get("same target as a dev/test task", 0) > 0


def test_reverse_check_refuses_weaker_versions_of_protected_tasks():
    env = WebShopEnv(**SHOP)
    dev = env.tasks("dev")[0]
    # The dev goal's product with one attribute and no options: the dev reference's purchase solves it.
    weaker = dev.derive(instruction=f"i want {dev.goal['query']}", reference=["search[zzz]"], proposer="test",
                        goal={**dev.goal, "attributes": dev.goal["attributes"][:1], "goal_options": [],
                              "asin": env.tasks("train")[0].goal["asin"]})
    assert env.solves(dev, weaker) and not env.solves(weaker, dev)
    assert LeakageGuard([dev], env=env).near([weaker]) == [None]
    assert LeakageGuard([dev], env=env, solved_by_protected=True).near([weaker]) == [
        "a dev/test task's reference solves it"]


def test_held_out_products_are_refused_under_the_product_split():
    env = WebShopEnv(**SHOP, split_scheme="product")
    dev = env.tasks("dev")[0]
    other = next(t for t in env.tasks("dev") if t.goal["goal_options"] != dev.goal["goal_options"]
                 and t.goal["asin"] == dev.goal["asin"])
    # Another option combination of a dev product is not a dev goal, but the product is held out.
    probe = other.derive(instruction="a new wording", goal=dict(other.goal), reference=[], proposer="test")
    assert LeakageGuard([dev], env=env).near([probe]) == ["in a unit the split holds out"]
    assert LeakageGuard([dev], env=WebShopEnv(**SHOP)).near([probe]) == [None]


def test_leakage_targets_setting_picks_the_checks():
    from evolver_gym.appworld.env import AppWorldEnv

    def guard(env, **kw):
        synth = build_synthesizer(env, TaskPool(None), SynthesisConfig(**{**CONFIG, **kw}), embedder=None,
                                  max_seed_tasks=2)
        return next(f for f in synth.filters if f.name == "leakage_guard")

    shop, apps = WebShopEnv(**SHOP), AppWorldEnv()
    try:
        assert guard(shop)._solves is not None and guard(shop).targets
        # AppWorld's solves replays a reference per pair: 'auto' keeps the key checks only.
        assert guard(apps)._solves is None and guard(apps).targets
        assert guard(apps, leakage_targets="all")._solves is not None
        assert guard(shop, leakage_targets="off").env is None
    finally:
        apps.close()
    with pytest.raises(ValueError, match="leakage_targets must be .* got 'yes'"):
        SynthesisConfig(leakage_targets="yes")
