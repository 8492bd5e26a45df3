"""The Milvus launcher stops its server on SIGTERM and SIGHUP, not only on Ctrl-C: no process left, ports free."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ETCD_PORT = 2379  # the embedded etcd's fixed client port: one such server per machine


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.slow  # a real Milvus server starts: 10-25 s
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_stops_the_milvus_process_and_frees_its_ports(tmp_path, sig):
    pytest.importorskip("milvus", reason="the launcher needs the `milvus` package (extra: scale)")
    if _listening(ETCD_PORT):
        pytest.skip(f"port {ETCD_PORT} is taken: another Milvus server runs on this machine")
    root = Path(__file__).resolve().parents[2]
    pid = None
    proc = subprocess.Popen([sys.executable, "-m", "wrappers.navigation.local_server", "--dir", str(tmp_path / "m")],
                            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = ""
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line or line.startswith("Milvus server at"):
                break
        match = re.search(r"127\.0\.0\.1:(\d+) \(pid (\d+)", line)
        assert match, f"the launcher did not report a server: {line!r}"
        port, pid = int(match.group(1)), int(match.group(2))
        assert _alive(pid) and _listening(port) and _listening(ETCD_PORT)
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == 128 + sig
        assert not _alive(pid), f"the Milvus process {pid} outlived its launcher"
        assert not _listening(port) and not _listening(ETCD_PORT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if pid is not None and _alive(pid):  # never leave it behind, whatever the assertions said
            os.kill(pid, signal.SIGKILL)
