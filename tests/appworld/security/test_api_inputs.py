"""Out-of-range integers in any API parameter are a client error (422), never an internal error (500).

The databases store 64-bit integers; an id like ``10**30`` used to reach SQLite and come back as a
500 (``OverflowError``). Every API, every integer, number, list and free-typed parameter is tried.
"""

from __future__ import annotations

import pytest

from evolver_gym.appworld.apis import REGISTRY, dispatch
from evolver_gym.appworld.env import AppWorldEnv

from .conftest import FLAVOURS

HUGE = (10**30, -(10**30), 2**63, -(2**63) - 1, 10**4000)
_FILL = {"string": "a", "integer": 1, "number": 1, "boolean": True, "list": [1], "any": 1}


@pytest.fixture(scope="module")
def world():
    env = AppWorldEnv(split="train", action_mode="tool")
    env.reset(options={"split": "train", "index": 0})
    ctx = env._ctx
    passwords = {a["account_name"]: a["password"] for a in dispatch(ctx, "supervisor", "show_account_passwords", {})[1]}
    email = dispatch(ctx, "supervisor", "show_profile", {})[1]["email"]
    tokens = {}
    for app in REGISTRY:
        if app in passwords:
            for username in (email, dispatch(ctx, "supervisor", "show_profile", {})[1]["phone_number"]):
                status, body = dispatch(ctx, app, "login", {"username": username, "password": passwords[app]})
                if status == 200:
                    tokens[app] = body["access_token"]
                    break
    assert {"notes", "todo", "music", "mail", "payments"} <= set(tokens), sorted(tokens)
    yield env, tokens
    env.close()


def _cases():
    for app, apis in sorted(REGISTRY.items()):
        for name, spec in sorted(apis.items()):
            for p in spec.params:
                if p.type in ("integer", "number", "list", "any"):
                    yield app, name, p.name


@pytest.mark.parametrize("app,name,param", list(_cases()))
def test_huge_integers_are_refused_with_422(world, app, name, param):
    env, tokens = world
    spec = REGISTRY[app][name]
    kinds = {p.name: p.type for p in spec.params}
    base = {"access_token": tokens.get(app, "no-token")} if spec.auth else {}
    for p in spec.params:
        if p.required and p.name not in base:
            base[p.name] = _FILL[p.type]
    for huge in HUGE:
        kwargs = {**base, param: [huge] if kinds[param] == "list" else huge}
        env._dbs.begin()
        try:
            status, body = dispatch(env._ctx, app, name, kwargs)
        finally:
            env._dbs.rollback()
        assert status < 500, (app, name, param, body)
        if kinds[param] in ("integer", "number") and not (spec.auth and app not in tokens):
            assert status == 422 and "64-bit integer" in body["message"], (app, name, param, status, body)


def test_a_huge_page_index_is_an_empty_page(world):
    env, tokens = world
    status, body = dispatch(env._ctx, "notes", "search_notes", {"access_token": tokens["notes"], "page_index": 2**62})
    assert (status, body) == (200, [])


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_a_cell_gets_a_422_for_a_huge_id(flavour):
    env = flavour.make(split="train", timeout_s=5.0)
    env.reset(options={"split": "train", "index": 0})
    try:
        obs, *_ = env.step(flavour.login + f"apis.{flavour.notes}.show_note(access_token=tok, note_id=10**30)")
        assert "Response status code is 422" in obs and "64-bit integer" in obs, obs
    finally:
        env.close()
