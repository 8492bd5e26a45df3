"""The embedder: unit-norm float32 vectors, the precision setting and its effect on retrieval."""

from __future__ import annotations

import numpy as np
import pytest

from wrappers.navigation import Embedder
from wrappers.navigation.embedder import PRECISIONS, native_bfloat16

TEXTS = ["size 9 running shoes for men, breathable", "a navy blue cotton t-shirt, pack of 2",
         "organic green tea bags, caffeine free", "stainless steel water bottle that keeps drinks cold",
         "wireless earbuds with a charging case", "gluten free dark chocolate snack bars",
         "non slip yoga mat, extra thick", "a king size memory foam pillow"]
QUERIES = ["men's breathable sneakers size 9", "cotton tee in navy, two pack", "decaf herbal tea",
           "insulated steel bottle", "bluetooth earphones", "chocolate bars without gluten",
           "thick exercise mat", "memory foam bed pillow"]


def test_vectors_are_unit_norm_float32_and_empty_input_is_empty(embedder):
    vecs = embedder.encode(TEXTS)
    assert vecs.dtype == np.float32 and vecs.shape == (len(TEXTS), embedder.dim)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, embedder.dim)
    assert embedder.precision in ("float32", "bfloat16") and embedder.precision in repr(embedder)
    with pytest.raises(TypeError, match="takes strings"):
        embedder.encode(["ok", 3])


def test_bad_settings_name_the_value():
    with pytest.raises(ValueError, match="precision must be one of .*got 'fp8'"):
        Embedder(precision="fp8")
    with pytest.raises(ValueError, match="batch_size must be a positive int, got 0"):
        Embedder(batch_size=0)
    assert PRECISIONS[0] == "auto"


def test_auto_precision_follows_the_hardware():
    assert Embedder(precision="auto").precision == ("bfloat16" if native_bfloat16("cpu") else "float32")
    assert Embedder(precision="float32").precision == "float32"
    assert native_bfloat16("meta") is False


def test_bfloat16_vectors_agree_with_float32_and_rank_the_same():
    exact, fast = Embedder(precision="float32"), Embedder(precision="bfloat16")
    a, b = exact.encode(TEXTS + QUERIES), fast.encode(TEXTS + QUERIES)
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(a * b, axis=1))) > 0.99  # same direction, text by text
    docs, queries = a[: len(TEXTS)], a[len(TEXTS):]
    docs_b, queries_b = b[: len(TEXTS)], b[len(TEXTS):]
    best = np.argmax(queries @ docs.T, axis=1)
    assert best.tolist() == list(range(len(QUERIES)))  # each query finds its own text
    assert np.argmax(queries_b @ docs_b.T, axis=1).tolist() == best.tolist()
    assert np.array_equal(exact.encode(TEXTS), exact.encode(TEXTS))  # the same batch, the same vectors
    assert np.array_equal(fast.encode(TEXTS), fast.encode(TEXTS))
