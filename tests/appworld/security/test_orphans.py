"""The whole process tree dies on close and on faults: no orphans, checked in /proc."""

from __future__ import annotations

import os
import time

import pytest

from evolver_gym.appworld.sandbox import Sandbox, SandboxConfig

from .conftest import FLAVOURS, no_api


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pids, timeout=5.0):
    deadline = time.monotonic() + timeout
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [p for p in pids if _running(p)]


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_close_leaves_no_process(flavour):
    env = flavour.make(split="train")
    env.reset(options={"split": "train", "index": 0})
    env.step("x = 1")
    sb = env._sandbox
    pids = [sb.zygote_pid, sb.pid, sb._spare.pid]
    if flavour.real_apps:
        pids.append(env.server._proc.pid)  # the app server goes with the env
    assert all(_running(p) for p in pids)
    env.close()
    assert _wait_gone(pids) == []


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_reset_and_timeout_leave_no_old_worker(flavour):
    env = flavour.make(split="train", timeout_s=0.5)
    env.reset(options={"split": "train", "index": 0})
    old = [env._sandbox.pid]
    env.step("while True:\n    pass")
    env.reset(options={"split": "train", "index": 0})
    old.append(env._sandbox.pid)
    env.reset(options={"split": "train", "index": 0})
    assert _wait_gone(old) == []
    env.close()


def test_forked_descendants_are_killed_when_process_creation_is_possible():
    """With seccomp and the uid layer off a worker can fork, even detach; the host still kills every descendant."""
    sb = Sandbox(SandboxConfig(disable=("seccomp", "uid"), wall_s=3.0))
    sb.reset()
    code = (
        "import os, time\n"
        "def spawn(detach):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        if detach:\n"
        "            os.setsid()\n"
        "            if os.fork():\n"
        "                os._exit(0)\n"
        "        time.sleep(1000)\n"
        "    return pid\n"
        "print(spawn(False), spawn(True))"
    )
    res = sb._execute_unguarded(code, no_api)
    kids = [int(x) for x in res.output.split()]
    time.sleep(0.2)
    grandchildren = [
        int(e.name)
        for e in os.scandir("/proc")
        if e.name.isdigit() and _running(int(e.name)) and _session_of(int(e.name)) == kids[1]
    ]
    assert _running(kids[0]) and grandchildren, "the forks should have worked with these layers off"
    worker = sb.pid
    sb.reset()  # the old worker goes, and everything it started with it
    assert _wait_gone([worker, kids[0], *grandchildren]) == []
    res = sb._execute_unguarded(code, no_api)
    more = [int(x) for x in res.output.split()]
    zygote = sb.zygote_pid
    sb.close()
    assert _wait_gone([zygote, *more]) == []


def test_worker_cannot_fork_with_all_layers(sandbox):
    res = sandbox._execute_unguarded("import os\nprint(os.fork())", no_api)
    assert "PermissionError" in res.output and res.ok


def _session_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[3])
    except OSError:
        return -1


def test_a_killed_host_leaves_no_folder_behind(tmp_path):
    """The zygote's empty start folder is removed once it runs, so a SIGKILLed host leaves nothing in TMPDIR."""
    import subprocess
    import sys

    script = (
        "import os, signal\n"
        "from evolver_gym.appworld.sandbox import Sandbox\n"
        "sb = Sandbox()\n"
        "assert sb.execute('print(6 * 7)', lambda *a: (200, {})).output == '42\\n'\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env={**os.environ, "TMPDIR": str(tmp_path)}, timeout=120)
    assert done.returncode == -9  # it got as far as the kill: the cell ran
    assert list(tmp_path.iterdir()) == []
