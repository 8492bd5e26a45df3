"""The scripted server itself, spoken to with raw HTTP (no client library in between)."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlparse

import pytest

from evolver_gym.core.llm import LLMError
from evolver_gym.core.llm.testing import Fault, ScriptedLLMServer


def _post(server: ScriptedLLMServer, body: dict, path: str = "/v1/chat/completions"):
    u = urlparse(server.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
    payload = json.dumps(body).encode()
    conn.request("POST", path, body=payload, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    status = resp.status
    try:
        raw = resp.read()
    except http.client.IncompleteRead as exc:
        raw = exc.partial
    conn.close()
    return status, raw, resp


BODY = {"model": "x", "messages": [{"role": "user", "content": "ping"}]}


def test_queue_then_handler_then_echo():
    with ScriptedLLMServer(replies=["first"]) as server:
        assert json.loads(_post(server, BODY)[1])["choices"][0]["message"]["content"] == "first"
        assert json.loads(_post(server, BODY)[1])["choices"][0]["message"]["content"] == "ping"  # echo
        server.handler = lambda body: "from handler"
        assert json.loads(_post(server, BODY)[1])["choices"][0]["message"]["content"] == "from handler"
        assert len(server.requests) == 3 and server.requests[0] == BODY


def test_faults_on_the_wire():
    with ScriptedLLMServer() as server:
        server.fail_next(Fault.http(429, retry_after=2))
        status, raw, resp = _post(server, BODY)
        assert status == 429 and resp.getheader("Retry-After") == "2"
        assert json.loads(raw)["error"]["code"] == 429

        server.fail_next("malformed")
        status, raw, _ = _post(server, BODY)
        assert status == 200
        with pytest.raises(json.JSONDecodeError):
            json.loads(raw)

        server.fail_next(Fault.truncated())
        status, raw, resp = _post(server, BODY)
        assert status == 200 and len(raw) < int(resp.getheader("Content-Length"))

        server.fail_next(Fault.empty())
        assert json.loads(_post(server, BODY)[1])["choices"] == []


def test_bad_requests_and_routes():
    with ScriptedLLMServer() as server:
        assert _post(server, {"messages": "nope"})[0] == 400
        assert _post(server, BODY, path="/v1/completions")[0] == 404
        server.handler = lambda body: 1 / 0
        status, raw, _ = _post(server, BODY)
        assert status == 500 and "ZeroDivisionError" in json.loads(raw)["error"]["message"]


def test_stop_wakes_a_delayed_handler_quickly():
    import time

    server = ScriptedLLMServer().start()
    server.fail_next(Fault.delay(30))
    client = server.client(timeout=0.2, max_retries=0)
    with pytest.raises(LLMError):
        client.chat([{"role": "user", "content": "x"}])
    t = time.monotonic()
    server.stop()
    assert time.monotonic() - t < 5


def test_fault_kind_is_validated():
    with pytest.raises(ValueError, match="'explode'"):
        Fault("explode")
