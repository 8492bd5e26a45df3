"""The README's Python examples run as written (in a temporary folder)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
# A block that needs a language-model endpoint of the reader's own is shown, not run.
RUNNABLE = [b for b in BLOCKS if "roles.yaml" not in b]


def test_readme_has_examples():
    assert len(RUNNABLE) >= 3


@pytest.mark.parametrize("block", RUNNABLE, ids=[f"block{i}" for i in range(len(RUNNABLE))])
def test_readme_example_runs(block, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {"__name__": "readme_example"})
