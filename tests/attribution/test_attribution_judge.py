"""The LLM judge through the scripted loopback server: prompt, parsing, batching, fallbacks."""

from __future__ import annotations

import re

import pytest

from evolver_gym.core import Step, Task, Trajectory
from evolver_gym.core.llm.testing import Fault
from wrappers.attribution import (
    Attribution,
    LLMJudgeAttributor,
    build_judge_messages,
    parse_verdicts,
)

from .counter_env import SECRET, CounterEnv


def make_traj(actions, success, score=None, task_id="t/0"):
    task = Task(task_id, "test/Counter-v0", f"do {task_id}", reference=[SECRET])
    steps = [Step(f"obs {i}", a, 0.0, {"progress": 0.5, "action_valid": True}) for i, a in enumerate(actions)]
    return Trajectory(task, steps, success=success, score=(1.0 if success else 0.0) if score is None else score,
                      terminated=True, metadata={"final_observation": "done obs"})


def verdict_text(labels):
    return "\n".join(f"Step {i + 1} Analysis: reason {i + 1}.\nStep {i + 1} Judgment: {lab}"
                     for i, lab in enumerate(labels))


def test_prompt_is_outcome_conditioned_and_shows_actions_with_their_results():
    t = make_traj(["inc", "submit"], success=False, score=0.2)
    system, user = build_judge_messages(t)
    assert system["role"] == "system" and "FAILED" in system["content"] and "SUCCEEDED" in system["content"]
    text = user["content"]
    assert ">>> EVAL-STEP 1 <<<" in text and ">>> EVAL-STEP 2 <<<" in text and "EVAL-STEP 3" not in text
    positions = [text.index(part) for part in ("<|ACTION|>\ninc", "obs 1", "<|ACTION|>\nsubmit", "done obs")]
    assert positions == sorted(positions)
    assert "OVERALL PERFORMANCE SCORE: -0.60 (negative" in text
    assert SECRET not in text and "progress" not in text


def test_long_blocks_are_trimmed():
    t = make_traj(["x" * 10_000], success=True)
    user = build_judge_messages(t, max_chars=200)[1]["content"]
    assert len(user) < 1500 and "[trimmed]" in user


@pytest.mark.parametrize("reply,expected", [
    (verdict_text(["GOOD", "BAD", "GOOD"]), ["GOOD", "BAD", "GOOD"]),
    ("**Step 1 Judgment:** good\n**Step 2 Judgment**: BAD\n- Step 3 judgement - Good", ["GOOD", "BAD", "GOOD"]),
    ("Step 3 Judgment: BAD\nStep 1 Judgment: GOOD\nStep 2 Judgment: GOOD", ["GOOD", "GOOD", "BAD"]),
    ("Step 1 Judgment: BAD\nStep 1 Judgment: GOOD\nStep 2 Judgment: BAD\nStep 3 Judgment: BAD\n"
     "Step 4 Judgment: GOOD", ["BAD", "BAD", "BAD"]),
    ("GOOD\nBAD\nBAD", ["GOOD", "BAD", "BAD"]),
])
def test_parse_well_formed_and_messy_replies(reply, expected):
    parsed = parse_verdicts(reply, 3)
    assert [lab for lab, _ in parsed] == expected


def test_parse_keeps_analysis_as_reason():
    parsed = parse_verdicts(verdict_text(["GOOD", "BAD"]), 2)
    assert parsed == [("GOOD", "reason 1."), ("BAD", "reason 2.")]


@pytest.mark.parametrize("reply", [
    "", "I cannot judge this.", "Step 1 Judgment: GOOD\nStep 2 Judgment: BAD",  # one step missing
    "GOOD GOOD BAD BAD", "Step 1 Judgment: MAYBE\nStep 2 Judgment: GOOD\nStep 3 Judgment: BAD",
])
def test_parse_failures_return_none(reply):
    assert parse_verdicts(reply, 3) is None


def test_judge_over_the_server_well_formed(llm_server):
    llm_server.push(verdict_text(["BAD", "GOOD"]))
    judge = LLMJudgeAttributor(llm_server.client(role="attributor"))
    res = judge.attribute(make_traj(["wait", "submit"], success=True))
    assert [lab.label for lab in res.labels] == ["BAD", "GOOD"] and not res.fallback
    assert res.labels[0].reason == "reason 1."
    assert judge.counts == {"trajectories": 1, "parsed": 1, "fallbacks": 0, "parse_failures": 0, "llm_failures": 0}
    assert llm_server.requests[-1]["temperature"] == 0.0


def test_unreadable_reply_falls_back_to_outcome_sign_and_is_counted(llm_server):
    llm_server.push("The agent did fine overall.", "nonsense")
    judge = LLMJudgeAttributor(llm_server.client())
    good = judge.attribute(make_traj(["a", "b"], success=True))
    bad = judge.attribute(make_traj(["a", "b"], success=False))
    assert good.fallback and [lab.label for lab in good.labels] == ["GOOD", "GOOD"]
    assert bad.fallback and [lab.label for lab in bad.labels] == ["BAD", "BAD"]
    assert judge.counts["parse_failures"] == 2 and judge.counts["fallbacks"] == 2


def test_request_failure_falls_back_and_is_counted(llm_server):
    llm_server.fail_next(Fault.http(500), times=10)
    client = llm_server.client(max_retries=2)
    judge = LLMJudgeAttributor(client)
    res = judge.attribute(make_traj(["a"], success=True, score=0.9))
    assert res.fallback and res.labels[0].label == "GOOD" and "server" in res.labels[0].reason
    assert judge.counts["llm_failures"] == 1
    assert client.stats.snapshot()["retries"] == 2 and len(llm_server.requests) == 3


def test_batch_one_call_per_trajectory_partial_failures_stay_local(llm_server):
    def handler(body):
        text = body["messages"][-1]["content"]
        task = re.search(r"TASK:\ndo (\S+)", text).group(1)
        n = int(re.search(r"Judge all (\d+) steps", text).group(1))
        if task == "t/broken":
            return Fault.http(503)
        if task == "t/garbled":
            return "no verdicts here"
        return verdict_text(["GOOD" if i % 2 == 0 else "BAD" for i in range(n)])

    llm_server.handler = handler
    judge = LLMJudgeAttributor(llm_server.client(max_retries=1, concurrency=4))
    trajs = [make_traj(["a"] * (k + 1), success=False, task_id=f"t/{k}") for k in range(6)]
    trajs.insert(2, make_traj(["a", "b"], success=True, task_id="t/broken"))
    trajs.insert(4, make_traj(["a", "b"], success=False, task_id="t/garbled"))
    trajs.append(make_traj([], success=True, task_id="t/empty"))
    results = judge.attribute_batch(trajs)
    assert len(results) == len(trajs)
    for t, r in zip(trajs, results):
        assert len(r.labels) == len(t.steps)
        if t.task.task_id == "t/broken":
            assert r.fallback and r.flags == [True, True]
        elif t.task.task_id == "t/garbled":
            assert r.fallback and r.flags == [False, False]
        else:
            assert not r.fallback and r.flags == [i % 2 == 0 for i in range(len(t.steps))]
    # 6 good + 1 garbled answered once, the broken one tried twice; the empty one never asked
    assert len(llm_server.requests) == 6 + 1 + 2
    assert judge.counts == {"trajectories": 9, "parsed": 6, "fallbacks": 2, "parse_failures": 1, "llm_failures": 1}


def test_judge_in_the_wrapper_never_sees_privileged_info(llm_server):
    llm_server.handler = lambda body: verdict_text(["GOOD"] * 3)
    env = Attribution(CounterEnv(2), LLMJudgeAttributor(llm_server.client(role="attributor")))
    env.reset(seed=0)
    for a in ["inc", "inc", "submit"]:
        obs, r, term, trunc, info = env.step(a)
    assert info["attribution"]["attributor"] == "llm-judge"
    assert [lab["label"] for lab in info["attribution"]["labels"]] == ["GOOD"] * 3
    sent = str(llm_server.requests)
    assert SECRET not in sent  # neither the task's reference nor the evaluation breakdown
    user = llm_server.requests[-1]["messages"][-1]["content"]
    assert "progress" not in user and "evaluation" not in user and "target" not in user
    assert "Bring the counter to 2" in sent and "Submitted 2." in sent


def test_injected_experience_block_is_not_shown_to_the_judge():
    block = "<experience>use inc twice</experience>\n"
    t = make_traj(["inc"], success=True)
    t.steps[0].observation = block + "Counter at 0."
    t.metadata["reset_info"] = {"experience": {"enabled": True, "ids": ["e1"], "text": block,
                                               "span": [0, len(block)]}}
    user = build_judge_messages(t)[1]["content"]
    assert "use inc twice" not in user and "Counter at 0." in user


def test_judge_validates_its_arguments(llm_server):
    with pytest.raises(TypeError, match="ChatClient"):
        LLMJudgeAttributor(object())
    with pytest.raises(ValueError, match="10"):
        LLMJudgeAttributor(llm_server.client(), max_chars=10)
