"""evaluate_attributor and Cohen's kappa on hand-computed cases."""

from __future__ import annotations

import pytest

from evolver_gym.core import record_episode
from wrappers.attribution import (
    LLMJudgeAttributor,
    OracleAttributor,
    RuleAttributor,
    cohen_kappa,
    evaluate_attributor,
)

from .counter_env import CounterEnv


def episodes():
    runs = [["inc", "inc", "submit"], ["inc", "wait", "inc", "submit"], ["bad", "inc", "submit"]]
    out = []
    for actions in runs:
        it = iter(actions)
        out.append(record_episode(CounterEnv(2), lambda obs, info, it=it: next(it), seed=0))
    return out


def test_kappa_hand_checked():
    assert cohen_kappa(["GOOD", "BAD", "GOOD", "BAD"], ["GOOD", "BAD", "BAD", "BAD"]) == pytest.approx(0.5)
    assert cohen_kappa(["GOOD"] * 3, ["GOOD"] * 3) == 1.0
    assert cohen_kappa(["GOOD", "BAD"], ["BAD", "GOOD"]) == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="2 vs 1"):
        cohen_kappa(["GOOD", "BAD"], ["GOOD"])


def test_oracle_agrees_with_itself():
    report = evaluate_attributor(OracleAttributor(), episodes())
    assert report["accuracy"] == 1.0 and report["kappa"] == 1.0 and report["n_steps"] == 10


def test_rules_against_oracle_hand_checked():
    # oracle: [G G B(fail submit)] -> ep1 succeeds: [G G G]; ep2: [G B G G]; ep3: [B G B] (target 2, x=1)
    # rules : ep1 [G G G]; ep2 [G B(wait changed nothing) G G]; ep3 [B G G]
    report = evaluate_attributor(RuleAttributor(), episodes())
    assert report["n_trajectories"] == 3 and report["n_steps"] == 10
    assert report["confusion"] == {"GOOD": {"GOOD": 7, "BAD": 0}, "BAD": {"GOOD": 1, "BAD": 2}}
    assert report["accuracy"] == pytest.approx(0.9)
    # p_o = .9; p_e = .7*.8 + .3*.2 = .62; kappa = .28/.38
    assert report["kappa"] == pytest.approx(0.28 / 0.38)
    assert report["per_label"]["BAD"] == pytest.approx({"precision": 1.0, "recall": 2 / 3, "f1": 0.8, "support": 3})
    assert report["per_label"]["GOOD"]["precision"] == pytest.approx(7 / 8)
    assert report["fallback_rate"] == 0.0


def test_llm_judge_measured_against_oracle(llm_server):
    llm_server.handler = lambda body: "total nonsense"  # every reply unreadable -> outcome-sign fallback
    judge = LLMJudgeAttributor(llm_server.client())
    report = evaluate_attributor(judge, episodes())
    assert report["fallback_rate"] == 1.0 and len(llm_server.requests) == 3
    # fallback labels: ep1 GGG, ep2 GGGG, ep3 BBB against oracle GGG / GBGG / BGB
    assert report["accuracy"] == pytest.approx(8 / 10)
