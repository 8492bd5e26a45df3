"""LLM paths against the local OpenAI-compatible test server: proposer, explorer, rephraser, judge,
and a whole synthesis cycle, including the server's faults."""

from __future__ import annotations

import json

import pytest

from evolver_gym.core import Step, Trajectory
from evolver_gym.core.llm.testing import Fault
from wrappers.questioning import (
    Explorer,
    HindsightProposer,
    LLMExplorer,
    LLMProposer,
    ReferenceJudge,
    SynthesisConfig,
    TaskPool,
    build_synthesizer,
    parse_task_blocks,
)
from wrappers.questioning.judge import parse_reward

from .questioning_env import ToyShopEnv


def _traj(env: ToyShopEnv) -> Trajectory:
    seed = env.tasks("train")[0]
    obs, info = env.reset(seed=0, options={"task": seed})
    traj = Trajectory(task=seed)
    for a in env.oracle(seed):
        nxt, r, term, trunc, info = env.step(a)
        traj.steps.append(Step(obs, a, r, info))
        obs = nxt
    return traj


@pytest.mark.parametrize("reply, n", [
    ('<task>{"query": "q1", "confidence": 0.8, "action_sequence": ["a", "b"]}</task>\n'
     "<task>{'query': 'q2', 'confidence': '0.3', 'action_sequence': '1. a\\n2. b'}</task>", 2),
    ('```json\n<task>{"query": "q1", "confidence": 80, "action_sequence": ["a",],}</task>\n```', 1),
    ('<task>{"query": "q1", "confidence": 0.5, "action_sequence": ["a"]}', 1),  # unclosed tag
    ('[{"query": "q1", "action_sequence": ["a"]}, {"query": "q2"}]', 2),  # bare JSON list
    ('<task>{"query": "", "action_sequence": ["a"]}</task><task>not json at all</task>', 0),
    ("", 0),
    ("<task>" * 1000, 0),
])
def test_parse_task_blocks_is_tolerant(reply, n):
    out = parse_task_blocks(reply)
    assert len(out) == n
    for item in out:
        assert set(item) == {"query", "confidence", "action_sequence"} and 0.0 <= item["confidence"] <= 1.0
        assert all(isinstance(a, str) for a in item["action_sequence"])


def test_parse_reward_bands():
    assert parse_reward("<reward>100</reward>") == 100.0
    assert parse_reward("<reward>150</reward>") == 100.0
    assert parse_reward("<reward>55</reward>") == 60.0
    assert parse_reward("final: 30") == 30.0
    assert parse_reward("") is None and parse_reward(None) is None


def test_llm_proposer_against_the_server_with_faults(llm_server):
    env = ToyShopEnv()
    traj = _traj(env)
    seed_instruction = traj.task.instruction
    query = f"Buy the {traj.task.goal['product']} in {traj.task.goal['option']}"
    ok = (f'<task>{{"query": "{query}", "confidence": 0.9, '
          f'"action_sequence": {json.dumps(env.oracle(traj.task))}}}</task>')
    llm_server.fail_next(Fault.http(429))          # retried by the client
    llm_server.push(ok, "I'd rather not.", Fault.http(500), Fault.http(500), Fault.http(500), Fault.http(500))
    proposer = LLMProposer(llm_server.client(role="proposer", max_retries=2), env.profile())
    cands, why = proposer.propose(traj, existing=["an older task"])
    assert why is None and len(cands) == 1
    t = cands[0].task
    assert t.origin == "synthetic" and t.parent_id == traj.task.task_id and t.metadata["grader"] == "judge"
    assert t.reference == env.oracle(traj.task) and cands[0].confidence == 0.9
    prompt = json.dumps(llm_server.requests[-1]["messages"])
    assert "an older task" in prompt and "[MASKED]" in prompt and seed_instruction not in prompt
    assert proposer.propose(traj) == ([], "unparsable proposer output")
    cands, why = proposer.propose(traj)
    assert cands == [] and why.startswith("llm error")


def test_llm_explorer_against_the_server(llm_server):
    env = ToyShopEnv()
    product = env.products[0]
    script = iter([f"Let me look around.\nAction: search[{product}]", f"click[{product}]",
                   "Reasoning only, no action", Fault.truncated(), Fault.truncated(), Fault.truncated()])
    llm_server.handler = lambda body: next(script, "Action: click[buy now]")
    policy = LLMExplorer(llm_server.client(role="explorer", max_retries=1), env.profile(), breadth_steps=1,
                         depth_window=1)
    traj = Explorer(env, policy, max_steps=6).explore_one(env.tasks("train")[0], seed=0)
    assert traj.actions[:3] == [f"search[{product}]", f"click[{product}]", "Reasoning only, no action"]
    assert traj.steps[2].info["action_valid"] is False  # the env explained, nothing crashed
    assert traj.metadata.get("error", "").startswith("explorer llm error")
    first = llm_server.requests[0]
    assert first["temperature"] == 1.0 and "curious explorer" in first["messages"][0]["content"]
    # Depth phase: only the last pair of the history is shown (myopic window).
    assert len(llm_server.requests[2]["messages"]) == 1 + 2 + 1


def test_hindsight_rephrasing_keeps_details_or_falls_back(llm_server):
    env = ToyShopEnv()
    traj = _traj(env)
    llm_server.push("I'd like to purchase it", Fault.http(500), Fault.http(500))
    prop = HindsightProposer(env, rephraser=llm_server.client(role="proposer", max_retries=1))
    (c,), _ = prop.propose(traj)
    assert c.task.instruction.startswith("Buy the")  # the rewrite dropped the product: template kept
    (c2,), _ = prop.propose(traj)
    assert c2.notes["rephrase"].startswith("kept template: llm error")
    good = f"Could you get me the {traj.task.goal['product']}, {traj.task.goal['option']} please"
    llm_server.push(good)
    (c3,), _ = prop.propose(traj)
    assert c3.task.instruction == good and c3.task.metadata["template_instruction"].startswith("Buy the")


def test_judge_faults(llm_server):
    env = ToyShopEnv()
    traj = _traj(env)
    t = traj.task.derive(instruction="q", goal=traj.task.goal, reference=["a"], proposer="llm",
                         metadata={"grader": "judge"})
    judge = ReferenceJudge(llm_server.client(role="judge", max_retries=2))
    llm_server.push(Fault.malformed(), "<reward>70</reward>", "no grade", "still none")
    assert judge.score(t, traj).score == 0.7
    with pytest.raises(Exception, match="no <reward>"):
        judge.score(t, traj)
    looping = Trajectory(task=t, steps=[Step("", "search[x]")] * 4)
    llm_server.push("<reward>95</reward>")
    res = judge.score(t, looping)
    assert res.score == 0.2 and not res.success and "runaway" in res.reason


def test_synthesis_cycle_with_llm_proposer_and_judge(llm_server):
    """Hindsight + LLM proposer; LLM tasks pass feasibility through the judge; faults are counted."""
    env = ToyShopEnv()
    calls = {"n": 0}

    def handler(body):
        system = body["messages"][0]["content"]
        calls["n"] += 1
        if "grade whether" in system:
            return "<reward>80</reward>" if calls["n"] % 3 else "<reward>20</reward>"
        if "realistic tasks" in system:
            if calls["n"] % 5 == 0:
                return Fault.http(500)
            product = env.products[calls["n"] % len(env.products)]
            return (f'<task>{{"query": "Which colours does the {product} come in? call {calls["n"]}", '
                    f'"confidence": 0.7, "action_sequence": ["search[{product}]", "click[{product}]"]}}</task>')
        return "?"

    llm_server.handler = handler
    pool = TaskPool(None)
    client = llm_server.client(role="proposer", max_retries=0)
    synth = build_synthesizer(env, pool, SynthesisConfig(batch=8, max_steps=10, embedding_threshold=None,
                                                         leakage_cosine=None),
                              proposer_client=client, judge_client=client, embedder=None)
    report = synth.run(20)
    tasks = pool.tasks(origin="synthetic")
    assert len(tasks) == 20
    graders = {t.metadata["grader"] for t in tasks}
    assert graders == {"env", "judge"}
    reasons = report["stages"]["propose"]["reasons"]
    assert any(r.startswith("llm: llm error") for r in reasons)
    feas = report["stages"]["feasibility"]["reasons"]
    assert any("judge" in r for r in feas) or any("invalid" in r for r in feas)
    for t in tasks:
        if t.metadata["grader"] == "judge":
            assert pool.provenance(t.task_id)["feasibility_judge_score"] >= 0.6
