"""Host-side checks on every API call and every observation, in both action modes.

* ``ApiLimits`` - caps on one call's arguments, on one reply, and on what one episode may send.
* ``CallGuard`` - applies ``ApiLimits`` before a call reaches the databases and to its reply.
* ``printable`` - an observation inside the observation space: non-printables escaped, length capped.

The worker (or a tool-calling model) is untrusted, so the host sizes what it accepts: a string
longer than ``max_string_chars``, a call whose JSON is longer than ``max_request_bytes``, nesting
deeper than ``max_depth`` or more than ``max_items`` entries in one list or object is refused with
status 413 before any handler runs; once an episode has sent ``max_episode_request_bytes`` of
arguments, further calls get 429. A reply longer than ``max_reply_bytes`` or with more than
``max_rows`` rows becomes a 413, so neither the host nor the worker ever holds a huge reply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ApiLimits", "CallGuard", "printable"]


@dataclass
class ApiLimits:
    """Size caps applied by the host to API calls."""

    max_string_chars: int = field(default=20_000, metadata={"help": "Characters of one string argument."})
    max_items: int = field(default=1_000, metadata={"help": "Entries of one list or object argument."})
    max_depth: int = field(default=16, metadata={"help": "Nesting depth of the arguments."})
    max_request_bytes: int = field(default=100_000, metadata={"help": "Bytes of one call's JSON arguments."})
    max_episode_request_bytes: int = field(
        default=4_000_000, metadata={"help": "Bytes of arguments one episode may send in all (bounds world growth)."}
    )
    max_reply_bytes: int = field(default=1_000_000, metadata={"help": "Bytes of one reply's JSON."})
    max_rows: int = field(default=1_000, metadata={"help": "Rows (list entries) of one reply."})

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"ApiLimits.{name} must be a positive int, got {value!r}")


def _shape_error(value: Any, limits: ApiLimits) -> str | None:
    """Why ``value`` breaks the caps (None if it does not); iterative, so depth cannot overflow the stack."""
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > limits.max_depth:
            return f"the arguments are nested deeper than {limits.max_depth} levels"
        if isinstance(v, str):
            if len(v) > limits.max_string_chars:
                return f"a string argument has {len(v)} characters (at most {limits.max_string_chars})"
        elif isinstance(v, (list, dict)):
            if len(v) > limits.max_items:
                return f"a list or object argument has {len(v)} entries (at most {limits.max_items})"
            if isinstance(v, dict):
                stack.extend((k, depth + 1) for k in v)
                stack.extend((x, depth + 1) for x in v.values())
            else:
                stack.extend((x, depth + 1) for x in v)
    return None


class CallGuard:
    """Checks calls and replies against ``ApiLimits``; tracks the episode's argument budget.

    Example:
        >>> guard = CallGuard(ApiLimits(max_string_chars=5))
        >>> guard.check({"title": "hello world"})
        (413, {'message': 'Request too large: a string argument has 11 characters (at most 5).'})
        >>> guard.check({"title": "hi"}) is None
        True
    """

    def __init__(self, limits: ApiLimits | None = None):
        self.limits = limits or ApiLimits()
        self.spent = 0

    def reset(self) -> None:
        self.spent = 0

    def check(self, kwargs: Any) -> tuple[int, dict[str, str]] | None:
        """``(status, body)`` refusing the call, or None when it may run."""
        lim = self.limits
        if not isinstance(kwargs, dict):
            return 422, {"message": "Arguments must be given as keyword arguments."}
        problem = _shape_error(kwargs, lim)
        if problem is None:
            try:
                size = len(json.dumps(kwargs))
            except (TypeError, ValueError) as e:
                return 422, {"message": f"Arguments must be JSON values: {e}."}
            if size > lim.max_request_bytes:
                problem = f"the arguments take {size} bytes (at most {lim.max_request_bytes})"
        if problem is not None:
            return 413, {"message": f"Request too large: {problem}."}
        if self.spent + size > lim.max_episode_request_bytes:
            return 429, {
                "message": f"This episode has sent {self.spent} bytes of API arguments; the limit is "
                f"{lim.max_episode_request_bytes}. No more calls are accepted in this episode."
            }
        self.spent += size
        return None

    def reply(self, status: int, body: Any) -> tuple[int, Any]:
        """The reply, or a 413 in its place when it is too large to hand back."""
        lim = self.limits
        if isinstance(body, list) and len(body) > lim.max_rows:
            return 413, {"message": f"The response has {len(body)} rows (at most {lim.max_rows}); ask for fewer."}
        size = len(json.dumps(body))
        if size > lim.max_reply_bytes:
            return 413, {"message": f"The response takes {size} bytes (at most {lim.max_reply_bytes}); ask for less."}
        return status, body


def printable(text: str, limit: int) -> str:
    r"""``text`` with non-printable characters escaped (newline, tab, CR kept) and cut to ``limit`` characters.

    Example:
        >>> printable("bell\x07 ok\n", 100)
        'bell\\x07 ok\n'
        >>> len(printable("x" * 500, 100)) <= 100
        True
    """
    if not text.replace("\n", "").replace("\t", "").replace("\r", "").isprintable():
        text = "".join(
            c if c.isprintable() or c in "\n\t\r" else c.encode("unicode_escape", "backslashreplace").decode("ascii")
            for c in text
        )
    if len(text) > limit:
        note = f"\n...[observation truncated: {len(text)} characters]"
        text = text[: max(limit - len(note), 0)] + note
        text = text[-limit:] if len(text) > limit else text
    return text
