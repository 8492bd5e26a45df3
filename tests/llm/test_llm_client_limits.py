"""The client's limits against a misbehaving server: a deadline per attempt, a body size cap, odd
usage counts, and a log that cannot be written."""

from __future__ import annotations

import json
import os

import pytest

from evolver_gym.core.llm import LLMError, OpenAIChatClient
from evolver_gym.core.llm.testing import Fault

MSG = [{"role": "user", "content": "say hello please"}]


@pytest.mark.parametrize("fault", [Fault.trickle(0.05), Fault.endless(0.02)], ids=["trickle", "endless"])
def test_a_slow_or_endless_reply_is_cut_at_the_deadline(llm_server, fault):
    """~250 bytes at one per 50 ms take 12 s, a chunked body that never ends takes forever; the
    attempt's 0.5 s timeout is a deadline for all of the reply."""
    llm_server.fail_next(fault, times=2)
    client = llm_server.client(timeout=0.5, max_retries=1)
    with pytest.raises(LLMError) as info:
        client.chat(MSG)
    assert info.value.kind == "timeout"
    assert len(llm_server.requests) == 2 and client.stats.snapshot()["retries"] == 1


def test_a_reply_over_the_size_limit_is_refused_and_not_retried(llm_server):
    llm_server.fail_next(Fault.huge(3 * 2**20))
    client = llm_server.client(max_response_bytes=2**20, max_retries=3)
    with pytest.raises(LLMError) as info:
        client.chat(MSG)
    assert info.value.kind == "too_large" and "max_response_bytes" in str(info.value)
    assert len(llm_server.requests) == 1


def test_a_reply_under_the_size_limit_is_kept(llm_server):
    llm_server.fail_next(Fault.huge(2**19))
    client = llm_server.client(max_response_bytes=2**20)
    assert set(client.chat(MSG)) == {"x"}


def test_a_good_reply_with_odd_usage_counts_is_kept(llm_server):
    llm_server.fail_next(Fault.bad_usage("fine"))
    client = llm_server.client(max_retries=0)
    assert client.chat(MSG) == "fine"
    stats = client.stats.snapshot()
    assert (stats["calls"], stats["prompt_tokens"], stats["completion_tokens"]) == (1, 0, 0)


@pytest.mark.parametrize("where", ["missing-folder", "full-disk"])
def test_an_unwritable_log_never_fails_the_call(llm_server, tmp_path, where, caplog):
    if where == "full-disk" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    path = str(tmp_path / "no" / "such" / "folder" / "log.jsonl") if where == "missing-folder" else "/dev/full"
    client = llm_server.client(log_path=path)
    assert client.chat(MSG) == "say hello please"
    assert client.chat(MSG) == "say hello please"
    assert client.stats.snapshot()["log_errors"] == 2
    assert sum("cannot write the LLM log" in r.getMessage() for r in caplog.records) == 1  # warned once


def test_the_log_still_records_attempts(llm_server, tmp_path):
    path = tmp_path / "log.jsonl"
    llm_server.fail_next(Fault.trickle(0.05))
    client = llm_server.client(timeout=0.3, max_retries=1, log_path=str(path))
    assert client.chat(MSG) == "say hello please"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r.get("error", {}).get("kind") for r in records] == ["timeout", None]


def test_without_a_model_the_servers_only_model_is_used(llm_server):
    client = llm_server.client(model="")
    assert client.chat(MSG) == "say hello please"
    assert llm_server.requests[-1]["model"] == llm_server.model


def test_without_a_model_and_no_model_list_the_error_says_what_to_set():
    from evolver_gym.core.llm.testing import ScriptedLLMServer

    with ScriptedLLMServer() as server:
        url = server.url
    client = OpenAIChatClient(base_url=url, model="", api_key="k", timeout=1.0, max_retries=0)
    with pytest.raises(LLMError, match="set `model`"):
        client.chat(MSG)
