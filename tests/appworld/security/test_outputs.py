"""Every output path is capped and escaped; huge API arguments cannot grow the host."""

from __future__ import annotations

import json
import os

import pytest

from .conftest import answers_next_step

HUGE_OUTPUTS = {
    "print": "print('x' * 10**7)",
    "many prints": "for i in range(10**5):\n    print('line', i)",
    "exception message": "raise ValueError('y' * 10**7)",
    "exception with newlines": "raise KeyError('\\n'.join(['z' * 80] * 10**5))",
    "long traceback": "def f(n):\n    return f(n + 1) if n < 350 else 1 / 0\nf(0)",
    "api error echo": "apis.phone.login(username='u' * 19000, password='p' * 19000)",
    "huge repr": "print({i: 'v' * 100 for i in range(10**5)})",
}
NON_PRINTABLE = {
    "control characters": "print(''.join(chr(i) for i in range(32)))",
    "escape sequences": "print('\\x1b[31mred\\x1b[0m\\x07\\x08')",
    "lone surrogate": "print('\\udcff\\ud800')",
    "private use and format chars": "print('\\u200b\\u202e\\ue000\\U000f0000')",
    "in an exception": "raise ValueError('\\x00\\x01\\x1b')",
    "in an api argument": "apis.phone.login(username='\\x00\\x1b', password='\\x07')",
}


@pytest.mark.parametrize("name", sorted(HUGE_OUTPUTS))
def test_every_output_path_is_capped(env, name):
    obs, *_, info = env.step(HUGE_OUTPUTS[name])
    assert len(obs) <= env._obs_limit, (name, len(obs))
    assert obs in env.observation_space
    answers_next_step(env)


@pytest.mark.parametrize("name", sorted(NON_PRINTABLE))
def test_non_printable_output_is_escaped(env, name):
    obs, *_ = env.step(NON_PRINTABLE[name])
    assert obs in env.observation_space, repr(obs[:200])
    answers_next_step(env)


def test_escaping_is_readable(env):
    obs, *_ = env.step("print('a\\x07b')")
    assert obs == "a\\x07b\n"


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_huge_api_arguments_do_not_grow_the_host(env, flavour):
    env.step(flavour.login)
    rss = _rss_mb()
    notes = flavour.notes
    for size in (10**6, 10**7, 5 * 10**7):
        obs, *_, info = env.step(f"apis.{notes}.create_note(access_token=tok, title='t', content='c' * {size})")
        assert "too large" in obs, obs[-300:]
        assert len(obs) <= env._obs_limit
    obs, *_ = env.step(f"apis.{notes}.create_note(access_token=tok, title='t', content='c' * 50000)")
    assert "Response status code is 413" in obs and "Request too large" in obs and "ccccc" not in obs
    sb = env._sandbox  # an escaped cell sends the huge call itself: the host refuses the frame from its header
    res = sb._execute_unguarded(
        "import gc, json\nfrom multiprocessing.connection import Connection\n"
        "w = [o for o in gc.get_objects() if type(o).__name__ == 'Worker'][0]\n"
        f"w.conn.send_bytes(json.dumps({{'op': 'call', 'cell': w.cell, 'app': {notes!r}, 'api': 'create_note', "
        "'kwargs': {'content': 'c' * 3 * 2**20}}).encode())",
        env._handler,
    )
    assert res.fault == "crash"
    env.reset(options={"split": "train", "index": 0})
    assert _rss_mb() - rss < 64, (rss, _rss_mb())
    answers_next_step(env)


def test_one_episode_cannot_grow_the_world_without_bound(env, flavour):
    env.reset(options={"split": "train", "index": 0})
    env.step(flavour.login + "n = 0")
    limit = env.api_limits.max_episode_request_bytes
    # 20 notes a step, step after step (each well inside the step's time limit on either id's apps), a title
    # each (AppWorld's notes app refuses a second note of one title), until the episode's budget is spent
    create = f"apis.{flavour.notes}.create_note(access_token=tok, title='grow-' + str(n), content='c' * 19000)"
    for _ in range(limit // (20 * 19000) + 2):
        obs, *_ = env.step(f"for _ in range(20):\n    {create}\n    n += 1")
        if "429" in obs:
            break
    assert "Response status code is 429" in obs, obs[-300:]
    stored = sum(map(len, flavour.notes_titled(env, "grow-", prefix=True)))
    assert 0 < stored <= limit
    obs, *_ = env.step(f"apis.{flavour.notes}.create_note(access_token=tok, title='grow-last', content='c' * 19000)")
    assert "429" in obs  # still refused: the budget is spent
    env.reset(options={"split": "train", "index": 0})  # a new episode has a new budget
    answers_next_step(env)


@pytest.fixture(scope="module")
def tool_env(flavour):
    e = flavour.make(split="train", action_mode="tool", max_output_chars=2000)
    e.reset(options={"split": "train", "index": 0})
    yield e
    e.close()


@pytest.mark.parametrize(
    "action",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"name": "phone__login", "arguments": ' + "[" * 50_000 + "]" * 50_000 + "}",
        json.dumps({"name": "phone__login", "arguments": json.dumps({"username": "[" * 50_000})}),
        json.dumps({"name": "phone__login", "arguments": "[" * 100_000}),
        json.dumps({"name": "phone__login", "arguments": {"username": "u" * 150_000}}),
        "x" * 300_000,
        json.dumps({"name": "x" * 100_000, "arguments": {}}),
        json.dumps({"name": "api_docs__show_api_doc", "arguments": {"app_name": "\x00\x1b", "api_name": "\u202e"}}),
        json.dumps({"name": "phone__login", "arguments": {"username": {"a": "[" * 20 + "1" + "]" * 20}}}),
        '{"name": "phone__login", "arguments": {"username": ' + "[" * 30 + "]" * 30 + "}}",
    ],
)
def test_tool_mode_hostile_actions(tool_env, action):
    obs, reward, terminated, truncated, info = tool_env.step(action)
    assert obs in tool_env.observation_space and len(obs) <= tool_env._obs_limit
    obs, *_, info = tool_env.step('{"name": "api_docs__show_app_descriptions", "arguments": {}}')
    assert info["action_valid"] and "phone" in [app["name"] for app in json.loads(obs)]
