"""A namesake of `arena` or `wrappers` (another distribution, or a local wrappers.py) is detected."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evolver_gym.install_check import check_install

ROOT = Path(__file__).resolve().parents[2]


def test_our_packages_pass():
    check_install()


def test_a_local_wrappers_py_is_named_with_the_fix(tmp_path, monkeypatch):
    (tmp_path / "wrappers.py").write_text("x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "wrappers", raising=False)  # what a fresh process would import
    with pytest.raises(ImportError, match=r"wrappers\.py.*virtualenv"):
        check_install()


def test_a_namesake_arena_package_is_detected(tmp_path, monkeypatch):
    (tmp_path / "arena").mkdir()
    (tmp_path / "arena" / "__init__.py").write_text('"""Another project called arena."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "arena", raising=False)
    with pytest.raises(ImportError, match="not evolver-gym's `arena` package"):
        check_install()


def test_the_evolver_command_refuses_to_run_with_a_shadowing_wrappers_py(tmp_path):
    (tmp_path / "wrappers.py").write_text("x = 1\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    out = subprocess.run([sys.executable, "-W", "ignore", "-m", "evolver_train.cli", "play", "--n", "1"],
                         cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and str(tmp_path / "wrappers.py") in out.stderr
