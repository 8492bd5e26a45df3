"""Honest faults: a timeout kills the worker within its bound, runs nothing twice, replays nothing."""

from __future__ import annotations

import time

import pytest

from evolver_gym.appworld.db import diff_databases
from evolver_gym.appworld.env import AppWorldEnv
from evolver_gym.appworld.sandbox import RESTART_NOTICE

from .conftest import LOGIN, answers_next_step

WALL_S = 1.0
_CREATE = "apis.notes.create_note(access_token=tok, title='once', content='x')\n"
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
def env():
    e = AppWorldEnv(split="train", timeout_s=WALL_S, max_steps=10**6)
    yield e
    e.close()


@pytest.mark.parametrize("name", sorted(STUBBORN))
def test_timeout_is_bounded_reported_once_and_never_rerun(env, name):
    env.reset(options={"split": "train", "index": 0})
    env.step(LOGIN)
    before, calls = env._dbs.copy(), env._ctx.num_calls
    start = time.monotonic()
    obs, reward, terminated, truncated, info = env.step(_CREATE + STUBBORN[name])
    elapsed = time.monotonic() - start
    grace = env.sandbox_config.grace_s
    assert elapsed < WALL_S + grace + 2.0, elapsed  # the bound plus the grace period, plus kill and scheduling
    assert info["fault"] == "timeout" and not info["action_valid"] and info["interpreter_restarted"]
    assert f"Execution timed out after {WALL_S:g} seconds." in obs and RESTART_NOTICE in obs
    if name != "timeout caught then API calls":
        assert env._ctx.num_calls - calls == 1  # the create ran once; the cell was not run again
    assert [d.name for d in diff_databases(before, env._dbs)] == []  # rolled back
    obs, *_ = env.step("print(tok)")
    assert "NameError" in obs  # a fresh interpreter: nothing replayed
    assert env._ctx.num_calls - calls <= 1 or name == "timeout caught then API calls"
    answers_next_step(env)


def test_no_replay_after_a_crash(env):
    """Earlier cells that called APIs are not replayed after a worker death: their calls run exactly once."""
    env.reset(options={"split": "train", "index": 0})
    env.step(LOGIN + _CREATE)
    calls = env._ctx.num_calls
    obs, *_, info = env.step("x = [0] * (10 ** 10)")  # memory fault: contained in the worker
    assert info["fault"] == "memory"
    obs, *_, info = env.step("while True:\n    pass")
    assert info["fault"] == "timeout"
    for _ in range(3):
        answers_next_step(env)
    notes = env._dbs.query("notes", "SELECT COUNT(*) AS n FROM notes WHERE title = 'once'")[0]["n"]
    assert notes == 1 and env._ctx.num_calls - calls == 3  # only answers_next_step's own calls


def test_world_state_is_kept_across_a_restart(env):
    env.reset(options={"split": "train", "index": 0})
    env.step(LOGIN + _CREATE)
    env.step("while True:\n    pass")
    obs, *_ = env.step(LOGIN + "print(len(apis.notes.search_notes(access_token=tok, query='once')))")
    assert obs == "1\n"


def test_step_raises_on_no_input_but_never_on_model_text(env):
    env.reset(options={"split": "train", "index": 0})
    with pytest.raises(TypeError, match="None"):
        env.step(None)
    for text in ("", "\x00", "```python\n```", "\udcff", "🙂" * 10, "apis." * 1000, 7):
        obs, *_, info = env.step(text)
        assert obs in env.observation_space
    answers_next_step(env)
