"""Host side of the code sandbox: one worker process per environment, limits, restarts, replay.

* ``Sandbox`` - runs code cells in a worker process (``_worker.py``) with CPU-time, wall-time,
  memory, output and API-call limits; API calls come back to the host through a pipe.
* ``CellResult`` - the observation string of one cell and the kind of contained fault, if any.
* ``SandboxConfig`` - the limits.

The worker never holds world state: every API call is answered by the host (``handler``), so
the databases stay in the host and a step can be rolled back there. When a cell hits a limit,
kills its worker, or the worker dies, the host kills and restarts the worker and replays the
cells that succeeded before (answering their API calls from the recorded transcript, so
replay does not touch the world), which restores the namespace to its state before the step.
Messages are JSON, never pickle: the host never deserialises objects the worker made.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from .safety import UnsafeCodeError, check_code

__all__ = ["Sandbox", "SandboxConfig", "CellResult"]

_WORKER = Path(__file__).with_name("_worker.py")
_MAX_MESSAGE = 8 * 2**20
Handler = Callable[[str, str, dict[str, Any]], tuple[int, Any]]


@dataclass
class SandboxConfig:
    """Limits of one sandbox."""

    wall_s: float = field(default=10.0, metadata={"help": "Wall-clock seconds per cell."})
    cpu_s: float = field(default=10.0, metadata={"help": "CPU seconds per cell."})
    memory_mb: int = field(
        default=256, metadata={"help": "Extra address space the worker may allocate, in MB."}
    )
    max_output: int = field(default=20000, metadata={"help": "Characters of printed output kept per cell."})
    max_calls: int = field(default=1000, metadata={"help": "API calls allowed per cell."})
    grace_s: float = field(
        default=2.0, metadata={"help": "Seconds past wall_s before the host kills the worker."}
    )

    def __post_init__(self) -> None:
        for name in ("wall_s", "cpu_s", "grace_s"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"SandboxConfig.{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("memory_mb", "max_output", "max_calls"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"SandboxConfig.{name} must be a positive int, got {getattr(self, name)!r}")


@dataclass
class CellResult:
    """Outcome of one cell: the observation and ``fault`` (None, or why the world was rolled back)."""

    output: str
    fault: str | None = None
    calls: list[tuple[str, str, dict[str, Any], int, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.fault is None


class _WorkerGone(Exception):
    pass


class Sandbox:
    """A worker process that runs code cells against host-side APIs.

    Example:
        >>> sb = Sandbox()
        >>> sb.execute("x = 2\\nprint(x * 21)", lambda app, api, kw: (200, {})).output
        '42\\n'
        >>> sb.execute("import os", lambda *a: (200, {})).output.splitlines()[1]
        "UnsafeCodeError: import of module 'os' is not allowed; allowed: bisect, calendar, ..."
        >>> sb.close()
    """

    def __init__(self, config: SandboxConfig | None = None):
        self.config = config or SandboxConfig()
        self._proc: subprocess.Popen | None = None
        self._rconn: Connection | None = None
        self._wconn: Connection | None = None
        self._history: list[tuple[str, list[tuple[int, Any]]]] = []
        self._seed = 100
        self._tmp = tempfile.mkdtemp(prefix="evolver-appworld-")
        self.restarts = 0

    # -- process management ----------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _start(self) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-B",
                str(_WORKER),
                str(to_child_r),
                str(from_child_w),
                str(self.config.memory_mb),
            ],
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=self._tmp,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            close_fds=True,
            start_new_session=True,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._wconn = Connection(to_child_w, readable=False)
        self._rconn = Connection(from_child_r, writable=False)
        if self._recv(timeout=30.0).get("op") != "ready":
            raise RuntimeError("the sandbox worker did not start")

    def _kill(self) -> None:
        if self._proc is not None:
            try:
                self._proc.kill()
            except ProcessLookupError:
                pass
            self._proc.wait()
            self._proc = None
        for conn in (self._rconn, self._wconn):
            if conn is not None:
                conn.close()
        self._rconn = self._wconn = None

    def _ensure(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self._kill()
            self._start()
            self._send({"op": "reset", "seed": self._seed})
            self._recv(timeout=10.0)

    def close(self) -> None:
        self._kill()
        try:
            os.rmdir(self._tmp)
        except OSError:
            pass

    def __del__(self) -> None:  # best effort: do not leave workers behind
        try:
            self._kill()
        except Exception:
            pass

    # -- messages --------------------------------------------------------------------------------
    def _send(self, msg: dict[str, Any]) -> None:
        try:
            self._wconn.send_bytes(json.dumps(msg).encode())
        except (OSError, AttributeError) as e:
            raise _WorkerGone(str(e)) from e

    def _recv(self, timeout: float) -> dict[str, Any]:
        try:
            if not self._rconn.poll(max(timeout, 0.0)):
                raise TimeoutError
            data = self._rconn.recv_bytes(_MAX_MESSAGE)
        except (EOFError, OSError, AttributeError) as e:
            raise _WorkerGone(str(e)) from e
        try:
            msg = json.loads(data.decode())
        except (UnicodeDecodeError, ValueError) as e:
            raise _WorkerGone(f"unreadable message from worker: {e}") from e
        if not isinstance(msg, dict):
            raise _WorkerGone("malformed message from worker")
        return msg

    # -- running cells ---------------------------------------------------------------------------
    def reset(self, seed: int = 100) -> None:
        """Clear the namespace (fresh ``apis``) and reseed ``random`` inside the worker."""
        self._seed = int(seed)
        self._history = []
        try:
            self._ensure()
            self._send({"op": "reset", "seed": self._seed})
            self._recv(timeout=10.0)
        except (_WorkerGone, TimeoutError):
            self._kill()
            self._ensure()

    def execute(self, code: str, handler: Handler) -> CellResult:
        """Run one cell; ``handler(app, api, kwargs) -> (status, body)`` answers its API calls."""
        if not isinstance(code, str) or not code.strip():
            return CellResult("No code available to execute.")
        try:
            check_code(code)
        except SyntaxError as e:
            line = (e.text or "").rstrip("\n")
            return CellResult(
                f"Execution failed. Traceback:\nSyntax error in line:\n{line}\nMessage: {e.msg}"
            )
        except UnsafeCodeError as e:
            return CellResult(f"Execution failed. Traceback:\nUnsafeCodeError: {e}", fault="unsafe")
        except (ValueError, RecursionError, MemoryError) as e:  # null bytes, absurd nesting
            return CellResult(
                f"Execution failed. Traceback:\nSyntax error in line:\n\nMessage: {e}", fault="unsafe"
            )
        if self._proc is None or self._proc.poll() is not None:
            self._restart_and_replay()  # the worker died between steps: rebuild its namespace first
        result = self._run(code, handler, replay=None)
        if result.fault == "crash" and not result.calls:
            # the worker may have died just before this cell (killed from outside): rebuild, run once more
            self._restart_and_replay()
            result = self._run(code, handler, replay=None)
        if result.ok:
            self._history.append((code, [(c[3], c[4]) for c in result.calls]))
        else:
            self._restart_and_replay()
        return result

    def _run(self, code: str, handler: Handler | None, replay: list[tuple[int, Any]] | None) -> CellResult:
        cfg = self.config
        result = CellResult("")
        try:
            self._ensure()
            self._send(
                {
                    "op": "exec",
                    "code": code,
                    "wall_s": cfg.wall_s,
                    "cpu_s": cfg.cpu_s,
                    "max_output": cfg.max_output,
                    "max_calls": cfg.max_calls,
                }
            )
            deadline = time.monotonic() + cfg.wall_s + cfg.grace_s
            while True:
                msg = self._recv(timeout=deadline - time.monotonic())
                if msg.get("op") == "done":
                    result.output = str(msg.get("output", ""))
                    fault = msg.get("fault")
                    result.fault = fault if fault in ("timeout", "memory", "recursion", "limit") else None
                    return result
                if msg.get("op") != "call":
                    raise _WorkerGone(f"unexpected message {msg.get('op')!r}")
                app, api, kwargs = str(msg.get("app")), str(msg.get("api")), msg.get("kwargs")
                if replay is not None:
                    status, body = (
                        replay.pop(0) if replay else (500, {"message": "replay transcript exhausted"})
                    )
                else:
                    status, body = handler(app, api, kwargs if isinstance(kwargs, dict) else {})
                result.calls.append((app, api, kwargs, status, body))
                self._send({"status": status, "body": body})
        except TimeoutError:
            self._kill()
            return CellResult(
                f"Execution failed. Traceback:\nExecution timed out after {cfg.wall_s:g} seconds.",
                fault="timeout",
                calls=result.calls,
            )
        except _WorkerGone:
            self._kill()
            return CellResult(
                "Execution failed. Traceback:\nThe sandbox process ended unexpectedly (it may have "
                "exceeded a resource limit); the world was restored to its state before this step.",
                fault="crash",
                calls=result.calls,
            )

    def _restart_and_replay(self) -> None:
        """Fresh worker whose namespace is rebuilt from the cells that succeeded before."""
        self._kill()
        self.restarts += 1
        self._ensure()
        for i, (code, transcript) in enumerate(self._history):
            res = self._run(code, None, replay=list(transcript))
            if not res.ok:  # cannot rebuild past this cell; keep what was rebuilt
                self._history = self._history[:i]
                break
