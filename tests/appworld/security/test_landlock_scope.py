"""Landlock's read-only rule covers the standard library's own files, not the packages installed beside it.

The standard-library folder of many interpreters holds ``site-packages`` (the base interpreter's
installed packages). With the uid layer off, Landlock alone must keep it closed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evolver_gym.appworld.sandbox import Sandbox, SandboxConfig

from .conftest import sandbox_answers, unguarded

STDLIB = Path(os.__file__).parent
SITE = STDLIB / "site-packages"


@pytest.fixture(scope="module")
def landlock_only():
    sb = Sandbox(SandboxConfig(disable=("uid", "seccomp"), wall_s=5.0))
    sb.reset()
    if sb.profile()["layers"]["landlock"] != "on":
        sb.close()
        pytest.skip("Landlock is not available here")
    yield sb
    sb.close()


@pytest.mark.skipif(not SITE.is_dir(), reason="this interpreter has no site-packages in its stdlib folder")
def test_site_packages_beside_the_stdlib_is_closed(landlock_only):
    entry = next(p for p in sorted(SITE.iterdir()) if p.is_file() or p.is_dir())
    probe = next((p for p in sorted(SITE.rglob("*.py"))), entry)
    for code in (f"import os\nprint(os.listdir({str(SITE)!r}))", f"print(open({str(probe)!r}).read(10))"):
        out = unguarded(landlock_only, code)
        assert "PermissionError" in out, (code, out)
    sandbox_answers(landlock_only)


def test_the_stdlib_itself_stays_readable(landlock_only):
    os_py = STDLIB / "os.py"
    out = unguarded(landlock_only, f"print(open({str(os_py)!r}).read(3) == {os_py.read_text()[:3]!r})")
    assert out == "True\n", out
    out = unguarded(landlock_only, "import typing\nprint(typing.get_type_hints.__name__)")
    assert out == "get_type_hints\n", out
