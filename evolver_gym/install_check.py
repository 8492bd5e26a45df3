"""Check that ``arena`` and ``wrappers`` are this project's packages, not namesakes.

* ``check_install`` - raise ``ImportError`` with the fix when another package (a different
  ``arena`` or ``wrappers`` distribution on the registry, or a user's own ``wrappers.py``) would be
  imported in place of ours.
* ``install_hint`` - the command that installs an extra; for the extras that bring torch, how to get
  its CPU build first (pip's default on Linux is the multi-GB CUDA build).

Both names are also used by unrelated packages; installing one of them into the same environment
overwrites or shadows ours. Ours carry the marker ``__evolver_gym_package__`` in their
``__init__.py``, found by reading the file that ``import`` would load, without importing it.

Example:
    >>> check_install()  # quiet when the packages are ours
    >>> install_hint("arena")
    "pip install 'evolver-gym[arena]'"
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["MARKER", "PACKAGES", "TORCH_EXTRAS", "CPU_TORCH", "check_install", "install_hint"]

MARKER = "__evolver_gym_package__"
PACKAGES = ("arena", "wrappers")
# Extras whose dependencies pull torch (sentence-transformers does, for the memory extra).
TORCH_EXTRAS = ("train", "memory", "all")
# The torch the project is tested with, from PyTorch's CPU wheel index (what scripts/setup.sh installs).
CPU_TORCH = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


def install_hint(extra: str) -> str:
    """``pip install 'evolver-gym[extra]'``, preceded for a torch extra by the CPU build's install line.

    Example:
        >>> install_hint("train")  # doctest: +ELLIPSIS
        "pip install 'evolver-gym[train]' (without a GPU, first pip install torch==2.13.0 --index-url ...)"
    """
    command = f"pip install 'evolver-gym[{extra}]'"
    if extra in TORCH_EXTRAS:
        return f"{command} (without a GPU, first {CPU_TORCH}: else pip fetches the multi-GB CUDA build)"
    return command


def check_install(names: tuple[str, ...] = PACKAGES) -> None:
    """Raise ``ImportError`` naming the file that shadows one of our packages, and the fix."""
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None)
        if spec is None or origin is None:
            raise ImportError(
                f"evolver-gym's `{name}` package is missing; reinstall evolver-gym (pip install evolver-gym)"
            )
        path = Path(origin)
        ours = path.name == "__init__.py" and MARKER in path.read_text(encoding="utf-8", errors="replace")
        if not ours:
            raise ImportError(
                f"`import {name}` loads {origin}, which is not evolver-gym's `{name}` package: another "
                f"package or a local {name}.py has the same name. Rename the local file, or install "
                f"evolver-gym in its own virtualenv (python -m venv .venv && .venv/bin/pip install evolver-gym)."
            )
