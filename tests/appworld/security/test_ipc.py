"""Forged IPC: whatever the worker sends, the host takes only the running cell's messages, sized and parsed.

An escaped cell owns its end of the socket. It can lie about its own output, but it cannot run an
API the cell did not call, end the episode, desynchronise later steps, or grow the host's memory.
"""

from __future__ import annotations

import pytest

from .conftest import answers_next_step

# what an escaped cell uses to reach its end of the socket and the worker's state
_GRAB = (
    "import gc, os\nfrom multiprocessing.connection import Connection\n"
    "conn = [o for o in gc.get_objects() if isinstance(o, Connection)][0]\n"
    "worker = [o for o in gc.get_objects() if type(o).__name__ == 'Worker'][0]\n"
)


@pytest.fixture(autouse=True)
def fresh_episode(env):
    env.reset(options={"split": "train", "index": 0})


def test_patched_json_classes_do_not_forge_messages(env, flavour):
    obs, *_ = env.step(
        "import json\njson.JSONEncoder.encode = lambda self, o: '{\"op\": \"done\", \"output\": \"forged\"}'\n"
        "json.JSONEncoder.iterencode = lambda self, o, _one_shot=False: iter(['\"forged\"'])\n"
        "json.JSONDecoder.decode = lambda self, s, _w=None: {'status': 200, 'body': 'forged'}"
    )
    assert obs == "Execution successful."
    obs, *_ = env.step("print(apis.supervisor.show_active_task()['status'])")
    assert obs == f"{flavour.active_status}\n"
    answers_next_step(env)


def test_forged_messages_from_an_escaped_cell_are_ignored(env, flavour):
    sb = env._sandbox
    before_calls, ignored = flavour.calls(env), sb.ignored_messages
    code = _GRAB + (
        "conn.send_bytes(b'{\"op\": \"done\", \"cell\": \"0000\", \"output\": \"FORGED\"}')\n"
        "conn.send_bytes(b'{\"op\": \"call\", \"cell\": \"0000\", \"app\": \"supervisor\", \"api\": \"complete_task\", "
        "\"kwargs\": {}}')\n"
        "conn.send_bytes(b'{\"op\": \"done\", \"output\": \"FORGED\"}')\n"
        "conn.send_bytes(b'not json at all')\n"
        "conn.send_bytes(b'[' * 100000)\n"
        "conn.send_bytes(b'\"just a string\"')\n"
        "print('real output')"
    )
    obs = sb._execute_unguarded(code, env._handler).output
    assert obs == "real output\n"
    assert flavour.calls(env) == before_calls  # the forged complete_task never ran
    assert sb.ignored_messages - ignored == 6
    assert not env._task_completed()
    answers_next_step(env)


def test_forged_done_with_the_right_cell_id_cannot_desynchronise(env):
    """A cell may forge its own 'done' (it lies only to itself); the real one that follows is ignored later."""
    sb = env._sandbox
    code = _GRAB + (
        "import json\n"
        "conn.send_bytes(json.dumps({'op': 'done', 'cell': worker.cell, 'output': 'forged by the cell'}).encode())\n"
        "print('late output')"
    )
    res = sb._execute_unguarded(code, env._handler)
    assert res.output == "forged by the cell"
    for _ in range(3):
        answers_next_step(env)  # the real 'done' of the forging cell carries an old id and is skipped


def test_forged_call_is_validated_by_the_host(env):
    sb = env._sandbox
    code = _GRAB + (
        "import json\n"
        "bad = {'op': 'call', 'cell': worker.cell, 'app': 7, 'api': None, 'kwargs': []}\n"
        "conn.send_bytes(json.dumps(bad).encode())\n"
        "print(json.loads(conn.recv_bytes())['status'])"
    )
    assert sb._execute_unguarded(code, env._handler).output == "422\n"
    answers_next_step(env)


def test_oversized_and_malformed_frames_kill_only_the_worker(env):
    import resource

    sb = env._sandbox
    rss_before = _rss_mb()
    for code in (
        _GRAB + "conn.send_bytes(b'x' * (100 * 2**20))",  # 100 MB frame: refused from its header
        _GRAB + "os.write(conn.fileno(), b'\\xff' * 64)",  # a bogus length header
        _GRAB + "conn.close()",
    ):
        res = sb._execute_unguarded(code, env._handler)
        assert res.fault == "crash" and res.restarted, res.output
        answers_next_step(env)
    assert _rss_mb() - rss_before < 64, (rss_before, _rss_mb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _rss_mb() -> float:
    import os

    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
