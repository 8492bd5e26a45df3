import json

import pytest

from evolver_gym.core import Task


def make_task(**kw):
    base = dict(task_id="webshop/train/3", env_id="evolver/WebShop-v0", instruction="buy red socks",
                split="train", seed=4, goal={"asin": "B000000003"}, reference=["search[red socks]"])
    base.update(kw)
    return Task(**base)


def test_roundtrip_json_and_dict():
    t = make_task(difficulty=2, metadata={"k": [1, 2]})
    assert Task.from_json(t.to_json()) == t
    assert Task.from_dict(t.to_dict()) == t
    assert json.loads(t.to_json())["goal"] == {"asin": "B000000003"}


def test_public_view_hides_reference_only():
    t = make_task()
    pub = t.public()
    assert "reference" not in pub
    assert set(t.to_dict()) - set(pub) == {"reference"}


def test_derive_makes_new_synthetic_child():
    t = make_task()
    child = t.derive(instruction="buy blue socks", goal={"asin": "B2"}, reference=["click[b2]"], proposer="hindsight")
    assert child.task_id != t.task_id
    assert child.origin == "synthetic" and child.parent_id == t.task_id
    assert child.metadata["proposer"] == "hindsight"
    # same content -> same id (deterministic), different content -> different id
    again = t.derive(instruction="buy blue socks", goal={"asin": "B2"}, reference=[], proposer="x")
    other = t.derive(instruction="buy green socks", goal={"asin": "B2"}, reference=[], proposer="x")
    assert again.task_id == child.task_id != other.task_id


@pytest.mark.parametrize("bad, err", [
    (dict(task_id=""), ValueError),
    (dict(origin="made-up"), ValueError),
    (dict(goal=["not", "a", "dict"]), TypeError),
    (dict(instruction=None), TypeError),
])
def test_invalid_fields_are_rejected_with_the_value(bad, err):
    with pytest.raises(err):
        make_task(**bad)


def test_from_dict_keeps_unknown_keys_in_metadata_and_requires_core_keys():
    t = Task.from_dict({"task_id": "a", "env_id": "e", "instruction": "i", "weight": 3})
    assert t.metadata["weight"] == 3
    with pytest.raises(ValueError, match="instruction"):
        Task.from_dict({"task_id": "a", "env_id": "e"})
