"""``evolver appworld``: diagnostics of the AppWorld code sandbox.

* ``main`` - ``evolver appworld doctor``: start a sandbox, print each OS layer (on, or off and why)
  and run one probe per layer from a cell that has escaped the language guard.
"""

from __future__ import annotations

import argparse
import os

from .sandbox import LAYERS, Sandbox, SandboxConfig

__all__ = ["main"]

# layer -> (probe run with the real builtins, what the probe prints when the layer holds)
_PROBES = {
    "netns": ("import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=1)\n    print('open')\n"
              "except OSError:\n    print('closed')", "closed"),
    "rlimits": ("import resource\nprint(resource.getrlimit(resource.RLIMIT_FSIZE)[1] == 0)", "True"),
    "uid": ("import os\nprint(os.getuid() != 0)", "True"),
    "landlock": ("try:\n    open('/etc/hostname').read()\n    print('readable')\nexcept OSError:\n    print('denied')",
                 "denied"),
    "seccomp": ("import os\ntry:\n    os.kill(1, 0)\n    print('signal sent')\nexcept OSError:\n    print('denied')",
                "denied"),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="evolver appworld", description="Diagnose the AppWorld code sandbox.")
    ap.add_argument("command", choices=["doctor"], help="doctor: print the active OS layers of the sandbox")
    ap.parse_args(argv)
    sb = Sandbox(SandboxConfig(wall_s=5.0))
    try:
        sb.reset()
        layers = sb.profile()["layers"]
        print(f"AppWorld sandbox on this machine (pid {os.getpid()}, uid {os.geteuid()}):")
        for name in LAYERS:
            state = layers.get(name, "off: not reported")
            code, expect = _PROBES[name]
            got = sb._execute_unguarded(code).output.strip()
            probe = "holds" if got == expect else f"does not hold ({got[-80:]!r})"
            print(f"  {name:<9} {state:<40} probe: {probe}")
        active = [n for n in LAYERS if layers.get(n) == "on"]
        print(f"{len(active)} of {len(LAYERS)} OS layers active; see docs/security.md for what a missing one risks.")
    finally:
        sb.close()
    return 0 if len(active) == len(LAYERS) else 1
