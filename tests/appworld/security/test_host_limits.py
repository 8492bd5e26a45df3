"""The host keeps its own limits whatever an escaped worker does: deadline, call count, memory.

Each attack runs as a cell that escaped the language layer (real builtins, its own end of the
socket). The host must come back from ``execute`` by its deadline, refuse calls past ``max_calls``,
keep only a bounded amount of reply data per step, kill a misbehaving worker and answer the next cell.
A call that never comes back would hang the test, so each one runs under a generous liveness bound.
"""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest

from evolver_gym.appworld.sandbox import Sandbox, SandboxConfig

from .conftest import sandbox_answers

_GRAB = (
    "import gc, json, signal\nfrom multiprocessing.connection import Connection\n"
    "conn = [o for o in gc.get_objects() if isinstance(o, Connection)][0]\n"
    "worker = [o for o in gc.get_objects() if type(o).__name__ == 'Worker'][0]\n"
)
_DEAF = "signal.signal(signal.SIGALRM, signal.SIG_IGN)\nsignal.signal(signal.SIGPROF, signal.SIG_IGN)\n"
_LIVENESS_S = 60.0  # far past every deadline below: only a host that never returns reaches it


class Counter:
    """A handler that counts its calls and answers with a body of ``size`` characters."""

    def __init__(self, size: int = 10):
        self.n, self.size = 0, size

    def __call__(self, app, api, kwargs):
        self.n += 1
        return 200, {"blob": "x" * self.size}  # a fresh body per call, as a real API gives


def _bounded(sb: Sandbox, run):
    """``run()`` in a thread; fails (after unsticking the host by killing its worker) if it never returns."""
    box: dict = {}
    t = threading.Thread(target=lambda: box.setdefault("result", run()), daemon=True)
    t.start()
    t.join(_LIVENESS_S)
    if t.is_alive():
        if sb.pid is not None:
            os.kill(sb.pid, signal.SIGKILL)
        t.join(30)
        pytest.fail(f"the host did not return from execute() within {_LIVENESS_S} s")
    return box["result"]


@pytest.fixture
def sb():
    box = Sandbox(SandboxConfig(wall_s=2.0, grace_s=1.0, max_calls=1000))
    box.reset()
    yield box
    box.close()


def test_a_deaf_flood_that_never_reads_its_replies_cannot_block_the_host(sb):
    handler = Counter(size=50_000)  # replies large enough to fill the socket the worker never reads
    code = _GRAB + _DEAF + (
        "msg = json.dumps({'op': 'call', 'cell': worker.cell, 'app': 'a', 'api': 'b', 'kwargs': {}}).encode()\n"
        "for i in range(3000):\n    conn.send_bytes(msg)\n"
        "while True:\n    pass\n"
    )
    res = _bounded(sb, lambda: sb._execute_unguarded(code, handler))
    assert res.fault == "timeout" and res.restarted, res.output
    assert handler.n <= 1000
    sandbox_answers(sb)
    sandbox_answers(sb)


def test_an_endless_stream_of_valid_frames_cannot_hold_the_host_past_its_deadline(sb):
    code = _GRAB + _DEAF + (
        "big = json.dumps({'op': 'noise', 'cell': worker.cell, 'pad': 'x' * 1_400_000}).encode()\n"
        "while True:\n    conn.send_bytes(big)\n"
    )
    res = _bounded(sb, lambda: sb._execute_unguarded(code, Counter()))
    assert res.fault == "timeout" and res.restarted, res.output
    sandbox_answers(sb)


def test_a_frame_trickled_byte_by_byte_cannot_hold_the_host_past_its_deadline(sb):
    code = _GRAB + _DEAF + (
        "import os, struct, time\nfd = conn.fileno()\nos.write(fd, struct.pack('!i', 1_000_000))\n"
        "while True:\n    os.write(fd, b' ')\n    time.sleep(0.01)\n"
    )
    res = _bounded(sb, lambda: sb._execute_unguarded(code, Counter()))
    assert res.fault == "timeout" and res.restarted, res.output
    sandbox_answers(sb)


def test_an_endless_stream_of_foreign_frames_cannot_hold_the_host_past_its_deadline(sb):
    code = _GRAB + _DEAF + (
        "msg = json.dumps({'op': 'done', 'cell': 'not-this-cell', 'output': 'x'}).encode()\n"
        "while True:\n    conn.send_bytes(msg)\n"
    )
    res = _bounded(sb, lambda: sb._execute_unguarded(code, Counter()))
    assert res.fault == "timeout" and res.restarted, res.output
    sandbox_answers(sb)


def test_a_signal_deaf_busy_loop_is_killed_at_the_deadline(sb):
    res = _bounded(sb, lambda: sb._execute_unguarded(_GRAB + _DEAF + "while True:\n    pass\n", Counter()))
    assert res.fault == "timeout" and res.restarted
    sandbox_answers(sb)


def test_max_calls_is_counted_by_the_host(sb):
    handler = Counter()
    code = _GRAB + (
        "statuses = {}\n"
        "for i in range(1500):\n"
        "    conn.send_bytes(json.dumps({'op': 'call', 'cell': worker.cell, 'app': 'a', 'api': 'b',"
        " 'kwargs': {}}).encode())\n"
        "    s = json.loads(conn.recv_bytes())['status']\n"
        "    statuses[s] = statuses.get(s, 0) + 1\n"
        "print(sorted(statuses.items()))\n"
    )
    res = _bounded(sb, lambda: sb._execute_unguarded(code, handler))
    assert handler.n == 1000
    assert res.output == "[[200, 1000], [429, 500]]\n", res.output
    assert [c[2] for c in res.calls].count(429) == 500
    sandbox_answers(sb)


def test_the_cell_still_gets_its_own_limit_error_first(sb):
    handler = Counter()
    res = sb.execute("for i in range(1001):\n    apis.a.b()", handler)
    assert res.fault == "limit" and "Maximum number of API calls" in res.output
    assert handler.n == 1000


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_host_memory_per_step_does_not_grow_with_the_replies():
    sb = Sandbox(SandboxConfig(wall_s=60.0, max_step_reply_bytes=10**9))
    try:
        sb.reset()
        handler = Counter(size=1_000_000)
        sb.execute("apis.a.b()", handler)  # allocator warm-up
        before = _rss_mb()
        res = sb.execute("n = 0\nfor i in range(150):\n    n += len(apis.a.b()['blob'])\nprint(n)", handler)
        grown = _rss_mb() - before
    finally:
        sb.close()
    assert res.output == f"{150 * 1_000_000}\n", res.output
    assert len(res.calls) == 150
    assert grown < 48, f"the host grew by {grown:.0f} MB over one step of 150 MB of replies"


def test_reply_bytes_past_the_step_budget_get_an_error_and_the_api_does_not_run():
    sb = Sandbox(SandboxConfig(wall_s=30.0, max_step_reply_bytes=3_000_000))
    try:
        sb.reset()
        handler = Counter(size=1_000_000)
        code = (
            "seen = []\nfor i in range(5):\n    try:\n        apis.a.b()\n        seen.append(200)\n"
            "    except Exception as e:\n        seen.append(str(e).splitlines()[0])\nprint(seen)"
        )
        res = sb.execute(code, handler)
        assert handler.n == 3
        assert res.output == json.dumps([200] * 3 + ["Response status code is 429:"] * 2) + "\n", res.output
        assert res.ok
        handler.n = 0
        assert sb.execute("print(len(apis.a.b()['blob']))", handler).output == "1000000\n"  # a new step, a new budget
    finally:
        sb.close()


def test_a_single_reply_larger_than_the_budget_becomes_a_413():
    sb = Sandbox(SandboxConfig(wall_s=30.0, max_step_reply_bytes=500_000))
    try:
        sb.reset()
        res = sb.execute("apis.a.b()", Counter(size=1_000_000))
        assert "Response status code is 413" in res.output, res.output
    finally:
        sb.close()


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10"])
def test_the_budget_is_validated(bad):
    with pytest.raises(ValueError, match="max_step_reply_bytes"):
        SandboxConfig(max_step_reply_bytes=bad)
