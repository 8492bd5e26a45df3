"""Language-model clients for every role (see :mod:`evolver_gym.core.llm.base` for the protocol)."""

from .base import ChatClient, LLMError, Message

__all__ = ["ChatClient", "LLMError", "Message"]
