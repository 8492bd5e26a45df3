"""The OpenAI-compatible client against the scripted loopback server, faults included."""

from __future__ import annotations

import json
import threading
import time

import pytest

from evolver_gym.core.llm import LLMBatchError, LLMConfig, LLMError, OpenAIChatClient
from evolver_gym.core.llm.testing import Fault, ScriptedLLMServer

MSG = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "say hello please"}]


def test_plain_reply_counts_tokens_and_sends_settings(llm_server):
    llm_server.push("hello there friend")
    client = llm_server.client(role="judge", temperature=0.0, max_tokens=77, seed=5, extra_body={"top_k": 3})
    assert client.chat(MSG) == "hello there friend"
    body = llm_server.requests[-1]
    assert body["messages"] == MSG
    assert body["model"] == llm_server.model
    assert (body["temperature"], body["max_tokens"], body["seed"], body["top_k"]) == (0.0, 77, 5, 3)
    stats = client.stats.snapshot()
    assert stats["role"] == "judge"
    assert (stats["calls"], stats["failures"], stats["retries"]) == (1, 0, 0)
    assert stats["prompt_tokens"] == 5 and stats["completion_tokens"] == 3


def test_overrides_win_for_one_call(llm_server):
    llm_server.push("a", "b")
    client = llm_server.client(temperature=0.5)
    client.chat(MSG, temperature=1.3, max_tokens=9)
    client.chat(MSG)
    first, second = llm_server.requests[-2:]
    assert (first["temperature"], first["max_tokens"]) == (1.3, 9)
    assert second["temperature"] == 0.5


@pytest.mark.parametrize("fault,kind", [
    (Fault.http(429), "rate_limit"),
    (Fault.http(500), "server"),
    (Fault.http(503), "server"),
    (Fault.malformed(), "malformed"),
    (Fault.truncated(), "malformed"),
    (Fault.empty(), "malformed"),
    (Fault.delay(1.0), "timeout"),
])
def test_transient_fault_is_retried_then_succeeds(llm_server, fault, kind):
    llm_server.fail_next(fault, times=2)
    llm_server.push("finally")
    client = llm_server.client(timeout=0.25, max_retries=3)
    sleeps: list[float] = []
    client.sleep = sleeps.append
    assert client.chat(MSG) == "finally"
    stats = client.stats.snapshot()
    assert stats["retries"] == 2 and stats["failures"] == 0 and stats["calls"] == 1
    assert stats["errors"] == {kind: 2}
    assert len(sleeps) == 2
    assert len(llm_server.requests) == 3


@pytest.mark.parametrize("fault,kind,status", [
    (Fault.http(429), "rate_limit", 429),
    (Fault.http(502), "server", 502),
    (Fault.malformed(), "malformed", None),
    (Fault.truncated(), "malformed", None),
    (Fault.delay(1.0), "timeout", None),
])
def test_persistent_fault_raises_llmerror_within_bound(llm_server, fault, kind, status):
    llm_server.fail_next(fault, times=10)
    client = llm_server.client(timeout=0.2, max_retries=2)
    with pytest.raises(LLMError) as info:
        client.chat(MSG)
    assert info.value.kind == kind and info.value.status == status
    stats = client.stats.snapshot()
    assert (stats["retries"], stats["failures"], stats["calls"]) == (2, 1, 0)
    assert stats["failure_kinds"] == {kind: 1}
    assert len(llm_server.requests) == 3  # 1 attempt + max_retries, never more


def test_client_errors_are_not_retried(llm_server):
    llm_server.fail_next(Fault.http(400), times=5)
    client = llm_server.client(max_retries=4)
    with pytest.raises(LLMError) as info:
        client.chat(MSG)
    assert info.value.kind == "client" and info.value.status == 400
    assert len(llm_server.requests) == 1
    assert client.stats.snapshot()["retries"] == 0


def test_unreachable_server_is_a_connection_error():
    server = ScriptedLLMServer()
    url = server.url
    server.stop()  # never started and now closed: nothing listens on the port
    client = OpenAIChatClient(base_url=url, model="m", api_key="k", timeout=1.0, max_retries=1,
                              backoff_base=0.001, backoff_max=0.001)
    with pytest.raises(LLMError) as info:
        client.chat(MSG)
    assert info.value.kind == "connection"
    assert client.stats.snapshot()["retries"] == 1


def test_backoff_grows_exponentially_with_bounded_jitter_and_honours_retry_after(llm_server):
    client = llm_server.client(backoff_base=0.1, backoff_max=1.0, jitter=0.5, max_retries=5, seed=3)
    delays = [client._backoff(a, None) for a in range(6)]
    for attempt, d in enumerate(delays):
        base = min(1.0, 0.1 * 2 ** attempt)
        assert base * 0.5 <= d <= base
    assert client._backoff(0, 0.7) >= 0.7          # Retry-After respected
    assert client._backoff(0, 99.0) <= 1.0          # but capped by backoff_max
    again = llm_server.client(backoff_base=0.1, backoff_max=1.0, jitter=0.5, max_retries=5, seed=3)
    assert [again._backoff(a, None) for a in range(6)] == delays  # jitter comes from the seed


def test_rate_limit_retry_after_header_sets_the_wait(llm_server):
    llm_server.fail_next(Fault.http(429, retry_after=0.3))
    llm_server.push("ok")
    client = llm_server.client(backoff_base=0.001, backoff_max=5.0)
    sleeps: list[float] = []
    client.sleep = sleeps.append
    assert client.chat(MSG) == "ok"
    assert sleeps == [pytest.approx(0.3)]


def test_chat_batch_keeps_order_and_respects_concurrency():
    in_flight, peak = 0, 0
    lock = threading.Lock()

    def handler(body):
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.05)
        with lock:
            in_flight -= 1
        return "echo:" + body["messages"][-1]["content"]

    with ScriptedLLMServer(handler=handler) as server:
        client = server.client(concurrency=3)
        convs = [[{"role": "user", "content": str(i)}] for i in range(10)]
        assert client.chat_batch(convs) == [f"echo:{i}" for i in range(10)]
    assert 2 <= peak <= 3
    assert client.stats.snapshot()["calls"] == 10


def test_chat_batch_reports_partial_failure_with_the_good_results():
    def handler(body):
        text = body["messages"][-1]["content"]
        return Fault.http(500) if text == "bad" else "ok:" + text

    with ScriptedLLMServer(handler=handler) as server:
        client = server.client(max_retries=1)
        with pytest.raises(LLMBatchError) as info:
            client.chat_batch([[{"role": "user", "content": t}] for t in ("a", "bad", "c")])
    err = info.value
    assert err.kind == "server" and isinstance(err, LLMError)
    assert err.results == ["ok:a", None, "ok:c"]
    assert err.errors[1].kind == "server" and err.errors[0] is None
    assert client.stats.snapshot()["failures"] == 1


def test_bad_messages_name_the_bad_value(llm_server):
    client = llm_server.client()
    with pytest.raises(ValueError, match="message 0"):
        client.chat([{"role": "user", "content": 3}])
    with pytest.raises(ValueError, match="non-empty list"):
        client.chat([])
    assert llm_server.requests == []


def test_jsonl_log_records_attempts(llm_server, tmp_path):
    log = tmp_path / "llm.jsonl"
    llm_server.fail_next(Fault.http(500))
    llm_server.push("logged")
    client = llm_server.client(role="summarizer", log_path=str(log))
    client.chat(MSG)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["attempt"] for r in lines] == [0, 1]
    assert lines[0]["error"]["kind"] == "server" and lines[0]["error"]["status"] == 500
    assert lines[1]["response"] == "logged" and lines[1]["role"] == "summarizer"
    assert lines[1]["request"]["messages"] == MSG


def test_api_key_and_base_url_from_env_file(tmp_path, monkeypatch, llm_server):
    env = tmp_path / ".env"
    env.write_text(f"EVOLVER_TEST_KEY=sk-from-dotenv\nOPENAI_BASE_URL={llm_server.url}\n")
    monkeypatch.delenv("EVOLVER_TEST_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    llm_server.push("ok")
    client = OpenAIChatClient(LLMConfig(model="m", api_key_env="EVOLVER_TEST_KEY", env_file=str(env)))
    assert client._client.api_key == "sk-from-dotenv"
    assert client.chat(MSG) == "ok"  # reached the server through OPENAI_BASE_URL from the file
    assert len(llm_server.requests) == 1


def test_models_endpoint_lists_the_model(llm_server):
    client = llm_server.client()
    assert [m.id for m in client._client.models.list()] == [llm_server.model]


def test_config_validation_names_the_bad_value():
    with pytest.raises(ValueError, match="'grpc'"):
        LLMConfig(backend="grpc")
    with pytest.raises(ValueError, match="-1"):
        LLMConfig(max_retries=-1)
    with pytest.raises(ValueError, match="temprature"):
        LLMConfig.from_dict({"temprature": 0.1})
