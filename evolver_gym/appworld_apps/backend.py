"""The host side of the real apps: find the ``appworld`` interpreter, start the app server, talk to it.

* ``find_python()`` - the interpreter of the virtualenv that holds ``appworld==0.1.3.post1``
  (``EVOLVER_APPWORLD_PYTHON``, else ``<repo>/.venv-appworld/bin/python``), or None.
* ``unavailable_reason()`` - why the real apps cannot run here (None when they can).
* ``world_dir(seed)`` - where the generated world of ``seed`` is cached.
* ``AppsServer`` - one server process (``_server.py`` under that interpreter), JSON lines over pipes.

AppWorld's dependencies (pydantic v1, an old FastAPI, ...) conflict with this project's pins, so the
apps never load into this interpreter: they run in their own process and only API calls cross over.
"""

from __future__ import annotations

import functools
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["AppsServer", "AppsServerError", "find_python", "unavailable_reason", "world_dir", "WORLD_VERSION"]

WORLD_VERSION = 2  # bump with _server.WORLD_VERSION when the generated world changes
_SERVER = Path(__file__).with_name("_server.py")
_REPO = Path(__file__).resolve().parents[2]


class AppsServerError(RuntimeError):
    """The app server failed to start, answered with an error, or went silent."""


def find_python() -> str | None:
    """The ``appworld`` virtualenv's interpreter, or None when there is none.

    Example:
        >>> p = find_python()
        >>> p is None or p.endswith("python") or "python" in p
        True
    """
    candidates = [os.environ.get("EVOLVER_APPWORLD_PYTHON"), str(_REPO / ".venv-appworld" / "bin" / "python")]
    for cand in candidates:
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return cand
    return None


def unavailable_reason() -> str | None:
    """Why the real apps cannot run here, or None.

    The apps must be installed (``bash scripts/setup.sh appworld-apps``: ``appworld==0.1.3.post1`` in
    ``.venv-appworld`` and its ``appworld install`` step, which unpacks the encrypted app code).
    """
    python = find_python()
    if python is None:
        return (
            "no appworld interpreter: run `bash scripts/setup.sh appworld-apps` or set EVOLVER_APPWORLD_PYTHON "
            "to a Python with appworld==0.1.3.post1 installed"
        )
    return _package_problem(python)


@functools.lru_cache(maxsize=8)
def _package_problem(python: str) -> str | None:
    # ask the interpreter itself where appworld is (its site-packages may be anywhere)
    probe = (
        "import importlib.util as u; s = u.find_spec('appworld'); print(s.submodule_search_locations[0] if s else '')"
    )
    try:
        where = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{python} does not run: {e}"
    if not where:
        return f"{python} has no appworld package: install appworld==0.1.3.post1 there"
    if not Path(where, "apps", "phone", "apis.py").is_file():
        return f"appworld's apps are not unpacked in {where}: run `{Path(python).parent}/appworld install`"
    return None


def world_dir(seed: int) -> Path:
    """The cache folder of the generated world of ``seed`` (``EVOLVER_APPWORLD_APPS_CACHE`` overrides the root)."""
    root = os.environ.get("EVOLVER_APPWORLD_APPS_CACHE") or str(
        Path.home() / ".cache" / "evolver_gym" / "appworld_apps"
    )
    return Path(root) / f"world-seed{int(seed)}-v{WORLD_VERSION}"


class AppsServer:
    """One process serving the real apps; requests and replies are JSON lines.

    Args:
        python: the interpreter to run ``_server.py`` with (default :func:`find_python`).
        timeout_s: how long one request may take before the server is declared dead (a world build
            takes longer and gets ``build_timeout_s``).

    Example (with the apps installed)::

        with AppsServer() as server:
            world = server.open_world(seed=0)        # built once, then cached on disk
            server.request("reset", task={"instruction": "demo"})
            server.request("call", app="spotify", api="show_genres", kwargs={})  # {"status": 200, "body": [...]}
    """

    def __init__(self, python: str | None = None, timeout_s: float = 60.0, build_timeout_s: float = 1800.0):
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
        python = python or find_python()
        problem = unavailable_reason() if python is None else _package_problem(python)
        if problem is not None:
            raise AppsServerError(problem)
        self.python, self.timeout_s, self.build_timeout_s = python, float(timeout_s), float(build_timeout_s)
        self._proc: subprocess.Popen | None = None
        self._buf = b""
        self._open_dir: str | None = None
        self.world: dict[str, Any] | None = None

    def _start(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
            env["APPWORLD_ROOT"] = env.get(
                "APPWORLD_ROOT", str(Path.home() / ".cache" / "evolver_gym" / "appworld_root")
            )
            os.makedirs(env["APPWORLD_ROOT"], exist_ok=True)
            self._proc = subprocess.Popen(
                [self.python, "-u", str(_SERVER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd=env["APPWORLD_ROOT"],
                start_new_session=True,
            )
            self._buf = b""
        return self._proc

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request; return its reply, or raise :class:`AppsServerError`."""
        fresh = self._proc is None or self._proc.poll() is not None
        proc = self._start()
        if fresh and self._open_dir is not None and op not in ("build", "open"):
            self.request("open", dir=self._open_dir)  # a restarted server opens the same world again
        try:
            proc.stdin.write((json.dumps({"op": op, **fields}) + "\n").encode())
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            self.close()
            raise AppsServerError(f"the app server is gone ({e})") from e
        deadline = time.monotonic() + (self.build_timeout_s if op in ("build", "open") else self.timeout_s)
        fd = proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise AppsServerError(f"the app server did not answer {op!r} in time")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    self.close()
                    raise AppsServerError(f"the app server exited while answering {op!r}")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        reply = json.loads(line)
        if "error" in reply:
            raise AppsServerError(f"{op}: {reply['error']}")
        return reply

    def open_world(self, seed: int, people: int = 12) -> dict[str, Any]:
        """Build (once, cached on disk) and open the world of ``seed``; return its facts."""
        directory = world_dir(seed)
        self.world = self.request("build", seed=int(seed), dir=str(directory), people=int(people))["world"]
        self.request("open", dir=str(directory))
        self._open_dir = str(directory)
        return self.world

    def close(self) -> None:
        """Stop the server process."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                proc.stdin.write(b'{"op": "stop"}\n')
                proc.stdin.flush()
                proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        finally:
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass

    def __enter__(self) -> AppsServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
