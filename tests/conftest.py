"""Shared pytest configuration: offline by default, and seeds that do not leak between tests."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


import pytest  # noqa: E402


@pytest.fixture
def llm_server():
    """A scripted OpenAI-compatible server on loopback (``evolver_gym.core.llm.testing``).

    ``llm_server.push("reply", ...)``, ``llm_server.fail_next(Fault.http(429))``,
    ``llm_server.handler = lambda body: ...``, ``llm_server.client(role=...)``, ``llm_server.requests``.
    """
    from evolver_gym.core.llm.testing import ScriptedLLMServer

    with ScriptedLLMServer() as server:
        yield server
