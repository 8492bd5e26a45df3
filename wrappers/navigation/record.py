"""The experience record: one reusable piece of advice distilled from past episodes.

* ``Experience`` - ``when_to_use`` (the applicability condition, the text that is embedded and
  matched), ``content`` (the advice), provenance (``env_id``, ``source_task_id``, ``success``,
  ``score``, ``created_at``) and usage counts (``uses``, ``wins``).
* ``experience_id`` - the content-derived id an experience gets when none is given.

Records are validated on construction: a summarizer's output is hostile input, so an empty,
oversized or non-string field is rejected with an error naming the bad value.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Experience", "experience_id", "MAX_WHEN_TO_USE_BYTES", "MAX_CONTENT_BYTES"]

# Milvus VARCHAR limits are in bytes; the collection schema uses these same numbers.
MAX_WHEN_TO_USE_BYTES = 4096
MAX_CONTENT_BYTES = 16384
MAX_ID_BYTES = 256


def experience_id(env_id: str, when_to_use: str, content: str) -> str:
    """A stable id from the record's text, so re-adding the same advice is idempotent."""
    digest = hashlib.blake2b(
        json.dumps([env_id, when_to_use, content], ensure_ascii=False).encode(), digest_size=8
    ).hexdigest()
    return f"exp-{digest}"


def _text(name: str, value: Any, limit: int, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise TypeError(f"Experience.{name} must be a string, got {type(value).__name__}: {value!r:.80}")
    value = value.strip()
    if not value and not allow_empty:
        raise ValueError(f"Experience.{name} must be non-empty, got {value!r}")
    if len(value.encode("utf-8")) > limit:
        raise ValueError(f"Experience.{name} is {len(value.encode())} bytes, over the limit of {limit}: "
                         f"{value[:60]!r}...")
    if "\x00" in value:
        raise ValueError(f"Experience.{name} contains a NUL character: {value[:60]!r}")
    return value


@dataclass
class Experience:
    """One experience.

    Args:
        when_to_use: When the advice applies; this text is embedded and matched against queries.
        content: The advice itself: instructions, precautions, a strategy.
        env_id: Environment the advice was learned in (search can filter by it).
        source_task_id: The task whose episodes produced it.
        success: Whether it comes from a successful episode (``False``: a lesson from failure).
        score: The benchmark-native score of the source episode(s).
        created_at: Unix time of creation.
        uses: How many episodes it was injected into.
        wins: How many of those episodes succeeded.
        id: Unique id; derived from the text when empty.
        metadata: Free-form JSON (summarizer name, merged sources, tags, ...).

    Example:
        >>> e = Experience("buying shoes of a given size", "click the size option before Buy Now",
        ...                env_id="evolver/WebShop-v0")
        >>> e.id.startswith("exp-") and Experience.from_dict(e.to_dict()) == e
        True
    """

    when_to_use: str
    content: str
    env_id: str = ""
    source_task_id: str = ""
    success: bool = True
    score: float = 0.0
    created_at: float = field(default_factory=time.time)
    uses: int = 0
    wins: int = 0
    id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.when_to_use = _text("when_to_use", self.when_to_use, MAX_WHEN_TO_USE_BYTES)
        self.content = _text("content", self.content, MAX_CONTENT_BYTES)
        self.env_id = _text("env_id", self.env_id, MAX_ID_BYTES, allow_empty=True)
        self.source_task_id = _text("source_task_id", self.source_task_id, MAX_ID_BYTES, allow_empty=True)
        self.score = float(self.score)
        if not math.isfinite(self.score):
            raise ValueError(f"Experience.score must be finite, got {self.score!r}")
        self.success = bool(self.success)
        self.created_at = float(self.created_at)
        self.uses, self.wins = int(self.uses), int(self.wins)
        if self.uses < 0 or self.wins < 0 or self.wins > self.uses:
            raise ValueError(f"Experience counts need 0 <= wins <= uses, got uses={self.uses} wins={self.wins}")
        if not isinstance(self.metadata, dict):
            raise TypeError(f"Experience.metadata must be a dict, got {type(self.metadata).__name__}")
        self.id = self.id or experience_id(self.env_id, self.when_to_use, self.content)
        _text("id", self.id, MAX_ID_BYTES)

    @property
    def win_rate(self) -> float | None:
        """Share of the episodes it was used in that succeeded (``None`` before first use)."""
        return self.wins / self.uses if self.uses else None

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self), ensure_ascii=False))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Experience:
        if not isinstance(data, dict):
            raise TypeError(f"an Experience is built from a dict, got {type(data).__name__}: {data!r:.80}")
        names = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown Experience fields {unknown} in {data!r:.120}")
        return cls(**data)

    @classmethod
    def from_json(cls, line: str) -> Experience:
        return cls.from_dict(json.loads(line))
