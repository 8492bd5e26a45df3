"""The one protocol every language-model role speaks: chat messages in, text out, batched.

* ``Message`` - a chat message, ``{"role": "system" | "user" | "assistant", "content": str}``.
* ``ChatClient`` - the protocol (``chat`` and ``chat_batch``) that explorers, proposers, judges,
  attributors, summarizers and arena seats call.
* ``LLMError`` - raised by a client when a request failed for good (after its retries).
* ``LLMBatchError`` - raised by ``chat_batch`` when some conversations failed; it carries the
  texts of those that succeeded, so callers can keep them.

Callers never retry, time out or count tokens themselves: that lives in the client.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["Message", "ChatClient", "LLMError", "LLMBatchError"]

Message = dict[str, str]


class LLMError(RuntimeError):
    """A language-model request failed after the client's retries; ``kind`` says how."""

    def __init__(self, message: str, *, kind: str = "error", status: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status


class LLMBatchError(LLMError):
    """Some conversations of a batch failed for good.

    ``results[i]`` is the text of conversation ``i`` or ``None`` where it failed, and
    ``errors[i]`` the ``LLMError`` of a failed one (``None`` where it succeeded). ``kind`` and
    ``status`` are those of the first failure.
    """

    def __init__(self, results: list[str | None], errors: list[LLMError | None]):
        failed = [(i, e) for i, e in enumerate(errors) if e is not None]
        first = failed[0][1] if failed else LLMError("no failure", kind="error")
        first_index = failed[0][0] if failed else -1
        super().__init__(f"{len(failed)} of {len(errors)} conversations failed; first (#{first_index}): {first}",
                         kind=first.kind, status=first.status)
        self.results = results
        self.errors = errors


@runtime_checkable
class ChatClient(Protocol):
    """Anything that answers chat messages with text."""

    def chat(self, messages: list[Message], **overrides: Any) -> str:
        """One completion for one conversation. ``overrides`` (temperature, max_tokens, ...) win
        over the client's configuration for this call."""
        ...

    def chat_batch(self, conversations: list[list[Message]], **overrides: Any) -> list[str]:
        """One completion per conversation, in order."""
        ...
