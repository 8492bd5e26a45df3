"""Prefix reuse in the in-process clients: the same replies as a fresh computation, token for token.

The model is the tiny chat model in float64 with its matrices redrawn at a larger scale (std 0.3): its
replies then depend on the whole conversation (at the default scale they hardly depend on it, and a
wrong cache could go unseen), and a cached prefix and a fresh one agree to far below any gap between
two tokens' logits, so a difference in a reply is a bug, not rounding.
"""

from __future__ import annotations

import copy
import threading

import pytest
import torch

from evolver_gym.core.llm import LLMConfig, PolicyChatClient, TransformersChatClient
from evolver_gym.core.llm import local as local_module
from evolver_gym.core.llm.testing import build_tiny_chat_model

SYSTEM = {"role": "system", "content": "search for red shoes and click the first item " * 4}
USERS = ["search for red shoes", "click the first item", "buy now", "Step 1 Judgment: GOOD",
         "the quick brown fox", "Step 2 Judgment: BAD"]


@pytest.fixture()
def tiny():
    model, tok = build_tiny_chat_model(seed=0)
    model.double()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.copy_(0.3 * torch.randn(p.shape, generator=generator, dtype=p.dtype))
    return model, tok


def clients(model, tok, **settings):
    settings = {"max_tokens": 10, "temperature": 0.0, **settings}
    cached = PolicyChatClient(model, tok, prefix_cache=True, **settings)
    fresh = PolicyChatClient(model, tok, prefix_cache=False, **settings)
    return cached, fresh


def play(cached, fresh, conversation, users):
    """Extend ``conversation`` with a user message and the (shared) reply per user text; the replies."""
    pairs = []
    for text in users:
        conversation.append({"role": "user", "content": text})
        pairs.append((cached.chat(conversation), fresh.chat(conversation)))
        conversation.append({"role": "assistant", "content": pairs[-1][1]})
    return pairs


def cached_tokens(client):
    return client.stats.snapshot()["cached_prompt_tokens"]


def test_greedy_multi_turn_replies_equal_fresh_ones(tiny):
    model, tok = tiny
    cached, fresh = clients(model, tok)
    pairs = play(cached, fresh, [SYSTEM], USERS)
    assert [a for a, _ in pairs] == [b for _, b in pairs]
    assert len({b for _, b in pairs}) == len(pairs)  # replies depend on the conversation
    stats = cached.stats.snapshot()
    # every call after the first reads the previous prompt and most of the reply from the cache
    assert stats["cached_prompt_tokens"] > 0.6 * stats["prompt_tokens"]
    assert cached_tokens(fresh) == 0


def test_diverging_edited_and_unrelated_conversations(tiny):
    model, tok = tiny
    cached, fresh = clients(model, tok)
    base = [SYSTEM]
    play(cached, fresh, base, USERS[:4])
    checks = []
    # a branch from the middle: the cache holds a longer conversation that went another way
    branch = base[:4]
    checks += play(cached, fresh, branch, ["the quick brown fox", "buy now"])
    # an earlier message edited: only the text before the edit is shared
    edited = [dict(m) for m in base]
    edited[3]["content"] = "Step 2 Judgment: BAD"
    checks += play(cached, fresh, edited, ["click the first item"])
    # a reply that is not the model's own (a caller's stop string cut it, say)
    own = base + [{"role": "user", "content": "search for red shoes"}]
    reply = cached.chat(own)
    assert reply == fresh.chat(own)
    checks += play(cached, fresh, own + [{"role": "assistant", "content": reply[:3]}], ["buy now"])
    # another conversation altogether, then back to the first
    checks += play(cached, fresh, [{"role": "user", "content": "the lazy dog"}], USERS[:2])
    checks += play(cached, fresh, base, USERS[4:])
    assert all(a == b for a, b in checks), checks
    assert cached_tokens(cached) > 0


def test_seeded_sampling_with_the_cache_equals_without(tiny):
    model, tok = tiny
    cached, fresh = clients(model, tok, temperature=1.0, seed=11, max_tokens=12)
    pairs = play(cached, fresh, [SYSTEM], USERS)
    assert [a for a, _ in pairs] == [b for _, b in pairs]
    assert len({b for _, b in pairs}) > 1
    again, _ = clients(model, tok, temperature=1.0, seed=11, max_tokens=12)
    conversation = [SYSTEM]
    for text, (_, reply) in zip(USERS, pairs):
        conversation.append({"role": "user", "content": text})
        assert again.chat(conversation) == reply  # reproducible from the seed
        conversation.append({"role": "assistant", "content": reply})
    assert cached_tokens(again) > 0


def optimizer_step(model, tok):
    ids = tok(["buy now and search for red shoes"], return_tensors="pt")["input_ids"]
    optimizer = torch.optim.SGD(model.parameters(), lr=5.0)
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    model.zero_grad(set_to_none=True)


def write_through_data(model, tok):
    with torch.no_grad():
        for p in model.parameters():
            p.data.mul_(1.5)  # same storage, no version counter bump: only the sampled values differ


@pytest.mark.parametrize("change", [optimizer_step, write_through_data])
def test_cache_is_not_used_after_the_weights_change(tiny, change):
    model, tok = tiny
    cached, fresh = clients(model, tok)
    conversation = [SYSTEM]
    play(cached, fresh, conversation, USERS[:2])
    conversation.append({"role": "user", "content": USERS[2]})
    old_ids, old_cache = list(cached._prefix.ids), copy.deepcopy(cached._prefix.cache)
    change(model, tok)

    before = cached_tokens(cached)
    expected = fresh.chat(conversation)
    assert cached.chat(conversation) == expected
    assert cached_tokens(cached) == before  # nothing reused across the change
    # the guard matters: the cache of the old weights, passed off as current, gives another reply
    stale = PolicyChatClient(model, tok, max_tokens=10, temperature=0.0, prefix_cache=True)
    stale._prefix = local_module._Prefix(old_ids, old_cache, local_module._weights_state(model))
    assert stale.chat(conversation) != expected
    assert cached_tokens(stale) > 0


def test_reset_and_the_token_cap(tiny):
    model, tok = tiny
    cached, fresh = clients(model, tok, prefix_cache_tokens=20)
    pairs = play(cached, fresh, [SYSTEM], USERS[:3])
    assert [a for a, _ in pairs] == [b for _, b in pairs]
    assert cached._prefix.cache.get_seq_length() == len(cached._prefix.ids) == 20
    assert cached_tokens(cached) == 2 * 20  # calls 2 and 3 reuse the first 20 tokens only
    cached.reset_prefix_cache()
    assert cached._prefix is None


def test_batched_calls_take_the_plain_path_and_keep_the_cache(tiny):
    model, tok = tiny
    cached, fresh = clients(model, tok)
    conversation = [SYSTEM]
    play(cached, fresh, conversation, USERS[:2])
    kept = cached._prefix
    other = [[{"role": "user", "content": u}] for u in USERS[:3]]
    assert cached.chat_batch(other) == fresh.chat_batch(other)
    assert cached._prefix is kept
    before = cached_tokens(cached)
    conversation.append({"role": "user", "content": USERS[2]})
    assert cached.chat(conversation) == fresh.chat(conversation)
    assert cached_tokens(cached) > before


def test_threads_sharing_a_client_get_fresh_replies(tiny):
    model, tok = tiny
    cached, fresh = clients(model, tok)
    conversations = [[SYSTEM, {"role": "user", "content": u}] for u in USERS]
    expected = [fresh.chat(c) for c in conversations]
    results: dict[int, list[str]] = {}

    def worker(i):
        results[i] = [cached.chat(conversations[(i + k) % len(conversations)]) for k in range(len(conversations))]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, got in results.items():
        assert got == [expected[(i + k) % len(conversations)] for k in range(len(conversations))]
    assert cached_tokens(cached) > 0


def test_defaults_per_backend(tiny, tmp_path):
    model, tok = tiny
    assert PolicyChatClient(model, tok).prefix_cache is False
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    config = LLMConfig(backend="transformers", model=str(tmp_path), max_tokens=6, temperature=0.0)
    client = TransformersChatClient(config)
    assert client.prefix_cache is True
    assert TransformersChatClient(config, prefix_cache=False).prefix_cache is False
    conversation = [SYSTEM, {"role": "user", "content": "buy now"}]
    reply = client.chat(conversation)
    client.chat(conversation + [{"role": "assistant", "content": reply}, {"role": "user", "content": "buy now"}])
    assert cached_tokens(client) > 0
    with pytest.raises(ValueError, match="prefix_cache_tokens"):
        LLMConfig(prefix_cache_tokens=0)
