"""Build one chat client per role from configuration.

* ``build_client`` - one client from one :class:`LLMConfig`.
* ``LLMClients`` - the clients of every role; ``client_for(role)`` and ``stats()``.
* ``build_clients`` - ``LLMClients`` from a YAML path, a dict or a :class:`RolesConfig`.

Example:
    >>> from evolver_gym.core.llm.testing import ScriptedLLMServer
    >>> with ScriptedLLMServer(replies=["GOOD"]) as server:
    ...     clients = build_clients({"defaults": {"base_url": server.url, "model": "m", "api_key": "k"},
    ...                              "roles": {"judge": {"temperature": 0.0}}})
    ...     clients.client_for("judge").chat([{"role": "user", "content": "ok?"}])
    ...     clients.stats()["judge"]["calls"]
    'GOOD'
    1
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from .base import ChatClient
from .config import ROLES, LLMConfig, RolesConfig

__all__ = ["LLMClients", "build_client", "build_clients"]


def build_client(config: LLMConfig, *, role: str = "default", policy: tuple[Any, Any] | None = None) -> ChatClient:
    """A client for ``config.backend``; ``policy`` is ``(model, tokenizer)`` for the policy backend."""
    if config.backend == "openai":
        from .openai_client import OpenAIChatClient

        return OpenAIChatClient(config, role=role)
    if config.backend == "transformers":
        from .local import TransformersChatClient

        return TransformersChatClient(config, role=role)
    if policy is None:
        raise ValueError(f"role {role!r} uses backend 'policy' but no policy=(model, tokenizer) was given")
    from .local import PolicyChatClient

    model, tokenizer = policy
    return PolicyChatClient(model, tokenizer, config, role=role)


class LLMClients:
    """One client per role, built lazily on first use.

    Args:
        config: Defaults and per-role overrides.
        policy: ``(model, tokenizer)`` of the training policy, for roles with backend ``policy``.
    """

    def __init__(self, config: RolesConfig, *, policy: tuple[Any, Any] | None = None) -> None:
        self.config = config
        self.policy = policy
        self._clients: dict[str, ChatClient] = {}
        self._lock = threading.Lock()

    def client_for(self, role: str) -> ChatClient:
        """The client of ``role`` (one of :data:`ROLES`); defaults apply to unconfigured roles."""
        with self._lock:
            if role not in self._clients:
                self._clients[role] = build_client(self.config.for_role(role), role=role, policy=self.policy)
            return self._clients[role]

    def __getitem__(self, role: str) -> ChatClient:
        return self.client_for(role)

    def stats(self) -> dict[str, dict[str, Any]]:
        """Usage counters of every client built so far, by role."""
        with self._lock:
            return {role: c.stats.snapshot() for role, c in self._clients.items() if hasattr(c, "stats")}

    @property
    def roles(self) -> tuple[str, ...]:
        return ROLES


def build_clients(config: str | Path | dict[str, Any] | RolesConfig | None = None, *,
                  policy: tuple[Any, Any] | None = None) -> LLMClients:
    """Per-role clients from a YAML file path, a ``{"defaults": ..., "roles": ...}`` dict or a
    :class:`RolesConfig` (``None``: defaults only)."""
    if isinstance(config, RolesConfig):
        roles = config
    elif isinstance(config, (str, Path)):
        roles = RolesConfig.from_yaml(config)
    elif config is None or isinstance(config, dict):
        roles = RolesConfig.from_dict(config)
    else:
        raise TypeError(f"build_clients takes a YAML path, a dict or a RolesConfig, got {type(config).__name__}")
    return LLMClients(roles, policy=policy)
