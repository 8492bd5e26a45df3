"""Fixtures of the scale-out tests: one real Milvus standalone server per session (started by the
``milvus`` package, ~10-25 s), and the packaged sentence embedder."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory):
    pytest.importorskip("milvus", reason="the Milvus server tests need the `milvus` package (extra: scale)")
    from wrappers.navigation.local_server import BULK_POOL_SETTINGS, LocalMilvusServer

    # the bulk-pool settings, so that the tests also show a setting reaching the server
    server = LocalMilvusServer(tmp_path_factory.mktemp("milvus"), settings=BULK_POOL_SETTINGS).start()
    yield server
    # Its data is thrown away: no need to wait out the server's graceful shutdown (up to 30 s).
    server.stop(timeout=3)


@pytest.fixture(scope="session")
def embedder():
    from wrappers.navigation import Embedder

    return Embedder()
