"""Fixtures of the navigation tests: one embedder per session (loading it costs seconds)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def embedder():
    from wrappers.navigation import Embedder

    return Embedder()


@pytest.fixture
def pool(tmp_path, embedder):
    from wrappers.navigation import ExperiencePool

    p = ExperiencePool(uri=str(tmp_path / "pool.db"), embedder=embedder, threshold=0.0)
    yield p
    p.close()
