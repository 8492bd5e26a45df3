"""Split schemes: the product and category splits hold their units out of train; the old split is unchanged."""

from __future__ import annotations

import hashlib
import json

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401  (registers the environment ids)
from evolver_gym.webshop import WebShopEnv
from evolver_gym.webshop.catalog import load_catalog
from evolver_gym.webshop.goals import split_goals

SHOPS = [dict(num_products=200, goals="synthetic"), dict(num_products=1000, goals="human")]


def _fingerprint(goals):
    return hashlib.sha256(json.dumps([g["instruction_text"] for g in goals]).encode()).hexdigest()[:16]


@pytest.mark.parametrize("shop, expected", [
    (SHOPS[0], {"test": "8e7a90b4ce936d8a", "dev": "f9191961f16c17ea", "train": "84f3ea0f1329f208"}),
    (SHOPS[1], {"test": "bb78565e4878f491", "dev": "f8ffa57202d148f1", "train": "97a575ca954642eb"}),
])
def test_goal_split_is_the_old_split(shop, expected):
    # Fingerprints of each split's instructions, in order, recorded before the split schemes existed.
    catalog = load_catalog(**shop)
    assert {k: _fingerprint(v) for k, v in catalog.splits_for("goal").items()} == expected
    assert catalog.splits_for("goal") is catalog.splits
    env = WebShopEnv(**shop)
    assert env.split_scheme == "goal" and env.tasks("dev")[0].task_id == "webshop/dev/0"


@pytest.mark.parametrize("shop", SHOPS)
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("scheme, field", [("product", "asin"), ("type", "query")])
def test_product_and_type_splits_keep_dev_and_test_units_out_of_train(shop, seed, scheme, field):
    catalog = load_catalog(**shop, seed=seed)
    splits = catalog.splits_for(scheme)
    train = {g[field] for g in splits["train"]}
    held = {g[field] for s in ("dev", "test") for g in splits[s]}
    assert held and not held & train
    assert not {g[field] for g in splits["dev"]} & {g[field] for g in splits["test"]}
    assert sum(map(len, splits.values())) == len(catalog.goals)  # nothing dropped
    old = catalog.splits_for("goal")
    for name in ("dev", "test"):  # sizes near the old split's
        assert abs(len(splits[name]) - len(old[name])) <= 0.15 * len(old[name]) + 10


@pytest.mark.parametrize("shop", SHOPS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_category_split_holds_whole_categories_out(shop, seed):
    catalog = load_catalog(**shop, seed=seed)
    splits = catalog.splits_for("category")
    cats = {name: {g["category"] for g in goals} for name, goals in splits.items()}
    assert cats["dev"] and cats["test"] and cats["train"]
    assert not (cats["dev"] | cats["test"]) & cats["train"] and not cats["dev"] & cats["test"]
    assert sum(map(len, splits.values())) == len(catalog.goals)


def test_splits_are_deterministic_from_the_seed():
    catalog = load_catalog(**SHOPS[0])
    for scheme in ("product", "type", "category"):
        again = split_goals(catalog.goals, scheme, seed=0)
        assert again == catalog.splits_for(scheme)
    held = [{g["asin"] for g in split_goals(catalog.goals, "product", seed=s)["dev"]} for s in (0, 1)]
    assert held[0] != held[1]  # another seed holds out other products


def test_env_selects_the_scheme_and_names_its_tasks():
    env = gym.make("evolver/WebShop-v0", num_products=200, split_scheme="product").unwrapped
    dev = env.tasks("dev")
    assert dev[0].task_id == "webshop/product-dev/0" and dev[0].metadata["split_scheme"] == "product"
    assert {t.goal["asin"] for t in dev}.isdisjoint({t.goal["asin"] for t in env.tasks("train")})
    assert env.profile()["split_scheme"] == "product"
    obs, info = env.reset(options={"split": "dev", "index": 3})
    assert info["task"]["task_id"] == "webshop/product-dev/3"
    # Any scheme's ids resolve, to that scheme's goal.
    goal_env = WebShopEnv(num_products=200)
    _, info = goal_env.reset(options={"task_id": "webshop/product-dev/3"})
    assert info["instruction"] == dev[3].instruction
    _, info = env.reset(options={"task_id": "webshop/dev/0"})
    assert info["instruction"] == goal_env.tasks("dev")[0].instruction
    with pytest.raises(ValueError, match="split_scheme must be one of .*'products'"):
        WebShopEnv(num_products=200, split_scheme="products")
    with pytest.raises(ValueError, match="unknown WebShop task_id 'webshop/product-dev/99999'"):
        env.reset(options={"task_id": "webshop/product-dev/99999"})


def test_held_out_tasks_are_solvable():
    env = WebShopEnv(num_products=200, goals="synthetic", split_scheme="category")
    for task in env.tasks("dev")[:10]:
        env.reset(options={"task": task})
        for action in task.reference:
            _, reward, terminated, _, info = env.step(action)
        assert terminated and reward == 1.0
