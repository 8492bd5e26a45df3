"""A chat client for any OpenAI-compatible endpoint (vLLM, SGLang, hosted APIs), via ``openai``.

* ``OpenAIChatClient`` - ``chat`` / ``chat_batch`` with timeouts, bounded retries (exponential
  backoff with jitter on timeouts, 429, 5xx, connection errors and malformed bodies), a
  concurrency limit, usage counters and an optional JSONL log of every attempt.
* ``RETRYABLE_KINDS`` - the failure kinds that are retried; others (``client``: a 4xx such as a
  bad request or a wrong key) fail at once.

Failures after the last attempt raise :class:`~evolver_gym.core.llm.base.LLMError` whose
``kind`` is one of ``timeout``, ``rate_limit``, ``server``, ``connection``, ``malformed``,
``too_large``, ``client``, ``error``.

The timeout is a deadline for the whole attempt (the reply's last byte included), and a reply over
``max_response_bytes`` is refused as it streams in. Retries stay here rather than in the SDK so that
every attempt is counted and logged; an unwritable log costs log lines, never a reply.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..seeding import make_random
from .base import LLMBatchError, LLMError, Message
from .config import LLMConfig
from .stats import UsageStats

__all__ = ["DeadlineExceeded", "OpenAIChatClient", "RETRYABLE_KINDS", "ReplyTooLarge", "validate_messages"]

logger = logging.getLogger(__name__)

RETRYABLE_KINDS = frozenset({"timeout", "rate_limit", "server", "connection", "malformed"})
_REQUEST_KEYS = ("temperature", "top_p", "max_tokens", "stop", "seed")


class DeadlineExceeded(Exception):
    """An attempt's reply did not arrive completely within its timeout."""


class ReplyTooLarge(Exception):
    """A reply body over ``LLMConfig.max_response_bytes``."""


def _count(value: Any) -> int:
    """A usage count as an int; anything that is not a non-negative number counts as 0."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else 0


def validate_messages(messages: Any) -> list[Message]:
    """Check the chat-message shape; a caller bug raises ``ValueError`` naming the bad value."""
    if not isinstance(messages, list) or not messages:
        raise ValueError(f"messages must be a non-empty list of chat messages, got {messages!r:.200}")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise ValueError(f"message {i} must be {{'role': str, 'content': str}}, got {m!r:.200}")
    return messages


def _classify(exc: BaseException) -> tuple[str, int | None, float | None]:
    """(kind, HTTP status, Retry-After seconds) of a failed attempt."""
    import openai

    if isinstance(exc, ReplyTooLarge):
        return "too_large", None, None
    if isinstance(exc, (openai.APITimeoutError, DeadlineExceeded)):
        return "timeout", None, None
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        retry_after = None
        try:
            header = exc.response.headers.get("retry-after")
            retry_after = float(header) if header is not None else None
        except (TypeError, ValueError, AttributeError):
            retry_after = None
        if status == 429:
            return "rate_limit", status, retry_after
        if status >= 500 or status == 408:
            return "server", status, retry_after
        return "client", status, None
    if isinstance(exc, openai.APIConnectionError):
        # A body cut short (peer closed before Content-Length bytes) is a malformed reply, not a
        # refused connection; the transport library only says so in the exception chain.
        cause = exc.__cause__ or exc.__context__
        while cause is not None:
            if "ProtocolError" in type(cause).__name__ or "complete message body" in str(cause):
                return "malformed", None, None
            cause = cause.__cause__ or cause.__context__
        return "connection", None, None
    # Errors while streaming the body come from the transport library itself, not wrapped by the SDK.
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & {"TimeoutException", "ReadTimeout"}:
        return "timeout", None, None
    if names & {"RemoteProtocolError", "ProtocolError", "DecodingError"}:
        return "malformed", None, None
    if "TransportError" in names:
        return "connection", None, None
    if isinstance(exc, (openai.APIResponseValidationError, ValueError, TypeError, KeyError, AttributeError)):
        # json.JSONDecodeError is a ValueError: a body that is not the JSON it claims to be.
        return "malformed", None, None
    return "error", None, None


class OpenAIChatClient:
    """Chat with any OpenAI-compatible server.

    Args:
        config: The client's settings (:class:`LLMConfig`); keyword arguments override fields.
        role: The role the client serves; names its usage counters and log lines.

    The API key comes from ``config.api_key``, else the environment variable
    ``config.api_key_env`` (after loading ``config.env_file`` with python-dotenv, without
    overriding variables already set), else ``"EMPTY"`` (what local vLLM servers accept). The
    base URL comes from ``config.base_url``, else ``OPENAI_BASE_URL``.

    Example:
        >>> from evolver_gym.core.llm.testing import ScriptedLLMServer
        >>> with ScriptedLLMServer() as server:  # with no script, it echoes the last user message
        ...     client = OpenAIChatClient(base_url=server.url, model="m", api_key="k", role="judge")
        ...     client.chat_batch([[{"role": "user", "content": "x"}], [{"role": "user", "content": "y"}]])
        ...     client.stats.snapshot()["calls"]
        ['x', 'y']
        2
    """

    def __init__(self, config: LLMConfig | None = None, *, role: str = "default", **overrides: Any) -> None:
        import openai

        config = config or LLMConfig()
        if overrides:
            config = config.replace(**overrides)
        if config.backend != "openai":
            raise ValueError(f"OpenAIChatClient needs backend 'openai', got {config.backend!r}")
        self.config = config
        self.role = role
        if config.env_file and os.path.isfile(config.env_file):
            from dotenv import load_dotenv

            load_dotenv(config.env_file, override=False)
        api_key = config.api_key or os.environ.get(config.api_key_env) or "EMPTY"
        base_url = config.base_url or os.environ.get("OPENAI_BASE_URL")
        # The SDK's own retries are off: retry policy, counting and logging live here, in one place.
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=config.timeout, max_retries=0)
        self.stats = UsageStats(role)
        self._slots = threading.BoundedSemaphore(config.concurrency)
        self._rng = make_random(config.seed if config.seed is not None else 0, "llm-retry-jitter", role)
        self._rng_lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._log_warned = False
        self._model: str | None = None
        self._model_lock = threading.Lock()
        self.sleep: Callable[[float], None] = time.sleep  # replaceable, e.g. to record backoffs

    # -- public API ----------------------------------------------------------------------
    def chat(self, messages: list[Message], **overrides: Any) -> str:
        """One completion; retries retryable failures, then raises ``LLMError``."""
        messages = validate_messages(messages)
        params, timeout = self._params(messages, overrides)
        attempts = self.config.max_retries + 1
        for attempt in range(attempts):
            started = time.monotonic()
            try:
                with self._slots:
                    body = self._fetch(params, started, timeout)
                text, usage = self._parse(body)
            except Exception as exc:  # every failure is classified; none escapes unwrapped
                kind, status, retry_after = _classify(exc)
                self._log(params, attempt, started, error={"kind": kind, "status": status, "message": str(exc)[:500]})
                if kind in RETRYABLE_KINDS and attempt + 1 < attempts:
                    self.stats.record_retry(kind)
                    self.sleep(self._backoff(attempt, retry_after))
                    continue
                self.stats.record_failure(kind)
                raise LLMError(f"{self.role}: chat request failed after {attempt + 1} attempt(s) "
                               f"[{kind}{'' if status is None else f' HTTP {status}'}]: {exc}",
                               kind=kind, status=status) from exc
            self.stats.record_call(prompt_tokens=usage.get("prompt_tokens", 0),
                                   completion_tokens=usage.get("completion_tokens", 0))
            self._log(params, attempt, started, response=text, usage=usage)
            return text
        raise AssertionError("unreachable: the retry loop returns or raises")

    def chat_batch(self, conversations: list[list[Message]], **overrides: Any) -> list[str]:
        """One completion per conversation, in order, at most ``config.concurrency`` in flight.

        If any conversation fails for good, raises :class:`LLMBatchError` carrying the texts of
        the others.
        """
        if not isinstance(conversations, list):
            raise ValueError(f"conversations must be a list of message lists, got {conversations!r:.200}")
        for conv in conversations:
            validate_messages(conv)
        if not conversations:
            return []
        results: list[str | None] = [None] * len(conversations)
        errors: list[LLMError | None] = [None] * len(conversations)

        def run(i: int) -> None:
            try:
                results[i] = self.chat(conversations[i], **overrides)
            except LLMError as exc:
                errors[i] = exc

        workers = min(self.config.concurrency, len(conversations))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"llm-{self.role}") as pool:
            list(pool.map(run, range(len(conversations))))
        if any(e is not None for e in errors):
            raise LLMBatchError(results, errors)
        return [r for r in results if r is not None]

    def close(self) -> None:
        self._client.close()

    # -- internals -----------------------------------------------------------------------
    def model(self) -> str:
        """The model id requests name: ``config.model``, else the one model the server lists.

        Without a configured model, requests would go out with ``"model": ""``; the server's
        ``/v1/models`` is asked once instead, and a server listing none or several is an error
        naming what it lists.
        """
        if self.config.model:
            return self.config.model
        with self._model_lock:
            if self._model is None:
                try:
                    listed = sorted(m.id for m in self._client.models.list(timeout=self.config.timeout))
                except Exception as exc:  # noqa: BLE001 - any failure means: set the model by hand
                    kind = _classify(exc)[0]
                    raise LLMError(f"{self.role}: no model configured and the server's model list is "
                                   f"unavailable [{kind}]: {exc}; set `model` in the LLM config", kind=kind) from exc
                if len(listed) != 1:
                    raise LLMError(f"{self.role}: no model configured and the server lists {listed}; "
                                   "set `model` in the LLM config to one of them", kind="client")
                self._model = listed[0]
            return self._model

    def _params(self, messages: list[Message], overrides: dict[str, Any]) -> tuple[dict[str, Any], float]:
        overrides = dict(overrides)
        timeout = float(overrides.pop("timeout", self.config.timeout))
        model = overrides.pop("model", None) or self.model()
        params: dict[str, Any] = {"model": model, "messages": messages}
        for key in _REQUEST_KEYS:
            value = overrides.pop(key, getattr(self.config, key))
            if value is not None:
                params[key] = value
        extra = {**self.config.extra_body, **overrides.pop("extra_body", {}), **overrides}
        if extra:
            params["extra_body"] = extra
        return params, timeout

    def _fetch(self, params: dict[str, Any], started: float, timeout: float) -> Any:
        """The reply's JSON, read through the SDK's raw streaming response so that the attempt ends
        ``timeout`` seconds after ``started`` and the body stays under ``max_response_bytes``.
        httpx applies its timeout per read, which a server trickling bytes never trips."""
        limit = self.config.max_response_bytes
        deadline = started + timeout
        chunks, size = [], 0
        create = self._client.chat.completions.with_streaming_response.create
        with create(**params, timeout=max(0.001, deadline - time.monotonic())) as response:
            declared = response.http_response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise ReplyTooLarge(f"reply of {int(declared):,} bytes is over max_response_bytes={limit:,}")
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > limit:
                    raise ReplyTooLarge(f"reply is over max_response_bytes={limit:,} bytes")
                if time.monotonic() > deadline:
                    raise DeadlineExceeded(f"reply not complete within the {timeout:g} s timeout")
                chunks.append(chunk)
        return json.loads(b"".join(chunks))

    @staticmethod
    def _parse(body: Any) -> tuple[str, dict[str, int]]:
        choices = body.get("choices") if isinstance(body, dict) else None
        if not choices or not isinstance(choices, list):
            raise ValueError(f"response has no choices: {body!r:.300}")
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise ValueError(f"response choice has no text content: {choices[0]!r:.300}")
        usage = body.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        # Token counts are bookkeeping: a reply with good content and odd counts is kept, counted as 0.
        counts = {key: _count(usage.get(key)) for key in ("prompt_tokens", "completion_tokens")}
        return content, counts

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter; a server's Retry-After wins when larger (capped)."""
        base = min(self.config.backoff_max, self.config.backoff_base * (2 ** attempt))
        with self._rng_lock:
            u = self._rng.random()
        delay = base * (1.0 - self.config.jitter * u)
        if retry_after is not None:
            delay = max(delay, min(float(retry_after), self.config.backoff_max))
        return delay

    def _log(self, params: dict[str, Any], attempt: int, started: float, **fields: Any) -> None:
        if not self.config.log_path:
            return
        record = {"time": time.time(), "role": self.role, "attempt": attempt,
                  "latency_s": round(time.monotonic() - started, 4), "request": params, **fields}
        line = json.dumps(record, ensure_ascii=False, default=str)
        try:
            with self._log_lock, open(self.config.log_path, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError as exc:  # a full disk or a missing folder costs the log line, never the reply
            self.stats.record_log_error()
            if not self._log_warned:
                self._log_warned = True
                logger.warning("%s: cannot write the LLM log %s (%s); requests go on unlogged",
                               self.role, self.config.log_path, exc)
