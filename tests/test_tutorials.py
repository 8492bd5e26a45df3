"""Every tutorial of the docs site runs as written: its code blocks, in order, in a fresh folder.

A page's ``python`` blocks share one namespace (a page builds on its earlier blocks) and its ``bash``
blocks run in a shell whose ``PATH`` starts with this interpreter's folder (the ``evolver`` command).
A block whose first line starts with ``# not run`` needs what CI does not have (a GPU, a hosted model)
and is only shown.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

TUTORIALS = Path(__file__).resolve().parents[1] / "docs" / "tutorials"
PAGES = sorted(p for p in TUTORIALS.glob("*.md") if p.name != "index.md")
FENCE = re.compile(r"^```(python|bash)\n(.*?)^```", re.S | re.M)


def blocks(page: Path) -> list[tuple[str, str]]:
    return [(lang, code) for lang, code in FENCE.findall(page.read_text(encoding="utf-8"))
            if not code.lstrip().startswith("# not run")]


def test_the_tutorials_are_listed_on_their_index_page():
    index = (TUTORIALS / "index.md").read_text(encoding="utf-8")
    assert len(PAGES) >= 5
    for page in PAGES:
        assert f"({page.name})" in index, f"{page.name} is not linked from docs/tutorials/index.md"
        assert blocks(page), f"{page.name} has no code that runs"


@pytest.fixture
def own_registrations():
    """Environment ids and mechanisms a page registers are removed after it, so no other test sees them."""
    import gymnasium as gym

    from wrappers.plugin import mechanism_names, unregister_mechanism

    ids, mechanisms = set(gym.registry), set(mechanism_names())
    yield
    for env_id in set(gym.registry) - ids:
        del gym.registry[env_id]
    for name in set(mechanism_names()) - mechanisms:
        unregister_mechanism(name)


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_tutorial_runs(page, tmp_path, monkeypatch, own_registrations):
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    # The page's code runs as a module of its own (dataclasses and pickling look their module up).
    module = types.ModuleType(f"tutorial_{page.stem.replace('-', '_')}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    for i, (lang, code) in enumerate(blocks(page)):
        where = f"{page.name}, block {i} ({lang})"
        if lang == "python":
            exec(compile(code, where, "exec"), namespace)
        else:
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, f"{where} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
