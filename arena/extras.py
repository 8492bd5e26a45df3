"""Clear errors for the optional dependencies of the arena.

* ``missing_extra`` - the ``ModuleNotFoundError`` of an absent optional package, rewritten to name the
  extra that installs it and the command.

The rules engine, the bots and the tournaments' bookkeeping need only the core install; PettingZoo (the
``arena`` extra) backs the environments, tournaments and the seat views; torch (the ``train`` extra) only
``checkpoint:`` opponents (a saved policy generating locally).

Example:
    >>> err = missing_extra(ModuleNotFoundError("No module named 'pettingzoo'", name="pettingzoo"), "the game")
    >>> print(err)
    the game: the `pettingzoo` package of the 'arena' extra is not installed: pip install 'evolver-gym[arena]'
"""

from __future__ import annotations

from evolver_gym.install_check import install_hint

__all__ = ["EXTRA_OF", "PETTINGZOO_USERS", "missing_extra"]

#: The extra that installs each optional top-level package the arena imports.
EXTRA_OF = {"pettingzoo": "arena", "torch": "train", "matplotlib": "train"}
#: What needs PettingZoo, as the error says it.
PETTINGZOO_USERS = "Avalon's PettingZoo environments (arena.avalon_v0, evolver/AvalonSeat-v0, tournaments)"


def missing_extra(exc: ModuleNotFoundError, what: str) -> ModuleNotFoundError:
    """``exc`` itself unless it is about a package of :data:`EXTRA_OF`; then an error naming its extra."""
    top = (exc.name or "").split(".")[0]
    if top not in EXTRA_OF:
        return exc
    return ModuleNotFoundError(f"{what}: the `{top}` package of the '{EXTRA_OF[top]}' extra is not installed: "
                               f"{install_hint(EXTRA_OF[top])}", name=exc.name)
