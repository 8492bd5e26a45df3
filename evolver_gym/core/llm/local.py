"""Chat clients that generate in-process with transformers.

* ``PolicyChatClient`` - wraps a given model and tokenizer (for example the policy being trained):
  batched generation through the tokenizer's chat template, left padding, no gradients, the
  model's train/eval mode restored afterwards, torch's global RNG untouched.
* ``TransformersChatClient`` - loads a local model directory (``config.model``) with
  ``AutoModelForCausalLM`` / ``AutoTokenizer`` (never from the hub) and serves it the same way.

Prefix reuse (``config.prefix_cache``; on by default for ``TransformersChatClient``, off for
``PolicyChatClient``): a multi-turn agent sends the previous prompt and reply again with one more
message, so a client keeps the KV cache (transformers' ``DynamicCache``) of its last one-conversation
call, prompt and reply, with the token ids it covers. The next one-conversation call whose prompt
starts with some of those ids crops the cache to that common prefix and only computes the rest.

* What is kept: one cache per client, of the last call that generated for a single conversation,
  at most ``config.prefix_cache_tokens`` tokens (the first ones); ``reset_prefix_cache()`` drops it.
* Calls with several conversations in one ``generate`` (``chat_batch`` with ``batch_size > 1``)
  take the plain left-padded path; they neither use nor change the kept cache.
* It is dropped, never used, when the model's weights may have changed: before each use the
  parameters' and buffers' identity, storage address, version counter (bumped by optimizer steps,
  ``copy_``, ``load_state_dict``), dtype, device and shape, and a few values of each, are compared
  with those it was computed under. A write that bypasses all of these (through ``.data`` into values
  not sampled) or state outside the weights (an adapter switched off, another attention
  implementation) is not seen: call ``reset_prefix_cache()`` after such a change.
* Sampling settings need no guard: the cache holds keys and values of token ids, which depend on the
  weights only; temperature, top-p, stop strings and the seed act on the new positions. Seeded
  sampling stays reproducible: the same calls in the same order give the same replies.
* Only caches made of plain full-attention layers are kept (not sliding-window, offloaded,
  quantized or static ones), and none when the model's generation config names a
  ``cache_implementation``; such models take the plain path on every call.
* The reused positions are computed in a different chunk than a fresh prompt would compute them,
  so logits can differ in the last bits of floating point; a reply can differ only where two tokens
  tie to within that rounding.

Example:
    >>> from evolver_gym.core.llm.testing import build_tiny_chat_model
    >>> model, tokenizer = build_tiny_chat_model()
    >>> client = PolicyChatClient(model, tokenizer, max_tokens=4, temperature=0.0)
    >>> len(client.chat_batch([[{"role": "user", "content": "hi"}]] * 2))
    2
"""

from __future__ import annotations

import threading
from typing import Any

from ..seeding import derive_seed
from .base import LLMError, Message
from .config import LLMConfig
from .openai_client import validate_messages
from .stats import UsageStats

__all__ = ["PolicyChatClient", "TransformersChatClient"]

_SAMPLED_VALUES = 8  # values of each weight tensor compared before a kept cache is reused


class _Prefix:
    """A kept KV cache, the token ids it covers and the state of the weights that computed it."""

    __slots__ = ("ids", "cache", "weights")

    def __init__(self, ids: list[int], cache: Any, weights: Any) -> None:
        self.ids, self.cache, self.weights = ids, cache, weights


def _weights_state(model: Any) -> Any:
    """What a kept cache must match: every parameter's and buffer's identity, storage, version
    counter, dtype, device and shape, plus a few of its values. ``None`` (never equal) if unreadable."""
    import torch

    try:
        tensors = [*model.parameters(), *model.buffers()]
        meta = tuple((id(t), t.data_ptr(), t._version, t.dtype, t.device, tuple(t.shape)) for t in tensors)
        by_device: dict[Any, list[Any]] = {}
        with torch.no_grad():
            for t in tensors:
                if t.numel() and t.is_contiguous():
                    flat = t.view(-1)
                    by_device.setdefault(t.device, []).append(
                        flat[:: max(1, flat.numel() // _SAMPLED_VALUES)][:_SAMPLED_VALUES].double())
            values = tuple(torch.cat(parts).cpu() for parts in by_device.values())
    except Exception:  # e.g. inference tensors without a version counter: never reuse
        return None
    return meta, values


def _same_weights(a: Any, b: Any) -> bool:
    import torch

    if a is None or b is None or a[0] != b[0] or len(a[1]) != len(b[1]):
        return False
    return all(torch.equal(x, y) for x, y in zip(a[1], b[1]))


def _keepable(cache: Any) -> bool:
    """A ``DynamicCache`` of plain full-attention layers only: cropping it restores an earlier state."""
    try:
        from transformers.cache_utils import DynamicCache, DynamicLayer
    except ImportError:
        return False
    layers = getattr(cache, "layers", None)
    return (type(cache) is DynamicCache and not getattr(cache, "offloading", False) and bool(layers)
            and all(type(layer) is DynamicLayer for layer in layers))


def _cache_kwarg() -> str:
    """The name ``generate`` takes a cache under: ``cache`` since transformers 5, else ``past_key_values``."""
    try:
        from transformers.generation.utils import ALL_CACHE_NAMES
    except ImportError:
        return "past_key_values"
    return "cache" if "cache" in ALL_CACHE_NAMES else "past_key_values"


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class PolicyChatClient:
    """Generate chat replies with a model object and its tokenizer.

    Args:
        model: A causal LM (``generate`` and ``device``), e.g. the training policy.
        tokenizer: Its tokenizer; must have a chat template.
        config: Sampling settings (``temperature``, ``top_p``, ``max_tokens``, ``stop``, ``seed``,
            ``batch_size``); keyword arguments override fields.
        role: Names the usage counters.

    A ``seed`` in the config makes sampling reproducible: call ``n`` uses seed
    ``derive_seed(seed, n)`` inside a forked RNG, so the caller's global torch RNG is unchanged.

    Prefix reuse (see the module docstring) is off here unless ``prefix_cache=True``: the wrapped
    model is usually the policy being trained. With it on, a kept cache is dropped when the
    weights' version counters, storage or sampled values change (an optimizer step does), and the
    cache can hold up to ``prefix_cache_tokens`` tokens of memory on the model's device between
    calls. Everything about the kept cache happens under the client's lock, one ``generate`` at a
    time.
    """

    backend = "policy"
    default_prefix_cache = False

    def __init__(self, model: Any, tokenizer: Any, config: LLMConfig | None = None, *, role: str = "default",
                 **overrides: Any) -> None:
        config = config or LLMConfig(backend=self.backend)
        if overrides:
            config = config.replace(**overrides)
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError(f"tokenizer {type(tokenizer).__name__} has no chat_template; set one before chatting")
        self.model = model
        self.tokenizer = tokenizer
        self.config = config
        self.role = role
        self.stats = UsageStats(role)
        self._lock = threading.Lock()  # one generate() at a time on a shared model; guards _prefix
        self._calls = 0
        self.prefix_cache = self.default_prefix_cache if config.prefix_cache is None else config.prefix_cache
        self._prefix: _Prefix | None = None

    def reset_prefix_cache(self) -> None:
        """Drop the kept KV cache (its memory is freed); the next call computes its whole prompt."""
        with self._lock:
            self._prefix = None

    def chat(self, messages: list[Message], **overrides: Any) -> str:
        return self.chat_batch([messages], **overrides)[0]

    def chat_batch(self, conversations: list[list[Message]], **overrides: Any) -> list[str]:
        for conv in conversations:
            validate_messages(conv)
        out: list[str] = []
        step = self.config.batch_size
        for start in range(0, len(conversations), step):
            out += self._generate(conversations[start:start + step], overrides)
        return out

    def _generate(self, conversations: list[list[Message]], overrides: dict[str, Any]) -> list[str]:
        import torch

        temperature = float(overrides.get("temperature", self.config.temperature))
        top_p = overrides.get("top_p", self.config.top_p)
        max_tokens = int(overrides.get("max_tokens", self.config.max_tokens))
        stop = overrides.get("stop", self.config.stop) or []
        tok = self.tokenizer
        texts = [tok.apply_chat_template(c, tokenize=False, add_generation_prompt=True) for c in conversations]
        pad_side = tok.padding_side
        try:
            # Decoder-only batched generation needs left padding so every prompt ends where the reply starts.
            tok.padding_side = "left"
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token
            enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        finally:
            tok.padding_side = pad_side
        device = torch.device(self.config.device) if self.config.device else getattr(self.model, "device", "cpu")
        enc = {k: v.to(device) for k, v in enc.items()}
        kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "pad_token_id": tok.pad_token_id}
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature)
            if top_p is not None:
                kwargs["top_p"] = float(top_p)
        else:
            kwargs.update(do_sample=False)
        reuse = (self.prefix_cache and len(conversations) == 1
                 and getattr(getattr(self.model, "generation_config", None), "cache_implementation", None) is None)
        if reuse:
            kwargs["return_dict_in_generate"] = True
        cached = 0
        with self._lock:
            self._calls += 1
            seed = None if self.config.seed is None else derive_seed(self.config.seed, self.role, self._calls)
            was_training = bool(getattr(self.model, "training", False))
            try:
                if reuse:
                    weights = _weights_state(self.model)
                    cache, cached = self._take_prefix(enc["input_ids"][0].tolist(), weights)
                    if cache is not None:
                        kwargs[_cache_kwarg()] = cache
                self.model.eval()
                with torch.random.fork_rng(devices=[]), torch.no_grad():
                    if seed is not None:
                        torch.manual_seed(seed % 2**63)
                    generated = self.model.generate(**enc, **kwargs)
                if reuse:
                    generated = self._keep_prefix(generated, weights)
            except Exception as exc:  # e.g. out of memory: reported like any other model failure
                self.stats.record_failure("error")
                raise LLMError(f"{self.role}: local generation failed: {exc}", kind="error") from exc
            finally:
                if was_training:
                    self.model.train()
        prompt_len = enc["input_ids"].shape[1]
        replies = []
        for row, mask in zip(generated, enc["attention_mask"]):
            new = row[prompt_len:]
            text = tok.decode(new, skip_special_tokens=True)
            for s in stop:
                if s and s in text:
                    text = text[: text.index(s)]
            replies.append(text)
            n_new = int((new != tok.pad_token_id).sum())
            self.stats.record_call(prompt_tokens=int(mask.sum()), completion_tokens=n_new, cached_tokens=cached)
        return replies

    def _take_prefix(self, ids: list[int], weights: Any) -> tuple[Any, int]:
        """The kept cache cropped to its common prefix with ``ids`` (at least one token left to
        compute), and that prefix's length; ``(None, 0)`` if nothing can be reused. Under the lock."""
        prefix, self._prefix = self._prefix, None  # a failed generate must not leave a half-updated cache
        if prefix is None or not _same_weights(prefix.weights, weights):
            return None, 0
        n = min(_common_prefix(prefix.ids, ids), len(ids) - 1)
        if n <= 0:
            return None, 0
        cache = prefix.cache
        if cache.get_seq_length() > n:
            cache.crop(n - cache.get_seq_length())
        return cache, n

    def _keep_prefix(self, output: Any, weights: Any) -> Any:
        """Keep the cache ``generate`` returned (cut to ``prefix_cache_tokens``); return its sequences."""
        cache = getattr(output, "cache", None)
        if cache is None:
            cache = getattr(output, "past_key_values", None)
        sequence = output.sequences[0]
        length = cache.get_seq_length() if cache is not None else 0
        if weights is not None and _keepable(cache) and 0 < length <= len(sequence):
            cap = self.config.prefix_cache_tokens
            if length > cap:
                cache.crop(cap - length)
                for layer in cache.layers:  # a cropped layer is a view: copy it so the cut memory is freed
                    layer.keys, layer.values = layer.keys.clone(), layer.values.clone()
                length = cap
            self._prefix = _Prefix(sequence[:length].tolist(), cache, weights)
        return output.sequences


class TransformersChatClient(PolicyChatClient):
    """A local transformers model loaded from ``config.model`` (a directory; never downloaded).

    Its weights are its own and stay as loaded, so prefix reuse is on by default (see the module
    docstring; ``prefix_cache=False`` turns it off): a multi-turn conversation computes each call's
    new messages only, as long as the conversation so far fits ``prefix_cache_tokens``.
    """

    backend = "transformers"
    default_prefix_cache = True

    def __init__(self, config: LLMConfig | None = None, *, role: str = "default", **overrides: Any) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        config = config or LLMConfig(backend=self.backend)
        if overrides:
            config = config.replace(**overrides)
        if not config.model:
            raise ValueError("TransformersChatClient needs config.model, a local model directory; got ''")
        dtype = getattr(torch, config.dtype) if config.dtype else None
        tokenizer = AutoTokenizer.from_pretrained(config.model, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(config.model, local_files_only=True, dtype=dtype)
        if config.device:
            model.to(config.device)
        super().__init__(model, tokenizer, config, role=role)
