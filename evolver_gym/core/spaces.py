"""Text spaces for language environments.

* ``UnicodeText`` - any printable Unicode string up to ``max_length`` characters.

Gymnasium's own ``spaces.Text`` checks every character against a small alphanumeric charset, so
a sentence with a space or a full stop is not "in" it. Language models emit arbitrary text; this
space accepts all of it, and its ``sample()`` returns an action the environment accepts (drawn
from the ``examples`` the environment gives), so ``check_env`` and random agents step for real.

The space is registered with Gymnasium's shared-memory functions, so ``AsyncVectorEnv`` (and
``gym.make_vec(..., vectorization_mode="async")``) pass text observations through shared memory:
each environment's slot holds the string's length and then its code points (``max_length + 1``
32-bit words per environment).
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

__all__ = ["UnicodeText", "SharedTextBatch"]

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


# -- shared memory for AsyncVectorEnv ---------------------------------------------------------------
# One slot per environment: [length, code point 0, code point 1, ...], max_length + 1 uint32 words.


def _slots(space: UnicodeText, shared_memory: Any, n: int) -> np.ndarray:
    return np.frombuffer(shared_memory.get_obj(), dtype=np.uint32).reshape(n, space.max_length + 1)


@create_shared_memory.register(UnicodeText)
def _create_unicode_shared_memory(space: UnicodeText, n: int = 1, ctx: ModuleType = mp) -> Any:
    return ctx.Array(np.dtype(np.uint32).char, n * (space.max_length + 1))


class SharedTextBatch(Sequence):
    """The strings of a batch of :class:`UnicodeText` slots in shared memory, read when indexed.

    ``AsyncVectorEnv`` reads its shared observation buffer once and later returns a deep copy of it
    (or, with ``copy=False``, the buffer itself), so the buffer must be a live view: indexing reads
    the current strings, and a deep copy is a plain tuple of them.
    """

    def __init__(self, space: UnicodeText, shared_memory: Any, n: int) -> None:
        self._slots = _slots(space, shared_memory, n)

    def __len__(self) -> int:
        return len(self._slots)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self)[index]
        slot = self._slots[index]
        return slot[1: 1 + int(slot[0])].tobytes().decode("utf-32-le", "surrogatepass")

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, (tuple, SharedTextBatch)) and tuple(self) == tuple(other)

    def __repr__(self) -> str:
        return f"SharedTextBatch({tuple(self)!r})"


@read_from_shared_memory.register(UnicodeText)
def _read_unicode_from_shared_memory(space: UnicodeText, shared_memory: Any, n: int = 1) -> SharedTextBatch:
    return SharedTextBatch(space, shared_memory, n)


@write_to_shared_memory.register(UnicodeText)
def _write_unicode_to_shared_memory(space: UnicodeText, index: int, value: str, shared_memory: Any) -> None:
    if not isinstance(value, str) or len(value) > space.max_length:
        raise ValueError(f"{space} cannot hold the observation {str(value)[:80]!r} "
                         f"({len(value) if isinstance(value, str) else type(value).__name__} characters)")
    points = np.frombuffer(value.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    total = int(np.frombuffer(shared_memory.get_obj(), dtype=np.uint32).size)
    slot = _slots(space, shared_memory, total // (space.max_length + 1))[index]
    slot[0] = len(points)
    slot[1: 1 + len(points)] = points
