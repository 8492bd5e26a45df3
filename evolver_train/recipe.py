"""The recipes of ``configs/`` by name, from a clone or an installed package.

* ``recipe_dir`` - the folder of packaged recipes (``evolver_train/recipes``, a link to ``configs/`` in a
  clone, real files in a wheel).
* ``recipe_names`` - the names ``--config`` accepts (``quickstart``, ``gpu/overall``, ``accelerate/multi_cpu``...).
* ``resolve_config`` - what ``--config X`` reads: the file ``X`` when it exists, else the packaged recipe ``X``.

So ``evolver train --config quickstart`` (or the clone's spelling ``--config configs/quickstart.yaml``) works
from any folder once the package is installed, and ``evolver sft``, ``evolver eval`` and ``evolver arena
train`` resolve their ``--config`` the same way.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["recipe_dir", "recipe_names", "resolve_config"]

_SUFFIXES = (".yaml", ".yml")


def recipe_dir() -> Path:
    """The folder of the packaged recipes."""
    return Path(__file__).resolve().parent / "recipes"


def recipe_names() -> list[str]:
    """Names of the packaged recipes, sorted: the path under :func:`recipe_dir` without ``.yaml``.

    Example:
        >>> {"quickstart", "basic", "gpu/overall", "accelerate/multi_cpu"} <= set(recipe_names())
        True
    """
    root = recipe_dir()
    if not root.is_dir():
        return []
    return sorted(p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*")
                  if p.suffix in _SUFFIXES and p.is_file())


def resolve_config(name_or_path: str | os.PathLike) -> str:
    """The file ``--config name_or_path`` reads.

    An existing file is itself. Otherwise ``name_or_path`` names a packaged recipe: ``quickstart``,
    ``quickstart.yaml`` or ``configs/quickstart.yaml`` (a clone's path, from another folder) all give the
    installed ``quickstart.yaml``. Raises ``FileNotFoundError`` listing the recipes when neither exists.

    Example:
        >>> resolve_config("quickstart") == str(recipe_dir() / "quickstart.yaml")
        True
        >>> resolve_config("gpu/overall.yaml").endswith("gpu/overall.yaml")
        True
    """
    text = os.fspath(name_or_path)
    if os.path.isfile(text):
        return text
    name = text.replace("\\", "/")
    if name.startswith("./"):
        name = name[2:]
    if name.startswith("configs/"):
        name = name[len("configs/"):]
    root = recipe_dir()
    stem = name[: -len(name.rsplit(".", 1)[-1]) - 1] if name.endswith(_SUFFIXES) else name
    if stem and ".." not in Path(stem).parts and not Path(stem).is_absolute():
        for suffix in _SUFFIXES:
            candidate = root / f"{stem}{suffix}"
            if candidate.is_file():
                return str(candidate)
    raise FileNotFoundError(f"no such file {text!r}, and no packaged recipe of that name; recipes: "
                            f"{', '.join(recipe_names()) or 'none installed'}")
