"""Tests of the Experience record's validation and serialisation."""

from __future__ import annotations

import math

import pytest

from wrappers.navigation import Experience


def test_roundtrip_and_stable_id():
    e = Experience("buying shoes in a size", "click the size, then Buy Now", env_id="evolver/WebShop-v0",
                   source_task_id="t/1", score=0.5, metadata={"tags": ["x"]})
    assert Experience.from_json(e.to_json()) == e
    assert e.id == Experience("buying shoes in a size", "click the size, then Buy Now",
                              env_id="evolver/WebShop-v0").id
    assert e.id != Experience("buying shoes in a size", "other advice", env_id="evolver/WebShop-v0").id


@pytest.mark.parametrize("kwargs, needle", [
    ({"when_to_use": "  ", "content": "x"}, "when_to_use"),
    ({"when_to_use": "x", "content": ""}, "content"),
    ({"when_to_use": 3, "content": "x"}, "when_to_use"),
    ({"when_to_use": "x", "content": "y" * 20000}, "content"),
    ({"when_to_use": "x", "content": "y", "score": math.nan}, "score"),
    ({"when_to_use": "x", "content": "y", "uses": 1, "wins": 2}, "wins"),
    ({"when_to_use": "x\x00", "content": "y"}, "NUL"),
])
def test_bad_fields_are_named(kwargs, needle):
    with pytest.raises((ValueError, TypeError), match=needle):
        Experience(**kwargs)


def test_unknown_field_rejected():
    with pytest.raises(ValueError, match="bogus"):
        Experience.from_dict({"when_to_use": "a", "content": "b", "bogus": 1})
