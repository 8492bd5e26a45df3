"""Attribution on real WebShop episodes, with labels checked by hand for each step.

Task ``dev/2`` of the 200-product catalog (seed 0): a kickstand tablet case, ``galaxy tab s8``
and ``purple``, under $80; the target is ``b0cxn2vnn3`` (a near-duplicate, ``b07yk4ckog``, sits
next to it in the results).
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401  (registers the ids)
from evolver_gym.core.llm.testing import ScriptedLLMServer
from wrappers.attribution import Attribution, LLMJudgeAttributor, OracleAttributor, RuleAttributor

pytest.importorskip("evolver_gym.webshop.env")

TASK = {"split": "dev", "index": 2}
GOOD_SEARCH = "search[kickstand tablet case galaxy tab s8 purple]"
ITEM = "click[b0cxn2vnn3]"


def make(attributor=None, **kwargs):
    env = gym.make("evolver/WebShop-v0", num_products=200, **kwargs)
    return Attribution(env, attributor or OracleAttributor())


def run(env, actions):
    obs, info = env.reset(seed=0, options=TASK)
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        if term or trunc:
            break
    return info


def labels(info):
    return [lab["label"] for lab in info["attribution"]["labels"]]


@pytest.fixture(scope="module")
def oracle_actions():
    env = gym.make("evolver/WebShop-v0", num_products=200)
    _, info = env.reset(seed=0, options=TASK)
    actions = env.unwrapped.oracle(info["task"])
    assert actions[1:] == [ITEM, "click[galaxy tab s8]", "click[purple]", "click[buy now]"]
    return actions


def test_oracle_episode_every_step_good(oracle_actions):
    info = run(make(), oracle_actions)
    assert info["success"] and labels(info) == ["GOOD"] * 5
    # opening the product does not change progress, but enables the option clicks
    assert info["attribution"]["labels"][1]["reason"].startswith("enabled step 2")


def test_wrong_search_first_is_bad(oracle_actions):
    info = run(make(), ["search[garden hose]"] + oracle_actions)
    assert info["success"]
    assert labels(info) == ["BAD", "GOOD", "GOOD", "GOOD", "GOOD", "GOOD"]


def test_invalid_action_is_bad_and_the_rest_unchanged(oracle_actions):
    actions = oracle_actions[:1] + ["click[b99zzzzzzz]"] + oracle_actions[1:]
    info = run(make(), actions)
    assert info["success"]
    assert labels(info) == ["GOOD", "BAD", "GOOD", "GOOD", "GOOD", "GOOD"]


def test_wrong_option_then_buy_fails_and_is_blamed():
    info = run(make(), [GOOD_SEARCH, ITEM, "click[ipad air 5]", "click[buy now]"])
    assert not info["success"] and 0 < info["score"] < 1
    # search found the right product (progress 0 -> 0.5); opening it only led to a wrong purchase
    assert labels(info) == ["GOOD", "BAD", "BAD", "BAD"]


def test_wrong_option_overridden_later_is_bad():
    info = run(make(), [GOOD_SEARCH, ITEM, "click[ipad air 5]", "click[galaxy tab s8]", "click[purple]",
                        "click[buy now]"])
    assert info["success"]
    assert labels(info) == ["GOOD", "GOOD", "BAD", "GOOD", "GOOD", "GOOD"]


def test_truncated_episode_with_time_limit_and_statistics():
    env = gym.wrappers.RecordEpisodeStatistics(
        Attribution(gym.wrappers.TimeLimit(gym.make("evolver/WebShop-v0", num_products=200), 3), OracleAttributor()))
    info = run(env, [GOOD_SEARCH, ITEM, "click[galaxy tab s8]", "click[buy now]"])
    assert info["episode"]["l"] == 3 and not info.get("success", False)
    assert labels(info) == ["GOOD", "GOOD", "GOOD"]


def test_rules_on_webshop():
    info = run(make(RuleAttributor()), [GOOD_SEARCH, "buy it", ITEM, "click[buy now]"])
    assert labels(info) == ["GOOD", "BAD", "GOOD", "GOOD"]


def test_llm_judge_on_webshop_sees_no_privileged_info(oracle_actions):
    with ScriptedLLMServer(handler=lambda body: "\n".join(f"Step {i} Judgment: GOOD" for i in range(1, 6))) as srv:
        info = run(make(LLMJudgeAttributor(srv.client(role="attributor"))), oracle_actions)
        user = srv.requests[-1]["messages"][-1]["content"]
    assert labels(info) == ["GOOD"] * 5 and not info["attribution"]["fallback"]
    assert "b0cxn2vnn3" in user.lower()  # the actions are shown ...
    for secret in ("progress", "r_type", "r_option", "goal_options", "reference"):
        assert secret not in user  # ... the privileged signals are not
