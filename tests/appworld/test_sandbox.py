"""The sandbox contains hostile code: clear error, host unaffected, world unchanged, next step works."""

from __future__ import annotations

import os
import signal
import time

import pytest

from evolver_gym.appworld.db import diff_databases
from evolver_gym.appworld.env import AppWorldEnv
from evolver_gym.appworld.sandbox import RESTART_NOTICE

# each snippet first changes the world (an alarm), then misbehaves: the change must be rolled back
_CHANGE = (
    "t = apis.phone.login(username=profile['phone_number'], password=pw['phone'])['access_token']\n"
    "apis.phone.create_alarm(access_token=t, time='06:06', label='hostile')\n"
)
HOSTILE = {
    "infinite loop": "while True:\n    pass",
    "loop catching the timeout": (
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
    ),
    "memory bomb": "x = [0] * (10 ** 10)",
    "growing memory": "blob = []\nwhile True:\n    blob.append('x' * 10 ** 6)",
    "deep recursion": "def f(n):\n    return f(n + 1)\nf(0)",
    "import os": "import os\nos.system('true')",
    "import subprocess": "import subprocess",
    "import socket": "import socket\nsocket.create_connection(('example.com', 80))",
    "import sys": "import sys\nsys.exit(0)",
    "import ctypes": "import ctypes",
    "import shutil": "import shutil",
    "from os import path": "from os import path",
    "importlib": "import importlib",
    "dunder import builtin": "__import__('os').system('true')",
    "open a file": "open('/etc/passwd').read()",
    "write a file": "open('/tmp/pwned', 'w').write('x')",
    "exec": "exec('import os')",
    "eval": "eval('1+1')",
    "compile": "compile('1', 'f', 'eval')",
    "globals": "globals()",
    "locals": "locals()",
    "vars": "vars()",
    "class escape": "().__class__.__bases__[0].__subclasses__()",
    "getattr dunder": "getattr((), '__class__')",
    "getattr single underscore": "import random\ngetattr(random, '_os')",
    "generator frame": "g = (i for i in [1])\ng.gi_frame.f_globals",
    "traceback frame": "try:\n    1 / 0\nexcept Exception as e:\n    e.__traceback__.tb_frame",
    "type() class factory": "type('X', (), {})",
    "module submodule": "import json\njson.codecs.open('/etc/passwd')",
    "breakpoint": "breakpoint()",
    "input": "input('x')",
    "raise SystemExit": "raise SystemExit(1)",
    "keyboard interrupt": "raise KeyboardInterrupt",
    "api call flood": "while True:\n    apis.api_docs.show_app_descriptions()",
    "format string attribute": "'{0.__class__}'.format(1)",
    "string formatter": "import string\nstring.Formatter()",
    "operator attrgetter": "from operator import attrgetter",
    "async code": "async def f():\n    pass",
    "null byte": "x = 1\x00",
    "huge nesting": "x = " + "[" * 300 + "]" * 300,
}


_SETUP = (
    "pw = {a['account_name']: a['password'] for a in apis.supervisor.show_account_passwords()}\n"
    "profile = apis.supervisor.show_profile()\nmarker = 41"
)


@pytest.fixture(scope="module")
def env():
    e = AppWorldEnv(split="train", timeout_s=1.0, memory_mb=128, max_steps=100_000)
    e.reset(options={"split": "train", "index": 0})
    e.step(_SETUP)
    yield e
    e.close()


def test_corpus_is_large_enough():
    assert len(HOSTILE) >= 30


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_snippet_is_contained(env, name):
    before = env._dbs.copy()
    obs, reward, terminated, truncated, info = env.step(_CHANGE + HOSTILE[name])
    assert obs.startswith("Execution failed. Traceback:"), (name, obs[:300])
    assert not terminated
    changed = [d.name for d in diff_databases(before, env._dbs) if d.name != "supervisor.active_task"]
    if info.get("fault") or "UnsafeCodeError" in obs or "Syntax error" in obs:
        assert changed == [], (name, changed)  # rolled back (or never run)
    if info.get("fault") in ("timeout", "crash"):  # the interpreter was killed: said so, variables gone
        assert RESTART_NOTICE in obs and info["interpreter_restarted"], (name, obs[-300:])
        obs, *_ = env.step("print(marker)")
        assert "NameError" in obs, (name, obs)
        env.step(_SETUP)
    obs, *_ = env.step("marker += 1\nprint(marker)")  # the namespace from before survives, next step works
    assert obs.strip().isdigit(), (name, obs[:300])
    env.step("marker = 41")
    if changed:  # an ordinary exception keeps earlier changes, as in AppWorld: undo them for the next case
        env._dbs = before.copy(into=env._dbs)
        env._ctx.dbs = env._dbs


def test_resource_faults_roll_back(env):
    for name in ("infinite loop", "memory bomb", "deep recursion", "api call flood", "growing memory"):
        env.step(_SETUP)
        before = env._dbs.copy()
        obs, *_, info = env.step(_CHANGE + HOSTILE[name])
        assert info["fault"] in ("timeout", "memory", "recursion", "limit", "crash"), (name, info)
        assert not info["action_valid"]
        assert [d.name for d in diff_databases(before, env._dbs) if d.name != "supervisor.active_task"] == []
    env.step(_SETUP)


def test_killed_worker_restarts_fresh_and_says_so(env):
    """No replay: a worker killed between steps is replaced by a fresh one, and the observation says so."""
    env.step("kept = [1, 2, 3]")
    os.kill(env._sandbox.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while env._sandbox._worker.alive() and time.monotonic() < deadline:  # the kill lands asynchronously
        time.sleep(0.01)
    obs, *_, info = env.step("print(2 + 2)")
    assert obs == f"{RESTART_NOTICE}\n4\n" and info["interpreter_restarted"] and info["action_valid"]
    obs, *_, info = env.step("print(kept)")
    assert "NameError: name 'kept' is not defined" in obs and "interpreter_restarted" not in info
    env.step(_SETUP)


def test_worker_killed_during_a_step(env):
    before = env._dbs.copy()
    pid = env._sandbox.pid
    # the step kills nothing itself; the host kills the worker while the cell waits in a loop
    import threading

    threading.Timer(0.3, lambda: os.kill(pid, signal.SIGKILL)).start()
    obs, *_, info = env.step(_CHANGE + "import time\nwhile True:\n    time.sleep(0.01)")
    assert info["fault"] in ("crash", "timeout") and RESTART_NOTICE in obs
    assert [d.name for d in diff_databases(before, env._dbs) if d.name != "supervisor.active_task"] == []
    time.sleep(0.01)
    obs, *_ = env.step("print(40 + 1)")
    assert obs.strip() == "41"
    env.step(_SETUP)


def test_output_truncated():
    e = AppWorldEnv(max_output_chars=100)
    e.reset(options={"split": "train", "index": 0})
    obs, *_ = e.step("print('y' * 5000)")
    assert len(obs) < 200 and "output truncated" in obs
    e.close()


def test_observation_strings(env):
    assert env.step("")[0] == "No code available to execute."
    assert env.step("x = 1")[0] == "Execution successful."
    obs = env.step("apis.music.show_playlists()")[0]
    assert obs.startswith("Execution failed. Traceback:") and "Response status code is 401" in obs
    assert 'File "<python-input>", line 1' in obs
    obs = env.step("print({'k': list(range(40))})")[0]
    assert obs.startswith("{\n")  # long JSON is indented like AppWorld's print


def test_worker_allowlist_matches_the_static_check():
    """The worker runs isolated (``python -I``) with its own copy of the import allowlist; the two agree."""
    from evolver_gym.appworld import _worker
    from evolver_gym.appworld.safety import ALLOWED_MODULES

    assert set(_worker._SAFE_MODULES) == set(ALLOWED_MODULES)
