"""Chat clients that generate in-process with transformers.

* ``PolicyChatClient`` - wraps a given model and tokenizer (for example the policy being trained):
  batched generation through the tokenizer's chat template, left padding, no gradients, the
  model's train/eval mode restored afterwards, torch's global RNG untouched.
* ``TransformersChatClient`` - loads a local model directory (``config.model``) with
  ``AutoModelForCausalLM`` / ``AutoTokenizer`` (never from the hub) and serves it the same way.

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
    """

    backend = "policy"

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
        self._lock = threading.Lock()  # one generate() at a time on a shared model
        self._calls = 0

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
        with self._lock:
            self._calls += 1
            seed = None if self.config.seed is None else derive_seed(self.config.seed, self.role, self._calls)
            was_training = bool(getattr(self.model, "training", False))
            try:
                self.model.eval()
                with torch.random.fork_rng(devices=[]), torch.no_grad():
                    if seed is not None:
                        torch.manual_seed(seed % 2**63)
                    generated = self.model.generate(**enc, **kwargs)
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
            self.stats.record_call(prompt_tokens=int(mask.sum()), completion_tokens=n_new)
        return replies


class TransformersChatClient(PolicyChatClient):
    """A local transformers model loaded from ``config.model`` (a directory; never downloaded)."""

    backend = "transformers"

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
