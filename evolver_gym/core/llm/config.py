"""Configuration of language-model clients, per role, from YAML or dicts.

* ``ROLES`` - the roles the project asks models in: explorer, proposer, judge, attributor,
  summarizer, arena.
* ``BACKENDS`` - ``openai`` (any OpenAI-compatible endpoint), ``transformers`` (a local model
  loaded from a path), ``policy`` (the training policy object).
* ``LLMConfig`` - one client's settings (backend, endpoint, sampling, retries, concurrency, log).
* ``RolesConfig`` - defaults plus per-role overrides; ``RolesConfig.from_yaml(path)``.

The YAML shape (every key of ``LLMConfig`` may appear under ``defaults`` or a role)::

    defaults:
      backend: openai
      base_url: http://127.0.0.1:8000/v1
      model: Qwen2.5-7B-Instruct
      api_key_env: OPENAI_API_KEY
    roles:
      judge: {temperature: 0.0, max_tokens: 2048}
      explorer: {temperature: 1.0}
      arena: {backend: policy}
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["BACKENDS", "ROLES", "LLMConfig", "RolesConfig"]

ROLES = ("explorer", "proposer", "judge", "attributor", "summarizer", "arena")
BACKENDS = ("openai", "transformers", "policy")


@dataclass
class LLMConfig:
    """Settings of one chat client. Unknown keys are refused with their name."""

    backend: str = field(default="openai", metadata={"help": f"One of {BACKENDS}."})
    model: str = field(default="", metadata={"help": "Model id (openai) or local path (transformers)."})
    base_url: str | None = field(default=None, metadata={
        "help": "OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1; None reads OPENAI_BASE_URL."})
    api_key: str | None = field(default=None, metadata={"help": "API key; prefer api_key_env."})
    api_key_env: str = field(default="OPENAI_API_KEY", metadata={
        "help": "Environment variable holding the key (also looked up in env_file)."})
    env_file: str | None = field(default=".env", metadata={
        "help": "A .env file loaded (without overriding the environment) before reading keys; None skips."})
    temperature: float = field(default=0.7, metadata={"help": "Sampling temperature; 0 is greedy."})
    top_p: float | None = field(default=None, metadata={"help": "Nucleus sampling; None keeps the server's."})
    max_tokens: int = field(default=1024, metadata={"help": "Completion length limit."})
    stop: list[str] | None = field(default=None, metadata={"help": "Stop strings."})
    seed: int | None = field(default=None, metadata={
        "help": "Sampling seed sent to the server / used for local generation and retry jitter."})
    extra_body: dict[str, Any] = field(default_factory=dict, metadata={
        "help": "Extra JSON fields sent with every request (e.g. vLLM's top_k)."})
    timeout: float = field(default=60.0, metadata={
        "help": "Seconds per attempt: a deadline for the whole reply, not per read."})
    max_response_bytes: int = field(default=16 * 2**20, metadata={
        "help": "Largest reply body accepted, in bytes; a larger one fails the call (kind 'too_large')."})
    max_retries: int = field(default=4, metadata={"help": "Retries after the first attempt (bounded)."})
    backoff_base: float = field(default=0.5, metadata={"help": "First backoff in seconds, doubled per retry."})
    backoff_max: float = field(default=30.0, metadata={"help": "Cap of one backoff (and of Retry-After)."})
    jitter: float = field(default=0.5, metadata={"help": "Share of each backoff drawn at random, in [0, 1]."})
    concurrency: int = field(default=8, metadata={"help": "Parallel requests in chat_batch."})
    log_path: str | None = field(default=None, metadata={"help": "JSONL log of requests and responses."})
    device: str | None = field(default=None, metadata={"help": "transformers/policy: device; None = model's."})
    dtype: str | None = field(default=None, metadata={"help": "transformers: torch dtype name to load in."})
    batch_size: int = field(default=8, metadata={"help": "transformers/policy: conversations per generate()."})
    prefix_cache: bool | None = field(default=None, metadata={
        "help": "transformers/policy: keep the KV cache of the last conversation and reuse it for the next "
                "prompt's shared prefix; None = on for transformers, off for policy (its weights are trained)."})
    prefix_cache_tokens: int = field(default=8192, metadata={
        "help": "transformers/policy: most tokens the kept KV cache covers (its first ones)."})

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"LLMConfig.backend must be one of {BACKENDS}, got {self.backend!r}")
        for name in ("timeout", "backoff_base", "backoff_max"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"LLMConfig.{name} must be a non-negative number, got {value!r}")
        for name in ("max_retries",):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"LLMConfig.{name} must be a non-negative int, got {value!r}")
        if self.prefix_cache not in (None, True, False):
            raise ValueError(f"LLMConfig.prefix_cache must be true, false or null, got {self.prefix_cache!r}")
        for name in ("concurrency", "batch_size", "max_tokens", "max_response_bytes", "prefix_cache_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"LLMConfig.{name} must be a positive int, got {value!r}")
        if not 0.0 <= float(self.jitter) <= 1.0:
            raise ValueError(f"LLMConfig.jitter must be in [0, 1], got {self.jitter!r}")
        if self.timeout == 0:
            raise ValueError("LLMConfig.timeout must be positive, got 0")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LLMConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown LLM config keys {unknown}; known keys: {sorted(names)}")
        return cls(**data)

    def replace(self, **changes: Any) -> LLMConfig:
        return LLMConfig.from_dict({**dataclasses.asdict(self), **changes})


@dataclass
class RolesConfig:
    """Defaults shared by all roles plus per-role overrides."""

    defaults: dict[str, Any] = field(default_factory=dict)
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.roles) - set(ROLES))
        if unknown:
            raise ValueError(f"unknown LLM roles {unknown}; known roles: {list(ROLES)}")
        for role, overrides in self.roles.items():
            if not isinstance(overrides, dict):
                raise TypeError(f"role {role!r} must map to a dict of settings, got {overrides!r}")
        LLMConfig.from_dict(self.defaults)  # fail early on a bad default
        for role in self.roles:
            self.for_role(role)

    def for_role(self, role: str) -> LLMConfig:
        """The merged settings of ``role`` (defaults, then the role's overrides)."""
        if role not in ROLES:
            raise ValueError(f"unknown LLM role {role!r}; known roles: {list(ROLES)}")
        return LLMConfig.from_dict({**self.defaults, **self.roles.get(role, {})})

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RolesConfig:
        data = dict(data or {})
        unknown = sorted(set(data) - {"defaults", "roles"})
        if unknown:
            raise ValueError(f"LLM roles config takes 'defaults' and 'roles', got extra keys {unknown}")
        return cls(defaults=dict(data.get("defaults") or {}), roles=dict(data.get("roles") or {}))

    @classmethod
    def from_yaml(cls, path: str | Path) -> RolesConfig:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
        if data is not None and not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
        return cls.from_dict(data)
