"""Transformers and policy backends on a tiny model built from a config (no downloads)."""

from __future__ import annotations

import pytest
import torch

from evolver_gym.core.llm import LLMConfig, PolicyChatClient, TransformersChatClient
from evolver_gym.core.llm.testing import build_tiny_chat_model

CONVS = [[{"role": "user", "content": "search for red shoes"}],
         [{"role": "system", "content": "judge"}, {"role": "user", "content": "Step 1 Judgment: GOOD and more words"}]]


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_chat_model(seed=0)


def test_batched_greedy_matches_one_by_one(tiny):
    model, tok = tiny
    client = PolicyChatClient(model, tok, max_tokens=6, temperature=0.0)
    batch = client.chat_batch(CONVS)
    single = [client.chat(c) for c in CONVS]
    assert batch == single  # left padding: batching does not change greedy replies
    stats = client.stats.snapshot()
    assert stats["calls"] == 4 and 0 < stats["completion_tokens"] <= 4 * 6


def test_seeded_sampling_is_reproducible_and_leaves_global_rng_alone(tiny):
    model, tok = tiny
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = PolicyChatClient(model, tok, max_tokens=8, temperature=1.0, seed=7).chat_batch(CONVS)
    after = torch.rand(1)
    b = PolicyChatClient(model, tok, max_tokens=8, temperature=1.0, seed=7).chat_batch(CONVS)
    assert a == b
    assert torch.equal(before, after)


def test_training_mode_is_restored(tiny):
    model, tok = tiny
    model.train()
    try:
        PolicyChatClient(model, tok, max_tokens=2, temperature=0.0).chat(CONVS[0])
        assert model.training
    finally:
        model.eval()


def test_stop_strings_cut_the_reply(tiny):
    model, tok = tiny
    full = PolicyChatClient(model, tok, max_tokens=12, temperature=0.0).chat(CONVS[0])
    assert len(full) > 2
    cut_at = full[1:3]
    cut = PolicyChatClient(model, tok, max_tokens=12, temperature=0.0, stop=[cut_at]).chat(CONVS[0])
    assert cut == full[: full.index(cut_at)]


def test_transformers_backend_loads_a_local_directory(tiny, tmp_path):
    model, tok = tiny
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    client = TransformersChatClient(LLMConfig(backend="transformers", model=str(tmp_path), max_tokens=5,
                                              temperature=0.0), role="summarizer")
    reference = PolicyChatClient(model, tok, max_tokens=5, temperature=0.0)
    assert client.chat_batch(CONVS) == reference.chat_batch(CONVS)


def test_tokenizer_without_chat_template_is_refused(tiny):
    model, tok = tiny
    template, tok.chat_template = tok.chat_template, None
    try:
        with pytest.raises(ValueError, match="chat_template"):
            PolicyChatClient(model, tok)
    finally:
        tok.chat_template = template
