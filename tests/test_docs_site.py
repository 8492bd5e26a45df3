"""The docs site builds with no warning: `mkdocs build --strict`, not quiet (quiet hides the warnings strict counts)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_docs_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra: pip install -e '.[docs]'")
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    assert mkdocs, "mkdocs is installed with mkdocstrings but has no command"
    done = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    warnings = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert done.returncode == 0 and not warnings, "\n".join(warnings) or done.stderr[-3000:]
    for page in ("index.html", "tutorials/index.html", "tutorials/arena/index.html", "reference/wrappers/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
