"""A real OpenAI-compatible HTTP server on loopback, for tests of anything that asks a model.

* ``Fault`` - one injected failure: a delay past the client's timeout, an HTTP status (429, 500,
  ...), a malformed JSON body, a truncated body, or a reply without choices.
* ``ScriptedLLMServer`` - serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on
  ``127.0.0.1``. Each request is answered from, in order: the fault queue, the reply queue, the
  handler function of the request, else the last user message echoed back. Every request body is
  recorded in ``server.requests``.
* ``model_handler`` - a handler that answers every request with a local chat client (for example a
  ``TransformersChatClient`` over a real model folder), so the server speaks for a real model.
* ``build_tiny_chat_model`` - a tiny causal LM built from a config, with a tokenizer built locally
  and a chat template, for tests of the transformers and policy backends (no hub download).

Example:
    >>> from evolver_gym.core.llm.testing import Fault, ScriptedLLMServer
    >>> with ScriptedLLMServer(replies=["hello"]) as server:
    ...     server.fail_next(Fault.http(429))
    ...     client = server.client(role="judge")
    ...     client.chat([{"role": "user", "content": "hi"}])
    'hello'

Other test folders get the server as the ``llm_server`` fixture of ``tests/conftest.py``.
"""

from __future__ import annotations

import collections
import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FAULT_KINDS", "Fault", "ScriptedLLMServer", "model_handler", "build_tiny_chat_model"]

FAULT_KINDS = ("delay", "status", "malformed", "truncated", "empty", "trickle", "endless", "huge", "usage")


@dataclass(frozen=True)
class Fault:
    """One injected failure for one request.

    ``kind``: ``delay`` (sleep ``seconds`` then answer ``text``: a client with a shorter timeout
    gives up first), ``status`` (HTTP ``status`` with an OpenAI-style error body; ``retry_after``
    sets the header), ``malformed`` (HTTP 200 whose body is not JSON), ``truncated`` (HTTP 200
    whose body stops half-way, shorter than its ``Content-Length``), ``empty`` (valid JSON
    without any choice), ``trickle`` (a valid reply sent one byte every ``seconds``), ``endless``
    (a chunked body that never ends, a chunk every ``seconds``), ``huge`` (a valid reply of
    ``size`` bytes), ``usage`` (a valid reply whose ``usage`` counts are not numbers).
    """

    kind: str
    status: int = 500
    seconds: float = 0.0
    retry_after: float | None = None
    text: str = "late reply"
    size: int = 0

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"Fault.kind must be one of {FAULT_KINDS}, got {self.kind!r}")

    @classmethod
    def delay(cls, seconds: float, text: str = "late reply") -> Fault:
        return cls("delay", seconds=float(seconds), text=text)

    @classmethod
    def http(cls, status: int, retry_after: float | None = None) -> Fault:
        return cls("status", status=int(status), retry_after=retry_after)

    @classmethod
    def malformed(cls) -> Fault:
        return cls("malformed")

    @classmethod
    def truncated(cls) -> Fault:
        return cls("truncated")

    @classmethod
    def empty(cls) -> Fault:
        return cls("empty")

    @classmethod
    def trickle(cls, seconds: float = 0.25, text: str = "slow reply") -> Fault:
        return cls("trickle", seconds=float(seconds), text=text)

    @classmethod
    def endless(cls, seconds: float = 0.05) -> Fault:
        return cls("endless", seconds=float(seconds))

    @classmethod
    def huge(cls, size: int) -> Fault:
        return cls("huge", size=int(size))

    @classmethod
    def bad_usage(cls, text: str = "good reply") -> Fault:
        return cls("usage", text=text)


def _count_tokens(text: str) -> int:
    # Whitespace words stand in for tokens: enough for accounting tests, no tokenizer needed.
    return len(text.split())


@dataclass
class _Script:
    faults: collections.deque = field(default_factory=collections.deque)
    replies: collections.deque = field(default_factory=collections.deque)


class ScriptedLLMServer:
    """An OpenAI-compatible chat server on ``127.0.0.1`` answering from scripts.

    Args:
        replies: Texts (or ``Fault``s) answered in order, one per request.
        handler: ``handler(request_body) -> str | Fault`` used once the queues are empty; the
            body is the parsed JSON of the request (``messages``, ``model``, ...).
        model: The model id listed by ``/v1/models``.
        port: 0 picks a free port.

    Attributes:
        requests: Every chat request body received, in arrival order (faulted ones included).
        url: The base URL to give a client, ``http://127.0.0.1:<port>/v1``.
    """

    def __init__(self, replies: Iterable[str | Fault] = (), *,
                 handler: Callable[[dict[str, Any]], str | Fault] | None = None,
                 model: str = "scripted-model", port: int = 0) -> None:
        self.model = model
        self.handler = handler
        self.requests: list[dict[str, Any]] = []
        self._script = _Script(replies=collections.deque(replies))
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._make_handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- scripting -----------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def push(self, *replies: str | Fault) -> None:
        """Queue replies (texts or faults), answered in order after pending faults."""
        with self._lock:
            self._script.replies.extend(replies)

    def fail_next(self, fault: Fault | str, times: int = 1) -> None:
        """Answer the next ``times`` requests with ``fault`` (a ``Fault`` or a fault kind)."""
        if isinstance(fault, str):
            fault = Fault(fault)
        with self._lock:
            self._script.faults.extend([fault] * int(times))

    def reset(self) -> None:
        """Forget queued replies, faults and recorded requests."""
        with self._lock:
            self._script = _Script()
            self.requests.clear()

    def client(self, role: str = "test", **config: Any):
        """An :class:`~evolver_gym.core.llm.openai_client.OpenAIChatClient` for this server with
        test-friendly defaults (short timeout, millisecond backoff); ``config`` overrides them."""
        from .config import LLMConfig
        from .openai_client import OpenAIChatClient

        settings = {"base_url": self.url, "model": self.model, "api_key": "test-key", "timeout": 2.0,
                    "max_retries": 3, "backoff_base": 0.001, "backoff_max": 0.01, **config}
        return OpenAIChatClient(LLMConfig(**settings), role=role)

    def _next(self, body: dict[str, Any]) -> str | Fault:
        with self._lock:
            self.requests.append(body)
            if self._script.faults:
                return self._script.faults.popleft()
            if self._script.replies:
                return self._script.replies.popleft()
        if self.handler is not None:
            return self.handler(body)
        users = [m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"]
        return str(users[-1]) if users else ""

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> ScriptedLLMServer:
        if self._thread is None:
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                            name="scripted-llm-server", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()  # wakes handlers sleeping on a delay fault
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- HTTP ----------------------------------------------------------------------------
    def _completion(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        p, c = _count_tokens(prompt), _count_tokens(text)
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
        }

    def _make_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes; without TCP_NODELAY, Nagle plus the
            # client's delayed ACK adds ~40 ms to every keep-alive request.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: bytes, *, headers: dict[str, str] | None = None,
                      length: int | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload) if length is None else length))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    if length is not None:
                        self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(payload)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) first: expected under a delay fault
                if length is not None:
                    self.close_connection = True

            def _json(self, status: int, obj: Any, **kw: Any) -> None:
                self._send(status, json.dumps(obj).encode(), **kw)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [
                        {"id": server.model, "object": "model", "created": 0, "owned_by": "evolver-gym"}]})
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError as exc:
                    self._json(400, {"error": {"message": f"request is not JSON: {exc}", "type": "invalid_request"}})
                    return
                if not isinstance(body.get("messages"), list):
                    self._json(400, {"error": {"message": "'messages' must be a list", "type": "invalid_request"}})
                    return
                try:
                    reply = server._next(body)
                except Exception as exc:  # a broken test handler shows up as a 500, not a hang
                    self._json(500, {"error": {"message": f"handler failed: {exc!r}", "type": "server_error"}})
                    return
                if isinstance(reply, Fault):
                    self._fault(body, reply)
                else:
                    self._json(200, server._completion(body, str(reply)))

            def _fault(self, body: dict[str, Any], fault: Fault) -> None:
                if fault.kind == "delay":
                    server._closing.wait(fault.seconds)
                    self._json(200, server._completion(body, fault.text))
                elif fault.kind == "status":
                    headers = {} if fault.retry_after is None else {"Retry-After": str(fault.retry_after)}
                    self._json(fault.status, {"error": {"message": f"injected HTTP {fault.status}",
                                                        "type": "injected", "code": fault.status}},
                               headers=headers)
                elif fault.kind == "malformed":
                    self._send(200, b'{"id": "chatcmpl-x", "choices": [ {"message": ')
                elif fault.kind == "truncated":
                    full = json.dumps(server._completion(body, "this body is cut short")).encode()
                    self._send(200, full[: len(full) // 2], length=len(full))
                elif fault.kind == "trickle":
                    self._trickle(json.dumps(server._completion(body, fault.text)).encode(), fault.seconds)
                elif fault.kind == "endless":
                    self._endless(fault.seconds)
                elif fault.kind == "huge":
                    text = "x" * max(0, fault.size - len(json.dumps(server._completion(body, ""))))
                    self._json(200, server._completion(body, text))
                elif fault.kind == "usage":
                    reply = server._completion(body, fault.text)
                    reply["usage"] = {"prompt_tokens": "n/a", "completion_tokens": None, "total_tokens": [1]}
                    self._json(200, reply)
                else:  # empty
                    self._json(200, {**server._completion(body, ""), "choices": []})

            def _trickle(self, payload: bytes, seconds: float) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.flush()
                    for i in range(len(payload)):
                        if server._closing.wait(seconds):
                            break
                        self.wfile.write(payload[i : i + 1])
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up: the point of the fault
                self.close_connection = True

            def _endless(self, seconds: float) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    self.wfile.write(b'1\r\n{\r\n')
                    while not server._closing.wait(seconds):
                        self.wfile.write(b'1\r\n \r\n')
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        return Handler


def model_handler(client: Any) -> Callable[[dict[str, Any]], str]:
    """``handler(body)`` answering with ``client.chat`` (a ``ChatClient``), honouring the request's
    ``temperature``, ``max_tokens``, ``top_p`` and ``stop``.

    Example:
        >>> from evolver_gym.core.llm.local import PolicyChatClient
        >>> model, tokenizer = build_tiny_chat_model()
        >>> local = PolicyChatClient(model, tokenizer, max_tokens=3, temperature=0.0)
        >>> with ScriptedLLMServer(handler=model_handler(local)) as server:
        ...     judge = server.client(role="judge", timeout=120, max_tokens=3, temperature=0.0)
        ...     reply = judge.chat([{"role": "user", "content": "hi"}])
        >>> reply == local.chat([{"role": "user", "content": "hi"}])
        True
    """
    def handle(body: dict[str, Any]) -> str:
        overrides = {k: body[k] for k in ("temperature", "max_tokens", "top_p", "stop") if body.get(k) is not None}
        return client.chat(list(body.get("messages", [])), **overrides)

    return handle


def build_tiny_chat_model(seed: int = 0, *, hidden_size: int = 32, num_layers: int = 2):
    """A tiny random Llama-style causal LM and a locally built tokenizer with a chat template.

    The tokenizer is a byte-level BPE trained in-process on a few sentences, so nothing is
    downloaded. Returns ``(model, tokenizer)``; the model is in eval mode.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>"]
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = ["search for red shoes and click the first item", "Step 1 Judgment: GOOD",
              "Step 2 Judgment: BAD", "buy now", "the quick brown fox jumps over the lazy dog"]
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>",
                                        eos_token="</s>")
    tokenizer.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=num_layers, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=512, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.eval()
    return model, tokenizer
