"""Thread-safe usage counters, one per client (and so per role).

* ``UsageStats`` - calls, prompt/completion tokens (and prompt tokens read from a kept KV cache),
  failures (by kind), retries, fallbacks.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

__all__ = ["UsageStats"]


class UsageStats:
    """Counters a client updates on every request; ``snapshot()`` returns a plain dict.

    ``calls`` counts requests that returned text, ``cached_prompt_tokens`` the prompt tokens an
    in-process client took from its kept KV cache instead of computing them (a part of
    ``prompt_tokens``), ``failures`` requests that raised ``LLMError``
    (after retries), ``retries`` extra attempts, ``errors`` every failed attempt by kind,
    ``log_errors`` log lines that could not be written.

    Example:
        >>> s = UsageStats("judge")
        >>> s.record_call(prompt_tokens=10, completion_tokens=3)
        >>> s.snapshot()["prompt_tokens"]
        10
    """

    def __init__(self, role: str = "default") -> None:
        self.role = role
        self._lock = threading.Lock()
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_prompt_tokens = 0
        self.failures = 0
        self.retries = 0
        self.errors: Counter[str] = Counter()
        self.failure_kinds: Counter[str] = Counter()
        self.log_errors = 0

    def record_call(self, *, prompt_tokens: int = 0, completion_tokens: int = 0, cached_tokens: int = 0) -> None:
        with self._lock:
            self.calls += 1
            self.prompt_tokens += int(prompt_tokens or 0)
            self.completion_tokens += int(completion_tokens or 0)
            self.cached_prompt_tokens += int(cached_tokens or 0)

    def record_retry(self, kind: str) -> None:
        with self._lock:
            self.retries += 1
            self.errors[kind] += 1

    def record_failure(self, kind: str) -> None:
        with self._lock:
            self.failures += 1
            self.errors[kind] += 1
            self.failure_kinds[kind] += 1

    def record_log_error(self) -> None:
        with self._lock:
            self.log_errors += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "role": self.role,
                "calls": self.calls,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cached_prompt_tokens": self.cached_prompt_tokens,
                "failures": self.failures,
                "retries": self.retries,
                "errors": dict(self.errors),
                "failure_kinds": dict(self.failure_kinds),
                "log_errors": self.log_errors,
            }

    def __repr__(self) -> str:
        return f"UsageStats({self.snapshot()})"
