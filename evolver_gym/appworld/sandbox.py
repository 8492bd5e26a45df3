"""Host side of the code sandbox: a fresh confined interpreter per episode, limits, honest faults.

* ``Sandbox`` - runs code cells in a worker process forked from a clean zygote (``_worker.py``);
  API calls come back to the host over a socket and are answered by ``handler``.
* ``CellResult`` - the observation string of one cell, the kind of fault, whether the interpreter restarted.
* ``SandboxConfig`` - the limits and the OS layers.
* ``LAYERS`` - the OS layers, in the order the worker applies them (see ``docs/security.md``).

The worker never holds anything secret or authoritative: tasks, reference solutions, tests, the
databases and the evaluation stay in the host. Every worker message is untrusted: it is size-capped,
parsed as JSON (never pickle), must carry the id of the running cell (anything else is ignored), and
its text is capped again and escaped by the environment.

Fault semantics: a timeout or any other death of the worker kills it (the whole process tree: the
worker cannot create processes) and is reported once; the cell is never re-run and earlier cells are
never replayed, so no API call runs twice. The next cell runs in a fresh interpreter, and its
observation starts with :data:`RESTART_NOTICE`.

The host keeps its limits on its own, whatever the worker sends or refuses to read: every read and
write on the worker's socket is non-blocking and bounded by the cell's deadline (``wall_s`` plus
``grace_s``), checked again before each message, so neither a worker that never reads its replies
nor one that streams frames without end (or trickles one byte by byte) holds the host past it;
``max_calls`` is counted by the host, which answers a call past it with a 429 without running it;
the host keeps no reply once it is sent, and a step may receive at most ``max_step_reply_bytes`` of
replies (a call made past that budget gets a 429 and is not run; a single reply larger than the
budget is replaced by a 413, its API having run).
"""

from __future__ import annotations

import json
import os
import secrets
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .safety import UnsafeCodeError, check_code

__all__ = ["Sandbox", "SandboxConfig", "CellResult", "LAYERS", "RESTART_NOTICE"]

_WORKER = Path(__file__).with_name("_worker.py")
_MIN_FRAME = 2 * 2**20  # bytes of one worker message at least; a longer one than the cap kills the worker
_NOSIGNAL = getattr(socket, "MSG_NOSIGNAL", 0)  # a closed peer is an error to handle, never a SIGPIPE
LAYERS = ("netns", "rlimits", "uid", "landlock", "seccomp")
RESTART_NOTICE = (
    "[The Python interpreter was restarted: variables, functions and imports from earlier steps are gone; "
    "the world keeps the changes of the steps that completed.]"
)
Handler = Callable[[str, str, dict[str, Any]], tuple[int, Any]]
_warned: set[tuple[str, ...]] = set()


@dataclass
class SandboxConfig:
    """Limits and OS layers of one sandbox."""

    wall_s: float = field(default=10.0, metadata={"help": "Wall-clock seconds per cell; past it the worker is killed."})
    cpu_s: float = field(default=10.0, metadata={"help": "CPU seconds per cell."})
    memory_mb: int = field(default=256, metadata={"help": "Extra address space the worker may allocate, in MB."})
    max_output: int = field(default=20000, metadata={"help": "Characters of printed output kept per cell."})
    max_calls: int = field(default=1000, metadata={"help": "API calls allowed per cell."})
    max_request_bytes: int = field(default=100_000, metadata={"help": "Bytes of one API call's JSON arguments."})
    max_step_reply_bytes: int = field(
        default=64 * 2**20,
        metadata={
            "help": "Bytes of API replies one cell may receive; a call made past it gets a 429 and is not run."
        },
    )
    grace_s: float = field(
        default=1.0,
        metadata={"help": "Seconds past wall_s the host waits for the worker's own report before killing it."},
    )
    episode_cpu_s: int = field(default=600, metadata={"help": "CPU seconds one worker may use in all (RLIMIT_CPU)."})
    uid: int = field(default=64999, metadata={"help": "Unprivileged uid/gid the worker drops to when started as root."})
    disable: tuple[str, ...] = field(
        default=(), metadata={"help": f"OS layers to leave off (diagnosis only; see docs/security.md): {LAYERS}."}
    )

    def __post_init__(self) -> None:
        for name in ("wall_s", "cpu_s", "grace_s"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"SandboxConfig.{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("memory_mb", "max_output", "max_calls", "max_request_bytes", "max_step_reply_bytes",
                     "episode_cpu_s", "uid"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"SandboxConfig.{name} must be a positive int, got {getattr(self, name)!r}")
        self.disable = tuple(self.disable)
        unknown = [x for x in self.disable if x not in LAYERS]
        if unknown:
            raise ValueError(f"SandboxConfig.disable has unknown layers {unknown}; layers: {LAYERS}")


@dataclass
class CellResult:
    """Outcome of one cell: the observation, ``fault`` (None or its kind) and ``restarted``.

    ``restarted`` is true when this cell ran in a fresh interpreter because the previous one died
    (or when this cell's fault killed it). ``calls`` lists ``(app, api, status)`` for each API call
    the host answered (names cut to 200 characters; arguments and replies are not kept).
    """

    output: str
    fault: str | None = None
    calls: list[tuple[str, str, int]] = field(default_factory=list)
    restarted: bool = False

    @property
    def ok(self) -> bool:
        return self.fault is None


class _WorkerGone(Exception):
    pass


class _Channel:
    """The host's end of a worker's socket: length-prefixed frames, each read and write bounded by a deadline.

    The frames are those of ``multiprocessing.connection`` (a 4-byte big-endian length, or -1 and an
    8-byte one), which the worker speaks. The socket is non-blocking: ``send`` and ``recv`` wait only
    until ``deadline`` (``time.monotonic()``) and then raise ``TimeoutError``, however the worker
    behaves. A frame longer than ``max_frame`` is refused from its header, before it is read.
    """

    _CHUNK = 1 << 18

    def __init__(self, sock: socket.socket):
        sock.setblocking(False)
        self.sock = sock
        self.buf = bytearray()

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes, deadline: float) -> None:
        n = len(data)
        header = struct.pack("!i", n) if n <= 0x7FFFFFFF else struct.pack("!iQ", -1, n)
        view = memoryview(header + data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            try:
                view = view[self.sock.send(view, _NOSIGNAL) :]
            except BlockingIOError:  # the worker is not reading: wait for room, at most until the deadline
                select.select([], [self.sock], [], remaining)
            except OSError as e:
                raise _WorkerGone(str(e)) from e

    def recv(self, max_frame: int, deadline: float) -> bytes:
        while True:
            frame = self._frame(max_frame)
            if frame is not None:
                return frame
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.sock], [], [], remaining)[0]:
                raise TimeoutError
            try:
                chunk = self.sock.recv(self._CHUNK)
            except BlockingIOError:
                continue
            except OSError as e:
                raise _WorkerGone(str(e)) from e
            if not chunk:
                raise _WorkerGone("the worker closed its socket")
            self.buf += chunk

    def _frame(self, max_frame: int) -> bytes | None:
        """The next whole frame in the buffer, or None while it is incomplete."""
        if len(self.buf) < 4:
            return None
        (size,) = struct.unpack_from("!i", self.buf)
        start = 4
        if size == -1:
            if len(self.buf) < 12:
                return None
            (size,) = struct.unpack_from("!Q", self.buf, 4)
            start = 12
        if not 0 <= size <= max_frame:
            raise _WorkerGone(f"bad message length {size} (at most {max_frame})")
        if len(self.buf) < start + size:
            return None
        frame = bytes(self.buf[start : start + size])
        del self.buf[: start + size]
        return frame


class _Worker:
    """One forked worker: its pid, a pidfd to kill it by, and its socket."""

    def __init__(self, pid: int, conn: _Channel):
        self.pid = pid
        self.conn = conn
        # a pidfd names this process even after its pid is reused (Linux >= 5.3); plain pids elsewhere
        self.pidfd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
        self.layers: dict[str, str] = {}

    def alive(self) -> bool:
        if self.pidfd is not None:
            return not select.select([self.pidfd], [], [], 0)[0]
        try:
            os.kill(self.pid, 0)
        except OSError:
            return False
        return True

    def kill(self, wait: bool = True) -> None:
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.pidfd is not None:
            if wait:
                select.select([self.pidfd], [], [], 5.0)  # readable once the process has exited
            os.close(self.pidfd)
        self.conn.close()


class Sandbox:
    """Confined worker processes that run code cells against host-side APIs.

    Example:
        >>> sb = Sandbox()
        >>> sb.execute("x = 2\\nprint(x * 21)", lambda app, api, kw: (200, {})).output
        '42\\n'
        >>> sb.execute("import os", lambda *a: (200, {})).output.splitlines()[1]
        "UnsafeCodeError: import of module 'os' is not allowed; allowed: bisect, calendar, ..."
        >>> sorted(sb.profile()["layers"])
        ['landlock', 'netns', 'rlimits', 'seccomp', 'uid']
        >>> sb.close()
    """

    def __init__(self, config: SandboxConfig | None = None):
        self.config = config or SandboxConfig()
        self._zygote: subprocess.Popen | None = None
        self._ctrl: socket.socket | None = None
        self._hash_seed: int | None = None
        self._worker: _Worker | None = None
        self._spare: _Worker | None = None
        self._seed = 100
        self._notice = False
        self.layers: dict[str, str] = {}
        self.restarts = 0
        self.ignored_messages = 0
        # a done message holds two capped texts (output, traceback), JSON-escaped at up to 12 bytes a character
        self._max_frame = max(_MIN_FRAME, 32 * self.config.max_output + 2 * self.config.max_request_bytes)

    # -- processes ---------------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """Pid of the current worker (None before the first cell of an episode)."""
        return self._worker.pid if self._worker is not None else None

    @property
    def zygote_pid(self) -> int | None:
        return self._zygote.pid if self._zygote is not None else None

    def _start_zygote(self, hash_seed: int) -> None:
        self._stop_zygote()
        # message boundaries on Linux; elsewhere a stream (one small request, one small reply at a time)
        kind = socket.SOCK_SEQPACKET if sys.platform.startswith("linux") else socket.SOCK_STREAM
        host, child = socket.socketpair(socket.AF_UNIX, kind)
        # The zygote starts in an empty directory that is removed as soon as it runs: its cwd (and its
        # workers' until they chdir) is then a deleted folder where nothing can be created, and no folder
        # is left behind even if this process is killed.
        workdir = tempfile.mkdtemp(prefix="evolver-appworld-")
        cfg = {
            "memory_mb": self.config.memory_mb,
            "episode_cpu_s": self.config.episode_cpu_s,
            "uid": self.config.uid,
            "disable": list(self.config.disable),
            "seccomp_path": _seccomp_path(),
        }
        try:
            self._zygote = subprocess.Popen(
                [sys.executable, "-S", "-s", "-B", "-P", str(_WORKER), str(child.fileno()), json.dumps(cfg)],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd=workdir,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": str(hash_seed)},
                close_fds=True,
                start_new_session=True,
            )
        finally:
            child.close()
            os.rmdir(workdir)
        self._ctrl = host
        host.settimeout(60.0)
        try:
            ready = json.loads(host.recv(4096).decode() or "{}")
        except (OSError, ValueError) as e:
            self._stop_zygote()
            raise RuntimeError(f"the sandbox zygote did not start: {e}") from e
        if ready.get("op") != "ready":
            self._stop_zygote()
            raise RuntimeError("the sandbox zygote did not start")
        self._hash_seed = hash_seed

    def _stop_zygote(self) -> None:
        for w in (self._worker, self._spare):
            if w is not None:
                w.kill()
        self._worker = self._spare = None
        self._kill_strays(keep=())
        if self._ctrl is not None:
            self._ctrl.close()
            self._ctrl = None
        if self._zygote is not None:
            self._zygote.kill()
            self._zygote.wait()
            self._zygote = None

    def _fork(self) -> _Worker:
        """Ask the zygote for a fresh worker (its first message, ``ready``, is read by ``_ready``)."""
        if self._zygote is None or self._zygote.poll() is not None or self._hash_seed != self._seed:
            self._start_zygote(self._seed)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            socket.send_fds(self._ctrl, [json.dumps({"op": "spawn", "seed": self._seed}).encode()], [theirs.fileno()])
            reply = json.loads(self._ctrl.recv(4096).decode())
        finally:
            theirs.close()
        return _Worker(int(reply["pid"]), _Channel(ours))

    def _ready(self, worker: _Worker) -> _Worker:
        msg = self._recv(worker, time.monotonic() + 30.0, cell=None)
        if msg.get("op") != "ready" or not isinstance(msg.get("layers"), dict):
            worker.kill()
            raise RuntimeError("the sandbox worker did not start")
        worker.layers = {str(k): str(v) for k, v in msg["layers"].items()}
        if worker.layers != self.layers:
            self.layers = dict(worker.layers)
            missing = tuple(sorted(k for k, v in self.layers.items() if v != "on"))
            if missing and missing not in _warned:
                _warned.add(missing)
                warnings.warn(
                    "AppWorld sandbox runs without OS layers "
                    + "; ".join(f"{k} ({self.layers[k]})" for k in missing)
                    + " - see docs/security.md for what is then at risk",
                    RuntimeWarning,
                    stacklevel=4,
                )
        return worker

    def _new_worker(self) -> _Worker:
        spare, self._spare = self._spare, None
        if spare is not None and spare.alive():
            worker = self._ready(spare)
        else:
            if spare is not None:
                spare.kill()
            worker = self._ready(self._fork())
        self._spare = self._fork()  # forked now, read when the next episode starts
        return worker

    def _drop_worker(self) -> None:
        if self._worker is not None:
            # SIGKILL cannot be caught and the worker cannot create processes, so it is gone without waiting
            # (the zygote reaps it); a worker that could fork is waited for, then its strays are killed
            self._worker.kill(wait=self.layers.get("seccomp") != "on" or self.layers.get("uid") != "on")
            self._worker = None
            self._kill_strays(keep=(self._spare.pid,) if self._spare is not None else ())

    def _kill_strays(self, keep: tuple[int, ...]) -> None:
        """Kill every process under the zygote but ``keep``: what a worker forked, when it could.

        With seccomp and the uid layer on, a worker cannot create processes and there is nothing to do.
        Orphans of a dead worker are re-parented to the zygote (a child subreaper), so they are found here.
        """
        if self._zygote is None or (self.layers.get("seccomp") == "on" and self.layers.get("uid") == "on"):
            return
        for _ in range(10):
            strays = [p for p in _descendants(self._zygote.pid, skip=set(keep))]
            if not strays:
                return
            for p in strays:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def close(self) -> None:
        """Kill the worker, the spare and the zygote; no process of this sandbox survives."""
        self._stop_zygote()

    def __del__(self) -> None:  # best effort: do not leave processes behind
        try:
            self._stop_zygote()
        except Exception:
            pass

    def profile(self) -> dict[str, Any]:
        """The OS layers of the current worker: ``{"layers": {name: "on" | "off: reason"}, "active": [...]}``."""
        if not self.layers:
            self._worker = self._worker or self._new_worker()
        return {"layers": dict(self.layers), "active": [k for k in LAYERS if self.layers.get(k) == "on"]}

    # -- messages --------------------------------------------------------------------------------
    def _send(self, worker: _Worker, msg: dict[str, Any], deadline: float) -> None:
        worker.conn.send(json.dumps(msg).encode(), deadline)

    def _recv(self, worker: _Worker, deadline: float, cell: str | None) -> dict[str, Any]:
        """The next message of ``cell`` (None: of no cell) before ``deadline``; everything else is counted and ignored.

        The deadline is checked before every message, so a stream of frames that never ends still ends here.
        """
        while True:
            if time.monotonic() >= deadline:
                raise TimeoutError
            data = worker.conn.recv(self._max_frame, deadline)
            try:
                msg = json.loads(data)
            except (UnicodeDecodeError, ValueError, RecursionError):
                msg = None
            if isinstance(msg, dict) and msg.get("cell") == cell and isinstance(msg.get("op"), str):
                return msg
            self.ignored_messages += 1

    # -- running cells ---------------------------------------------------------------------------
    def reset(self, seed: int = 100) -> None:
        """Start the episode in a fresh interpreter: ``random`` seeded and the hash seed set from ``seed``."""
        self._seed = int(seed)
        self._notice = False
        self._drop_worker()
        if self._hash_seed is not None and self._hash_seed != self._seed:
            self._stop_zygote()
        self._worker = self._new_worker()

    def execute(self, code: str, handler: Handler) -> CellResult:
        """Run one cell; ``handler(app, api, kwargs) -> (status, body)`` answers its API calls."""
        if not isinstance(code, str) or not code.strip():
            return CellResult("No code available to execute.")
        try:
            check_code(code)
        except SyntaxError as e:
            line = (e.text or "").rstrip("\n")
            return CellResult(f"Execution failed. Traceback:\nSyntax error in line:\n{line}\nMessage: {e.msg}")
        except UnsafeCodeError as e:
            return CellResult(f"Execution failed. Traceback:\nUnsafeCodeError: {e}", fault="unsafe")
        except (ValueError, RecursionError, MemoryError) as e:  # null bytes, absurd nesting
            return CellResult(f"Execution failed. Traceback:\nSyntax error in line:\n\nMessage: {e}", fault="unsafe")
        return self._run(code, handler, raw=False, audit=True)

    def _execute_unguarded(self, code: str, handler: Handler | None = None, audit: bool = False) -> CellResult:
        """Run ``code`` with the real builtins and no static check: a cell that escaped the language layer.

        ``audit=True`` keeps the worker's audit gate armed (a cell that escaped the builtins but not the
        gate). For tests of the layers below the language guard only; the environment never calls it.
        """
        return self._run(code, handler or (lambda *a: (404, {"message": "no API"})), raw=True, audit=audit)

    def _run(self, code: str, handler: Handler, raw: bool, audit: bool) -> CellResult:
        cfg = self.config
        restarted = self._notice
        if self._worker is not None and not self._worker.alive():
            self._drop_worker()  # died between steps (killed from outside, or its CPU budget ran out)
            restarted = True
        if self._worker is None:
            self._worker = self._new_worker()
        self._notice = False
        worker, cell = self._worker, secrets.token_hex(8)
        result = CellResult("", restarted=restarted)
        deadline = time.monotonic() + cfg.wall_s + cfg.grace_s
        calls = replied = 0  # counted here: an escaped worker's own counts mean nothing
        try:
            self._send(
                worker,
                {
                    "op": "exec",
                    "cell": cell,
                    "code": code,
                    "raw": raw,
                    "audit": audit,
                    "wall_s": cfg.wall_s,
                    "cpu_s": cfg.cpu_s,
                    "max_output": cfg.max_output,
                    "max_calls": cfg.max_calls,
                    "max_request_bytes": cfg.max_request_bytes,
                },
                deadline,
            )
            while True:
                msg = self._recv(worker, deadline, cell)
                if msg["op"] == "done":
                    output = msg.get("output")
                    result.output = output if isinstance(output, str) else ""
                    fault = msg.get("fault")
                    if fault == "timeout":
                        raise TimeoutError
                    result.fault = fault if fault in ("memory", "recursion", "limit") else None
                    break
                if msg["op"] != "call":
                    self.ignored_messages += 1
                    continue
                calls += 1
                status, reply = self._answer(msg, cell, handler, calls, replied)
                replied += len(reply)
                result.calls.append((str(msg.get("app"))[:200], str(msg.get("api"))[:200], status))
                worker.conn.send(reply, deadline)
                del reply  # nothing of a reply stays in the host once it is sent
        except TimeoutError:
            partial = result.output
            self._fault_restart()
            text = f"Execution failed. Traceback:\nExecution timed out after {cfg.wall_s:g} seconds.\n{RESTART_NOTICE}"
            result.output = (partial + "\n" if partial else "") + text
            result.fault, result.restarted = "timeout", True
        except _WorkerGone:
            self._fault_restart()
            result.output = (
                "Execution failed. Traceback:\nThe Python process ended unexpectedly (it may have exceeded a "
                f"resource limit or broken the sandbox protocol).\n{RESTART_NOTICE}"
            )
            result.fault, result.restarted = "crash", True
        if result.restarted and result.fault not in ("timeout", "crash"):
            result.output = f"{RESTART_NOTICE}\n{result.output}"
        return result

    def _answer(self, msg: dict[str, Any], cell: str, handler: Handler, calls: int, replied: int) -> tuple[int, bytes]:
        """``(status, reply frame)`` for the ``calls``-th call of a cell that has received ``replied`` bytes."""
        cfg = self.config
        app, api, kwargs = msg.get("app"), msg.get("api"), msg.get("kwargs")
        if calls > cfg.max_calls:
            status, body = 429, {"message": f"Maximum number of API calls per execution ({cfg.max_calls}) reached."}
        elif replied >= cfg.max_step_reply_bytes:
            status, body = 429, {
                "message": f"This step has received {replied} bytes of API replies (at most "
                f"{cfg.max_step_reply_bytes} per step); the call was not run. Ask for less, or go on in the next step."
            }
        elif not (isinstance(app, str) and isinstance(api, str) and isinstance(kwargs, dict)):
            status, body = 422, {"message": "An API call needs an app name, an API name and keyword arguments."}
        else:
            status, body = handler(app, api, kwargs)
        reply = json.dumps({"cell": cell, "status": status, "body": body}).encode()
        if len(reply) > cfg.max_step_reply_bytes:
            message = (
                f"The response takes {len(reply)} bytes, more than one step may receive "
                f"({cfg.max_step_reply_bytes}); ask for less."
            )
            status, reply = 413, json.dumps({"cell": cell, "status": 413, "body": {"message": message}}).encode()
        return status, reply

    def _fault_restart(self) -> None:
        """Kill the worker after a fault; the next cell gets a fresh one (never a replay)."""
        self._drop_worker()
        self.restarts += 1


def _descendants(root: int, skip: set[int]) -> list[int]:
    """Live descendants of ``root`` (from ``/proc``), leaving out the subtrees of ``skip``."""
    children: dict[int, list[int]] = {}
    if not os.path.isdir("/proc"):
        return []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in skip:
                out.append(child)
                stack.append(child)
    return out


def _seccomp_path() -> str | None:
    """Directory holding the ``pyseccomp`` module, for the worker that runs without site-packages."""
    try:
        import pyseccomp
    except Exception:  # not installed, or libseccomp missing
        return None
    return str(Path(pyseccomp.__file__).parent)
