"""BFCL tests need bfcl-eval (installed by scripts/setup.sh with --no-deps); without it they skip."""

from __future__ import annotations

import pytest

from evolver_gym.bfcl.package import INSTALL_HINT, bfcl_available

if not bfcl_available():
    pytest.skip(f"bfcl-eval is not installed ({INSTALL_HINT})", allow_module_level=True)
