"""Honest faults: a timeout kills the worker within its bound, runs nothing twice, replays nothing."""

from __future__ import annotations

import time

import pytest

from evolver_gym.appworld.sandbox import RESTART_NOTICE

from .conftest import answers_next_step

WALL_S = 1.0
_CREATE = "apis.{notes}.create_note(access_token=tok, title='once', content='x')\n"
STUBBORN = {
    "busy loop": "while True:\n    pass",
    "loop that swallows the timeout": (
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
    ),
    "sleeping": "import time\nwhile True:\n    time.sleep(0.05)",
    "timeout caught then API calls": (
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n"
        "        apis.api_docs.show_app_descriptions()"
    ),
}


@pytest.fixture(scope="module")
def env(flavour):
    e = flavour.make(split="train", timeout_s=WALL_S, max_steps=10**6)
    yield e
    e.close()


@pytest.mark.parametrize("name", sorted(STUBBORN))
def test_timeout_is_bounded_reported_once_and_never_rerun(env, flavour, name):
    env.reset(options={"split": "train", "index": 0})
    env.step(flavour.login)
    before, calls = flavour.snapshot(env), flavour.calls(env)
    start = time.monotonic()
    obs, reward, terminated, truncated, info = env.step(_CREATE.format(notes=flavour.notes) + STUBBORN[name])
    elapsed = time.monotonic() - start
    grace = env.sandbox_config.grace_s
    assert elapsed < WALL_S + grace + 2.0, elapsed  # the bound plus the grace period, plus kill and scheduling
    assert info["fault"] == "timeout" and not info["action_valid"] and info["interpreter_restarted"]
    assert f"Execution timed out after {WALL_S:g} seconds." in obs and RESTART_NOTICE in obs
    if name != "timeout caught then API calls":
        assert flavour.calls(env) - calls == 1  # the create ran once; the cell was not run again
    assert flavour.changed_since(env, before) == []  # rolled back
    obs, *_ = env.step("print(tok)")
    assert "NameError" in obs  # a fresh interpreter: nothing replayed
    assert flavour.calls(env) - calls <= 1 or name == "timeout caught then API calls"
    answers_next_step(env)


def test_no_replay_after_a_crash(env, flavour):
    """Earlier cells that called APIs are not replayed after a worker death: their calls run exactly once."""
    env.reset(options={"split": "train", "index": 0})
    env.step(flavour.login + _CREATE.format(notes=flavour.notes))
    calls = flavour.calls(env)
    obs, *_, info = env.step("x = [0] * (10 ** 10)")  # memory fault: contained in the worker
    assert info["fault"] == "memory"
    obs, *_, info = env.step("while True:\n    pass")
    assert info["fault"] == "timeout"
    for _ in range(3):
        answers_next_step(env)
    notes = len(flavour.notes_titled(env, "once"))
    assert notes == 1 and flavour.calls(env) - calls == 3  # only answers_next_step's own calls


def test_world_state_is_kept_across_a_restart(env, flavour):
    env.reset(options={"split": "train", "index": 0})
    env.step(flavour.login + _CREATE.format(notes=flavour.notes))
    env.step("while True:\n    pass")
    obs, *_ = env.step(
        flavour.login + f"found = apis.{flavour.notes}.search_notes(access_token=tok, query='once', page_limit=20)\n"
        "print(len([n for n in found if n['title'] == 'once']))"
    )
    assert obs == "1\n"


def test_step_raises_on_no_input_but_never_on_model_text(env):
    env.reset(options={"split": "train", "index": 0})
    with pytest.raises(TypeError, match="None"):
        env.step(None)
    for text in ("", "\x00", "```python\n```", "\udcff", "🙂" * 10, "apis." * 1000, 7):
        obs, *_, info = env.step(text)
        assert obs in env.observation_space
    answers_next_step(env)
