"""A Milvus standalone server on this machine, for a shared experience pool without a cluster.

* ``LocalMilvusServer`` - start the embedded Milvus server of the ``milvus`` package (the real
  standalone binary with embedded etcd and local storage) in a data directory; ``uri`` is what
  ``ExperiencePool`` takes.

Every process that opens ``ExperiencePool(server.uri)`` shares one pool (milvus-lite, by contrast,
is one process's file). The client port is the first free one from 19530 up, but the embedded etcd
always binds 127.0.0.1:2379-2380, so one such server runs per machine (a second one exits at once,
with that error).

Server settings (``settings=``, or ``--set KEY=VALUE`` on the command line) go into the server's
``milvus.yaml``. The one that matters for search latency is when a segment is sealed: Milvus seals a
growing segment once its estimated size reaches ``dataCoord.segment.sealProportion`` (0.23) of
``dataCoord.segment.maxSize`` (512 MB); it estimates an experience row at about 3 KB, so a segment is
sealed at 40k rows, and 100k experiences lie in three segments (40k, 40k, 20k), each with its own
HNSW graph that every search visits. ``BULK_POOL_SETTINGS`` (``sealProportion`` 0.9) seals at about
157k rows instead: one graph for 100k experiences, searched in 4.1-5.0 ms p50 instead of 6-13 ms
(nearest row first in 83-99% of searches across two index builds, 98.7% on three graphs). It is not
the default, because a small pool that is never flushed (a training run's) then
loses Milvus's temporary index on its growing segment: a search over 10k unflushed rows took 15 ms
instead of 2.4 ms (``benchmarks/results/experience_server.md``).
Command line (blocks until Ctrl-C, SIGTERM or SIGHUP, each of which stops the Milvus process and frees
its ports before the launcher exits)::

    python -m wrappers.navigation.local_server --dir /var/lib/evolver-milvus [--set KEY=VALUE ...]

Example:
    >>> with LocalMilvusServer("/tmp/milvus-data") as server:                 # doctest: +SKIP
    ...     pool = ExperiencePool(server.uri)
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["LocalMilvusServer", "BULK_POOL_SETTINGS"]

#: Settings for a pool that is loaded in bulk and flushed (``ExperiencePool.flush``) before it is
#: searched: one HNSW graph per ~157k experiences instead of per 40k (see the module docstring).
BULK_POOL_SETTINGS: dict[str, Any] = {"dataCoord.segment.sealProportion": 0.9}


class LocalMilvusServer:
    """The ``milvus`` package's embedded Milvus standalone server, started in ``base_dir``.

    Args:
        base_dir: Data, logs and configuration of the server (kept across restarts).
        startup_timeout: Seconds to wait for the server's health check.
        settings: ``milvus.yaml`` settings by dotted key (e.g. :data:`BULK_POOL_SETTINGS`), replacing
            the package's defaults; written to ``base_dir/configs/milvus.yaml``. A key that is not in
            the package's configuration template is refused.

    Attributes after :meth:`start`: ``uri`` (``http://127.0.0.1:PORT``), ``port``, ``pid`` and
    ``startup_seconds``.
    """

    def __init__(self, base_dir: str | os.PathLike, *, startup_timeout: float = 120.0,
                 settings: Mapping[str, Any] | None = None) -> None:
        if not str(base_dir):
            raise ValueError(f"base_dir must name a directory, got {base_dir!r}")
        if float(startup_timeout) <= 0:
            raise ValueError(f"startup_timeout must be > 0 seconds, got {startup_timeout!r}")
        self.base_dir = Path(base_dir).absolute()
        self.startup_timeout = float(startup_timeout)
        self.settings = dict(settings or {})
        for key, value in self.settings.items():
            if not isinstance(value, (str, int, float, bool)):
                raise ValueError(f"server setting {key!r} must be a str, int, float or bool, got {value!r}")
        self._server: Any = None
        self.startup_seconds: float | None = None

    def start(self) -> LocalMilvusServer:
        """Start the server and wait until it answers its health check."""
        try:
            from milvus import MilvusServer
        except ImportError as exc:
            raise RuntimeError("the local Milvus server needs the `milvus` package: "
                               "pip install 'evolver-gym[scale]'") from exc
        if self._server is not None:
            return self
        server = MilvusServer(wait_for_started=False)
        known = _setting_keys(server.config.template_text)
        unknown = sorted(set(self.settings) - known)
        if unknown:  # the package's writer would drop it without a word
            raise ValueError(f"unknown Milvus server setting {unknown[0]!r}: "
                             f"not a key of {server.config.template_file}")
        self.base_dir.mkdir(parents=True, exist_ok=True)
        server.set_base_dir(str(self.base_dir))
        for key, value in self.settings.items():
            server.config.set(key, str(value).lower() if isinstance(value, bool) else value)
        began = time.perf_counter()
        server.start()
        try:
            self._wait_healthy(server, began)
        except BaseException:
            server.stop()
            raise
        self.startup_seconds = time.perf_counter() - began
        self._server = server
        return self

    def _wait_healthy(self, server: Any, began: float) -> None:
        # The package's own wait keeps polling after the server process died; stop at once instead.
        url = f"http://127.0.0.1:{server.webservice_port}/healthz"
        while time.perf_counter() - began < self.startup_timeout:
            code = server.server_proc.poll()
            if code is not None:
                raise RuntimeError(f"the Milvus server exited with code {code} while starting: {self._last_error()} "
                                   f"(logs in {self.base_dir / 'logs'})")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if b"OK" in resp.read():
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"the Milvus server in {self.base_dir} did not answer {url} within "
                           f"{self.startup_timeout:.0f} s (logs in {self.base_dir / 'logs'})")

    def _last_error(self) -> str:
        log = self.base_dir / "logs" / "milvus-stdout.log"
        errors = [line for line in log.read_text(errors="replace").splitlines() if "[ERROR]" in line] \
            if log.is_file() else []
        return errors[-1][:300] if errors else "no error in its log"

    @property
    def port(self) -> int:
        self._check_started()
        return int(self._server.listen_port)

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        self._check_started()
        return int(self._server.server_proc.pid)

    def rss_bytes(self) -> int:
        """Resident memory of the server process (Linux ``/proc``)."""
        with open(f"/proc/{self.pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError(f"no VmRSS for the Milvus server process {self.pid}")

    def _check_started(self) -> None:
        if self._server is None:
            raise RuntimeError("the Milvus server is not started; call start() first")

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server (its data stays in ``base_dir``): SIGTERM, then SIGKILL after ``timeout`` s.

        The ``milvus`` package's own ``stop`` kills after 1 s and raises if the killed process has not
        exited 3 s later, which a loaded machine can exceed; the process is reaped here first.
        """
        if self._server is None:
            return
        proc = self._server.server_proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=timeout)
        self._server.stop()  # the process has exited: this closes its log files
        self._server = None

    def __enter__(self) -> LocalMilvusServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _setting_keys(template: str) -> set[str]:
    """Dotted keys of a ``milvus.yaml`` (two spaces an indentation level, as Milvus writes it)."""
    keys, path = set(), []
    for line in template.splitlines():
        match = re.match(r"^( *)([A-Za-z0-9_]+):", line)
        if match and not line.lstrip().startswith("#"):
            path = path[: len(match.group(1)) // 2] + [match.group(2)]
            keys.add(".".join(path))
    return keys


def _parse_setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"a server setting is KEY=VALUE, got {text!r}")
    return key, value


def _exit_on_signal(signum: int, frame: Any) -> None:
    # SystemExit unwinds through ``with LocalMilvusServer(...)``, whose exit stops the server process.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run a local Milvus standalone server for a shared experience pool.")
    parser.add_argument("--dir", required=True, help="data directory of the server")
    parser.add_argument("--set", type=_parse_setting, nargs="*", default=[], metavar="KEY=VALUE",
                        help="milvus.yaml setting by dotted key, e.g. dataCoord.segment.sealProportion=0.5")
    args = parser.parse_args(argv)
    # A service manager, a job scheduler or `kill` sends SIGTERM (a closed terminal SIGHUP): without a handler
    # the launcher would die at once and leave the Milvus binary running, holding its ports.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    with LocalMilvusServer(args.dir, settings=dict(args.set)) as server:
        print(f"Milvus server at {server.uri} (pid {server.pid}, started in {server.startup_seconds:.1f} s, "
              f"data in {server.base_dir}); Ctrl-C or SIGTERM stops it", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
