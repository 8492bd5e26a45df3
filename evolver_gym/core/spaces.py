"""Text spaces for language environments.

* ``UnicodeText`` - any printable Unicode string up to ``max_length`` characters.

Gymnasium's own ``spaces.Text`` checks every character against a small alphanumeric charset, so
a sentence with a space or a full stop is not "in" it. Language models emit arbitrary text; this
space accepts all of it, and its ``sample()`` returns an action the environment accepts (drawn
from the ``examples`` the environment gives), so ``check_env`` and random agents step for real.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["UnicodeText"]

_NONPRINTABLE_OK = "\n\t\r"


class UnicodeText(spaces.Space[str]):
    """A space of printable Unicode strings (newlines and tabs allowed).

    Args:
        max_length: Longest string in the space, in characters.
        examples: Strings that ``sample()`` draws from; they must be in the space.
        seed: Seed of the space's own generator.

    Example:
        >>> space = UnicodeText(100, examples=("search[red shoes]",), seed=0)
        >>> space.sample()
        'search[red shoes]'
        >>> "naïve café: ok?" in space, 7 in space
        (True, False)
    """

    def __init__(self, max_length: int = 8192, examples: Sequence[str] = (), seed: int | None = None):
        if not isinstance(max_length, int) or max_length < 1:
            raise ValueError(f"UnicodeText.max_length must be a positive int, got {max_length!r}")
        self.max_length = max_length
        self.examples = tuple(examples)
        bad = [e for e in self.examples if not self._is_text(e)]
        if bad:
            raise ValueError(f"UnicodeText examples must be printable strings in the space: {bad[:3]!r}")
        super().__init__(shape=None, dtype=None, seed=seed)

    def _is_text(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length and all(
            c.isprintable() or c in _NONPRINTABLE_OK for c in x
        )

    def contains(self, x: Any) -> bool:
        return self._is_text(x)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """An example action if the space has examples, else a random printable word."""
        if self.examples:
            return self.examples[int(self.np_random.integers(len(self.examples)))]
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz "))
        n = int(self.np_random.integers(1, min(self.max_length, 32) + 1))
        return "".join(self.np_random.choice(letters, size=n))

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def to_jsonable(self, sample_n: Sequence[str]) -> list[str]:
        return list(sample_n)

    def from_jsonable(self, sample_n: Sequence[str]) -> list[str]:
        return list(sample_n)

    def __repr__(self) -> str:
        return f"UnicodeText(max_length={self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, UnicodeText) and other.max_length == self.max_length
