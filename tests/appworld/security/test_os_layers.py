"""The OS layers, each on its own: a cell that escaped the language layer still cannot reach the host.

``Sandbox._execute_unguarded`` runs a cell with the real builtins, which is what a successful
language-level escape would give. Each test runs the attack, asserts it fails, and asserts the
sandbox answers the next cell. Tests that switch one layer off check that another layer still holds.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from evolver_gym.appworld.sandbox import LAYERS, Sandbox, SandboxConfig

from .conftest import FLAVOURS, sandbox_answers, unguarded

ROOT = os.geteuid() == 0
PROJECT_FILE = Path(__file__).resolve().parents[3] / "evolver_gym" / "appworld" / "tasks.py"


def _denied(output: str) -> bool:
    return "PermissionError" in output or "Operation not permitted" in output or "Permission denied" in output


def test_every_layer_is_active_on_this_machine(sandbox):
    assert sandbox.profile()["layers"] == {name: "on" for name in LAYERS}


def test_unprivileged_uid_gid(sandbox):
    out = unguarded(sandbox, "import os\nprint(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())")
    uid, euid, gid, groups = out.split(" ", 3)
    assert uid == euid != "0" and gid != "0" and groups.strip() == "[]", out
    assert _denied(unguarded(sandbox, "import os\nos.setuid(0)"))
    sandbox_answers(sandbox)


@pytest.mark.parametrize(
    "path",
    ["/etc/passwd", "/etc/shadow", str(PROJECT_FILE), "/root", "/", "/tmp", "/dev", "/sys/kernel"],
)
def test_no_filesystem_beyond_the_interpreter(sandbox, path):
    out = unguarded(sandbox, f"import os\np = {path!r}\nprint(os.listdir(p) if os.path.isdir(p) else open(p).read(10))")
    assert _denied(out), out
    sandbox_answers(sandbox)


def test_no_file_can_be_written(sandbox):
    for path in ("/tmp/evolver-sandbox-probe", "/dev/shm/evolver-sandbox-probe", "evolver-probe"):
        out = unguarded(sandbox, f"open({path!r}, 'w').write('x')")
        assert _denied(out), (path, out)
        assert not os.path.exists(path)
    sandbox_answers(sandbox)


def test_project_source_is_unreachable_even_by_import(sandbox):
    out = unguarded(
        sandbox,
        f"import sys\nsys.path.insert(0, {str(PROJECT_FILE.parents[2])!r})\nimport evolver_gym.appworld.tasks",
    )
    assert "ModuleNotFoundError" in out or _denied(out), out
    sandbox_answers(sandbox)


@pytest.mark.parametrize("target", ["ppid", "host", "self", "init"])
@pytest.mark.parametrize("entry", ["environ", "mem", "maps", "cmdline", "status"])
def test_host_proc_is_unreachable(sandbox, target, entry):
    pid = {"ppid": "os.getppid()", "host": str(os.getpid()), "self": "os.getpid()", "init": "1"}[target]
    out = unguarded(sandbox, f"import os\nprint(open(f'/proc/{{{pid}}}/{entry}', 'rb').read(64))")
    assert _denied(out), out
    sandbox_answers(sandbox)


def test_no_network(sandbox):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        for code in (
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)",
            "import socket\nsocket.socket(socket.AF_INET6, socket.SOCK_DGRAM)",
            "import socket\nsocket.socket(socket.AF_UNIX)",
            "import socket\nsocket.socketpair()",
            "import socket\nsocket.socket(socket.AF_NETLINK, socket.SOCK_RAW)",
        ):
            out = unguarded(sandbox, code)
            assert _denied(out), (code, out)
    sandbox_answers(sandbox)


@pytest.mark.parametrize("disable", [("seccomp",), ("seccomp", "netns"), ("seccomp", "landlock")])
def test_network_stays_closed_with_a_layer_off(disable):
    """socket() denied by seccomp; without seccomp the network namespace and Landlock each still hold."""
    sb = Sandbox(SandboxConfig(disable=disable))
    try:
        sb.reset()
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen()
            port = server.getsockname()[1]
            out = unguarded(sb, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)")
        assert "Error" in out and "Traceback" in out, out
        server_got = "accepted" if out.endswith("Execution successful.") else "refused"
        assert server_got == "refused"
        sandbox_answers(sb)
    finally:
        sb.close()


@pytest.mark.parametrize(
    "code",
    [
        "import os\nos.fork()",
        "import os\nos.execv('/bin/true', ['true'])",
        "import os\nos.posix_spawn('/bin/true', ['true'], {})",
        "import subprocess\nsubprocess.run(['true'])",
        "import _thread\n_thread.start_new_thread(print, ('thread',))",
        "import os\nos.kill(os.getppid(), 9)",
        "import os\nos.kill(1, 0)",
        "import os\nos.kill(0, 9)",
        "import os\nos.kill(-1, 9)",
        "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (10**6, 10**6))",
        "import resource\nresource.setrlimit(resource.RLIMIT_NOFILE, (4, 4))",
        "import os\nos.chroot('/')",
        "import os\nos.setsid()\nos.setuid(0)",
    ],
)
def test_seccomp_denies_process_and_privilege_syscalls(sandbox, code):
    out = unguarded(sandbox, code)
    assert _denied(out) or "can't start new thread" in out or "not allowed to raise maximum limit" in out, out
    sandbox_answers(sandbox)


def test_signalling_itself_still_works(sandbox):
    assert unguarded(sandbox, "import os\nos.kill(os.getpid(), 0)\nprint('ok')") == "ok\n"


@pytest.mark.parametrize(
    "call",
    [
        "libc.fork()",
        "libc.ptrace(16, {host}, 0, 0)",  # PTRACE_ATTACH to the host
        "libc.ptrace(0, 0, 0, 0)",  # PTRACE_TRACEME
        "libc.process_vm_readv({host}, None, 0, None, 0, 0)",
        "libc.process_vm_writev({host}, None, 0, None, 0, 0)",
        "libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)",
        "libc.unshare(0x10000000)",  # CLONE_NEWUSER: a way back to capabilities
        "libc.syscall(56, 17, 0, 0, 0, 0)",  # raw clone(SIGCHLD)
        "libc.syscall(435, 0, 0)",  # clone3
        "libc.execve(b'/bin/sh', None, None)",
        "libc.kill({host}, 9)",
        "libc.syscall(424, {host}, 9, 0, 0)",  # pidfd_send_signal
        "libc.prctl(4, 1, 0, 0, 0)",  # PR_SET_DUMPABLE back on
    ],
)
def test_ctypes_syscalls_are_denied(sandbox, call):
    """ctypes reaches libc directly; the kernel still refuses (every call returns -1)."""
    code = f"import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nprint({call.format(host=os.getpid())})"
    assert unguarded(sandbox, code) == "-1\n"
    sandbox_answers(sandbox)


def test_ctypes_cannot_load_a_library_from_disk(sandbox):
    out = unguarded(sandbox, "import ctypes\nctypes.CDLL('libcrypt.so.1')")
    assert "OSError" in out, out
    sandbox_answers(sandbox)


def test_resource_limits(sandbox):
    out = unguarded(
        sandbox,
        "import resource as r\nprint([r.getrlimit(getattr(r, 'RLIMIT_' + n)) for n in ('AS', 'FSIZE', 'NOFILE', "
        "'CPU', 'NPROC', 'CORE')])",
    )
    limits = [tuple(x) for x in __import__("json").loads(out)]
    as_, fsize, nofile, cpu, nproc, core = limits
    cfg = sandbox.config
    assert as_[0] == as_[1] and 0 < as_[0] < 4 * 2**30
    assert fsize == (0, 0) and nofile == (16, 16) and cpu == (cfg.episode_cpu_s,) * 2 and nproc == (0, 0)
    assert core == (0, 0)
    out = unguarded(sandbox, "x = bytearray(1024 * 2**20)")  # 1 GiB: past the address-space limit
    assert "MemoryError" in out, out
    sandbox_answers(sandbox)


# layer kept on -> (layers switched off, cells that must be denied)
_ALONE = {
    # the unprivileged uid keeps the host's /proc, root's files and other pids shut
    "uid": (
        ("landlock", "seccomp"),
        [f"open('/proc/{os.getpid()}/environ', 'rb')", f"open('/proc/{os.getpid()}/mem', 'rb')",
         "open('/etc/shadow')", "import os\nos.kill(1, 0)"],
    ),
    # Landlock, with the worker still root, denies every file outside the stdlib
    "landlock": (("uid", "seccomp"), [f"open('/proc/{os.getpid()}/environ', 'rb')", "open('/etc/shadow')",
                                      f"open({str(PROJECT_FILE)!r})", "open('/tmp/evolver-sandbox-probe', 'w')"]),
}


@pytest.mark.skipif(not ROOT, reason="these layer combinations are set up from root")
@pytest.mark.parametrize("kept", sorted(_ALONE))
def test_one_layer_alone_still_holds(kept):
    disable, attacks = _ALONE[kept]
    sb = Sandbox(SandboxConfig(disable=disable))
    try:
        sb.reset()
        assert sb.profile()["layers"][kept] == "on"
        for code in attacks:
            assert _denied(unguarded(sb, code)), (kept, code)
        sandbox_answers(sb)
    finally:
        sb.close()


def test_a_missing_layer_is_reported_and_warned_once():
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb = Sandbox(SandboxConfig(disable=("netns",), wall_s=4.5))
        sb.reset()
        sb.reset()
        prof = sb.profile()
        sb.close()
    assert prof["layers"]["netns"].startswith("off") and "netns" not in prof["active"]
    assert [str(w.message) for w in caught if "netns" in str(w.message)].__len__() <= 1


_NON_ROOT_PROBE = """
import json, os
from evolver_gym.appworld.sandbox import Sandbox
sb = Sandbox()
sb.reset()
h = lambda *a: (404, {})
out = {"euid": os.geteuid(), "layers": sb.profile()["layers"]}
for name, code in {"socket": "import socket\\nsocket.socket()", "fork": "import os\\nos.fork()",
                   "file": "open('/etc/hostname').read()"}.items():
    out[name] = sb._execute_unguarded(code, h).output.splitlines()[-1]
out["answer"] = sb.execute("print(sum(range(7)))", h).output
sb.close()
print(json.dumps(out))
"""


def test_a_host_without_root_gets_a_user_namespace():
    """Run the host as uid 1000 (in a user namespace): the worker confines itself with its own user namespace."""
    import json
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) on this machine")
    cmd = ["unshare", "--user", "--map-user=1000", "--map-group=1000", sys.executable, "-c", _NON_ROOT_PROBE]
    env = {**os.environ, "PYTHONPATH": str(PROJECT_FILE.parents[2])}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    if proc.returncode != 0 and "unshare" in proc.stderr:
        pytest.skip(f"user namespaces unavailable here: {proc.stderr.strip()[:200]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["euid"] == 1000
    assert out["layers"] == {name: "on" for name in LAYERS}
    assert all("Operation not permitted" in out[k] or "Permission denied" in out[k] for k in ("socket", "fork", "file"))
    assert out["answer"] == "21\n"


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_env_runs_with_no_os_layer_and_says_so(flavour):
    """Where no OS layer is available the env still runs (host-side layers only), warns and reports it."""
    import warnings

    from evolver_gym.appworld import sandbox as sandbox_module

    sandbox_module._warned.discard(tuple(sorted(LAYERS)))  # warned once a process: an earlier case may have
    env = flavour.make(split="train")
    env.sandbox_config.disable = LAYERS
    task = env.tasks("train")[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env.reset(options={"task": task})
    assert any("without OS layers" in str(w.message) for w in caught)
    assert env.profile()["sandbox"]["active"] == []
    for cell in env.oracle(task):
        obs, reward, terminated, truncated, info = env.step(cell)
    assert terminated and reward == 1.0
    env.close()
