"""AppWorld-style environment: a seeded world of apps, code as action, sandboxed, judged on state.

* ``AppWorldEnv`` - ``evolver/AppWorld-v0`` (see :mod:`.env`).
* ``RealAppWorldEnv`` - ``evolver/AppWorldReal-v0``, an HTTP adapter to ``appworld serve environment``.
* ``compute_metrics`` - TGC / SGC overall and per difficulty.
* ``Sandbox`` / ``SandboxConfig`` - the code sandbox (threat model: ``docs/security.md``).
* ``ApiLimits`` - the host's caps on API arguments and replies.
"""

from __future__ import annotations

from .env import AppWorldEnv
from .evaluation import compute_metrics
from .guard import ApiLimits
from .sandbox import Sandbox, SandboxConfig

__all__ = ["AppWorldEnv", "RealAppWorldEnv", "compute_metrics", "Sandbox", "SandboxConfig", "ApiLimits"]


def __getattr__(name: str):
    if name == "RealAppWorldEnv":
        from .real import RealAppWorldEnv

        return RealAppWorldEnv
    raise AttributeError(name)
