"""Tests of the offline summarizer and of the LLM summarizer against the local scripted server."""

from __future__ import annotations

import json

from evolver_gym.core import Step, Task, Trajectory
from evolver_gym.core.llm.testing import Fault
from wrappers.navigation import LLMSummarizer, OfflineSummarizer, parse_insights

WS = "evolver/WebShop-v0"


def _webshop_traj(success=True, score=1.0):
    task = Task("ws/train/3", WS, "i need a pink waterproof mascara that is long lasting, and price lower than "
                "30.00 dollars", goal={"query": "mascara", "category": "beauty",
                                       "attributes": ["waterproof", "long lasting"], "goal_options": ["pink"],
                                       "price_upper": 30.0})
    actions = ["search[pink waterproof mascara long lasting]", "click[B0ABCDEF12]", "click[pink]", "click[buy now]"]
    return Trajectory(task, [Step(f"obs {i}", a) for i, a in enumerate(actions)], success=success, score=score)


def test_offline_webshop_recipe_generalises_values():
    exp = OfflineSummarizer().summarize([_webshop_traj()])[0]
    assert "mascara" in exp.when_to_use and "waterproof" in exp.when_to_use and "color" in exp.when_to_use
    assert "pink" not in exp.content and "30" not in exp.content and "B0ABCDEF12" not in exp.content
    for cue in ("search[", "title", "color", "Buy Now"):
        assert cue in exp.content
    assert exp.source_task_id == "ws/train/3" and exp.env_id == WS
    assert OfflineSummarizer().summarize([_webshop_traj(success=False, score=0.3)]) == []


def test_offline_generic_fallback():
    t = Trajectory(Task("app/train/1", "evolver/AppWorld-v0", "send 25 dollars to 'Ann'"),
                   [Step("", "pay(to='Ann', amount=25)"), Step("", "pay(to='Ann', amount=25)"), Step("", "done()")],
                   success=True, score=1.0)
    exp = OfflineSummarizer().summarize([t])[0]
    assert "Ann" not in exp.content and "25" not in exp.when_to_use
    assert exp.content.count("pay(") == 1 and "done()" in exp.content


def test_parse_insights_is_robust():
    good = [{"when_to_use": "w", "experience": "e", "tags": ["a"], "confidence": "0.7"}]
    assert parse_insights(json.dumps(good))[0]["content"] == "e"
    assert parse_insights("Sure!\n```json\n" + json.dumps(good) + "\n```\nHope it helps")[0]["confidence"] == 0.7
    assert parse_insights('{"insights": [{"when_to_use": "w", "content": "c"}]}')[0]["content"] == "c"
    assert parse_insights('prose {"when_to_use": "w", "content": "c"} more [1, 2]')[0]["when_to_use"] == "w"
    for junk in ("", "no json", "[{]", '[{"when_to_use": 3, "content": "x"}]', '[{"content": "x"}]', None):
        assert parse_insights(junk) == []


def _insights(*pairs):
    return json.dumps([{"when_to_use": w, "experience": c, "confidence": 0.9} for w, c in pairs])


def test_llm_summarizer_success_failure_contrast_and_validation(llm_server):
    good, bad = _webshop_traj(), _webshop_traj(success=False, score=0.2)
    def handler(body):
        user = body["messages"][-1]["content"]
        if "Judge whether" in user:
            return json.dumps({"is_valid": "bad idea" not in user, "score": 0.9, "reason": "ok"})
        if "SUCCEEDED" in user:
            return _insights(("buying cosmetics with a color option", "click the color before Buy Now"))
        if "FAILED" in user:
            return "```json\n" + _insights(("buying cosmetics", "a bad idea")) + "\n```"
        return _insights(("comparing attempts at buying makeup", "check the title for each attribute"))
    llm_server.handler = handler
    s = LLMSummarizer(llm_server.client(role="summarizer"))
    out = s.summarize([good, bad])
    assert [e.content for e in out] == ["click the color before Buy Now", "check the title for each attribute"]
    assert out[0].success and out[0].source_task_id == good.task.task_id and out[0].env_id == WS
    assert out[0].metadata["validation"]["score"] == 0.9
    prompts = [r["messages"][-1]["content"] for r in llm_server.requests]
    assert sum("SUCCEEDED" in p for p in prompts) == 1 and sum("Best attempt" in p for p in prompts) == 1
    assert s.stats["rejected"] == 1 and s.stats["kept"] == 2


def test_llm_summarizer_survives_faults_and_junk(llm_server):
    traj = _webshop_traj()
    s = LLMSummarizer(llm_server.client(role="summarizer", max_retries=0), validate=True)
    llm_server.fail_next(Fault.http(500), times=3)  # the batch and the one-by-one retry both fail
    assert s.summarize([traj]) == [] and s.stats["llm_errors"] >= 1
    llm_server.push("I cannot produce JSON today")
    assert s.summarize([traj]) == [] and s.stats["unparsable"] == 1
    llm_server.push(_insights(("w", "x" * 20000)))  # oversized content: invalid, not stored
    assert s.summarize([traj]) == [] and s.stats["invalid"] == 1
    llm_server.push(_insights(("buying makeup", "check color")), "not a verdict")
    assert s.summarize([traj]) == [] and s.stats["rejected"] == 1  # unvalidated: dropped
    llm_server.push(_insights(("buying makeup", "check color")))
    llm_server.fail_next(Fault.malformed())
    llm_server.push(json.dumps({"is_valid": True, "score": 0.8}))
    assert [e.content for e in s.summarize([traj])] == ["check color"]


def test_llm_summarizer_failures_say_why(llm_server, caplog):
    traj = _webshop_traj()
    s = LLMSummarizer(llm_server.client(role="summarizer", max_retries=0), validate=False)
    llm_server.fail_next(Fault.http(500), times=3)
    assert s.summarize([traj]) == []
    assert "HTTP 500" in s.last_failure
    llm_server.push("I cannot produce JSON today")
    assert s.summarize([traj]) == []
    assert "I cannot produce JSON today" in s.last_failure
    logged = [r.getMessage() for r in caplog.records if r.name.endswith("summarize_llm")]
    assert any("HTTP 500" in m for m in logged) and any("cannot produce JSON" in m for m in logged)
