"""Language-model clients for every role (see :mod:`evolver_gym.core.llm.base` for the protocol).

* ``ChatClient``, ``LLMError``, ``LLMBatchError``, ``Message`` - the protocol and its errors.
* ``LLMConfig``, ``RolesConfig``, ``ROLES`` - per-role configuration (YAML or dicts).
* ``OpenAIChatClient`` - any OpenAI-compatible endpoint, with retries, limits and accounting.
* ``PolicyChatClient``, ``TransformersChatClient`` - in-process generation with transformers.
* ``build_clients`` / ``LLMClients.client_for(role)`` - the per-role factory.
* ``UsageStats`` - the per-client counters.

The test server lives in :mod:`evolver_gym.core.llm.testing` (imported on demand).
"""

from __future__ import annotations

from typing import Any

from .base import ChatClient, LLMBatchError, LLMError, Message
from .config import BACKENDS, ROLES, LLMConfig, RolesConfig
from .factory import LLMClients, build_client, build_clients
from .stats import UsageStats

__all__ = [
    "BACKENDS",
    "ROLES",
    "ChatClient",
    "LLMBatchError",
    "LLMClients",
    "LLMConfig",
    "LLMError",
    "Message",
    "OpenAIChatClient",
    "PolicyChatClient",
    "RolesConfig",
    "TransformersChatClient",
    "UsageStats",
    "build_client",
    "build_clients",
]

_LAZY = {"OpenAIChatClient": ".openai_client", "PolicyChatClient": ".local", "TransformersChatClient": ".local"}


def __getattr__(name: str) -> Any:
    # Backends import optional dependencies (openai, torch): load them only when asked for.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
