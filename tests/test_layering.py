"""DESIGN's layering, read from the source: every import of a package, lazy ones inside functions
included, points down the layers (`evolver_train` -> `wrappers` -> `evolver_gym.core`; `arena` ->
`evolver_gym.core`; environments import neither wrappers nor the trainer)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The project's packages each layer must not import.
FORBIDDEN = {
    "arena": ("evolver_train", "wrappers"),
    "wrappers": ("evolver_train", "arena"),
    "evolver_gym": ("evolver_train", "wrappers", "arena"),
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in ``path``, at any depth of the syntax tree."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_down_the_layers(package):
    bad = [f"{path.relative_to(ROOT)}:{line} imports {module}"
           for path in sorted((ROOT / package).rglob("*.py"))
           for line, module in imported_modules(path)
           if module.split(".")[0] in FORBIDDEN[package]]
    assert not bad, "\n".join(bad)


def test_the_reader_sees_lazy_imports(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from evolver_train.rollout import ChatCodec\n    import wrappers.league\n")
    assert imported_modules(source) == [(2, "evolver_train.rollout"), (3, "wrappers.league")]


def test_the_checkpoint_seat_is_declared_as_an_entry_point():
    from importlib.metadata import entry_points

    from arena.avalon.opponents import SEAT_PLUGINS

    (found,) = entry_points(group=SEAT_PLUGINS, name="checkpoint")
    assert found.value == "evolver_train.arena_seat:checkpoint_seat"
