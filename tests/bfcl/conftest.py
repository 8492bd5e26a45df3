"""BFCL tests need bfcl-eval (installed by scripts/setup.sh with --no-deps); without it they skip, saying so."""

from __future__ import annotations

from pathlib import Path

import pytest

from evolver_gym.bfcl.package import INSTALL_HINT, bfcl_available

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    if bfcl_available():
        return
    skip = pytest.mark.skip(reason=f"bfcl-eval is not installed ({INSTALL_HINT})")
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(skip)
