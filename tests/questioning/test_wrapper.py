"""SelfQuestioning: draws from the pool, info["questioning"], judge grading, hidden references."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from evolver_gym.core import Task
from evolver_gym.core.llm.testing import Fault
from wrappers.questioning import CurriculumConfig, SelfQuestioning, TaskPool

from .questioning_env import ToyShopEnv

CANARY = "click[CANARY-7f3a]"
KEYS = {"origin", "task_id", "difficulty", "parent_id", "judge"}


def _pool() -> tuple[ToyShopEnv, TaskPool, Task, Task]:
    env = ToyShopEnv()
    pool = TaskPool(None)
    seed = env.tasks("train")[0]
    pool.add(seed)
    hind = seed.derive(instruction="Buy the thing", goal={"product": env.products[1], "option": "white"},
                       reference=[*env.oracle(Task("p", "t", "", goal={"product": env.products[1], "option": "white"})),
                                  CANARY], proposer="hindsight", metadata={"grader": "env"})
    judged = seed.derive(instruction="Which products have 'lamp' in their name?", goal=seed.goal,
                         reference=["search[lamp]", CANARY], proposer="llm", metadata={"grader": "judge"})
    pool.add(hind)
    pool.add(judged)
    return env, pool, hind, judged


def _all_text(obs, info) -> str:
    return obs + json.dumps(info, default=str)


def test_reset_draws_from_the_pool_and_reports_questioning():
    env, pool, hind, judged = _pool()
    wrapped = SelfQuestioning(env, pool, CurriculumConfig(seed_ratio=0.0), judge=None)
    obs, info = wrapped.reset(seed=1, options={"task_id": hind.task_id})
    assert set(info["questioning"]) == KEYS
    assert info["questioning"] == {"origin": "synthetic", "task_id": hind.task_id, "difficulty": None,
                                   "parent_id": hind.parent_id, "judge": False}
    assert "Buy the thing" in obs and CANARY not in _all_text(obs, info)
    for a in hind.reference[:-1]:
        obs, r, term, trunc, info = wrapped.step(a)
        assert CANARY not in _all_text(obs, info) and set(info["questioning"]) == KEYS
    assert term and info["success"] and r == 1.0
    assert pool.history(hind.task_id) == [1.0]
    _, info = wrapped.reset(options={"task_id": hind.task_id})
    assert info["questioning"]["difficulty"] is None  # one outcome < min_observations
    wrapped.step("click[nonsense]")
    # Curriculum draws without options; the same seed gives the same task.
    wrapped2 = SelfQuestioning(ToyShopEnv(), pool, CurriculumConfig(seed_ratio=0.0))
    draws = []
    for _ in range(2):
        draws.append([wrapped2.reset(seed=5)[1]["questioning"]["task_id"]]
                     + [wrapped2.reset()[1]["questioning"]["task_id"] for _ in range(5)])
    assert draws[0] == draws[1] and set(draws[0]) == {hind.task_id}  # no judge: judge tasks are not drawn


def test_explicit_env_options_pass_through():
    env, pool, *_ = _pool()
    wrapped = SelfQuestioning(env, pool)
    _, info = wrapped.reset(seed=0, options={"split": "dev", "index": 3})
    assert info["questioning"]["task_id"] == "toy/dev/3" and info["questioning"]["origin"] == "seed"
    obs, r, term, trunc, info = wrapped.step("search[lamp]")
    assert "toy/dev/3" not in pool


def test_judge_task_needs_a_judge():
    env, pool, _, judged = _pool()
    with pytest.raises(RuntimeError, match="judge"):
        SelfQuestioning(env, pool).reset(options={"task_id": judged.task_id})


def test_judge_scores_a_synthetic_task_the_env_cannot_check(llm_server):
    env, pool, _, judged = _pool()
    llm_server.handler = lambda body: "The assistant searched as required.\n<reward>85</reward>"
    wrapped = SelfQuestioning(env, pool, judge=llm_server.client(role="judge"))
    obs, info = wrapped.reset(seed=0, options={"task_id": judged.task_id})
    assert info["questioning"]["judge"] is True and "progress" not in info
    assert "Which products" in obs and CANARY not in _all_text(obs, info)
    obs, r, term, trunc, info = wrapped.step("search[lamp]")
    assert r == 0.0 and "progress" not in info and not term
    for _ in range(20):
        obs, r, term, trunc, info = wrapped.step("click[back to search]" if "back to search" in obs else "search[lamp]")
        if term or trunc:
            break
    assert trunc
    assert r == pytest.approx(0.85) and info["success"] is True and info["score"] == pytest.approx(0.85)
    assert info["evaluation"]["grader"] == "judge" and "env" in info["evaluation"]
    assert pool.history(judged.task_id) == [1.0]
    # The judge saw the reference; the policy never did.
    judge_prompt = json.dumps(llm_server.requests[-1]["messages"])
    assert CANARY in judge_prompt


def test_judge_failure_is_not_recorded_as_an_outcome(llm_server):
    env, pool, _, judged = _pool()
    llm_server.fail_next(Fault.http(500), times=10)
    wrapped = SelfQuestioning(env, pool, judge=llm_server.client(role="judge", max_retries=1))
    obs, _ = wrapped.reset(seed=0, options={"task_id": judged.task_id})
    for _ in range(30):
        obs, r, term, trunc, info = wrapped.step("search[lamp]" if "[search bar]" in obs
                                                 else "click[back to search]")
        if term or trunc:
            break
    assert r == 0.0 and info["success"] is False and "error" in info["evaluation"]
    assert pool.history(judged.task_id) == []


def test_constructor_validation_and_stacking():
    env, pool, *_ = _pool()
    with pytest.raises(TypeError, match="pool"):
        SelfQuestioning(env, pool=42)
    with pytest.raises(TypeError, match="judge"):
        SelfQuestioning(env, pool, judge="not a client")
    stacked = gym.wrappers.TimeLimit(SelfQuestioning(env, pool), max_episode_steps=3)
    _, info = stacked.reset(seed=0)
    assert set(info["questioning"]) == KEYS


def test_oracle_attribution_falls_back_on_a_judge_graded_episode(llm_server):
    """The questioning judge drops the env's progress (it measures the parent goal): the oracle cannot label
    such an episode, which gets the outcome's sign with fallback=True instead of stopping training."""
    from wrappers.attribution import Attribution, OracleAttributor

    env, pool, hind, judged = _pool()
    llm_server.handler = lambda body: "It searched as asked.\n<reward>90</reward>"
    wrapped = Attribution(SelfQuestioning(env, pool, judge=llm_server.client(role="judge")), OracleAttributor())
    obs, _ = wrapped.reset(seed=0, options={"task_id": judged.task_id})
    with pytest.warns(RuntimeWarning, match="without info\\['progress'\\]"):
        for _ in range(30):
            obs, r, term, trunc, info = wrapped.step("click[back to search]" if "back to search" in obs
                                                     else "search[lamp]")
            if term or trunc:
                break
    record = info["attribution"]
    assert (term or trunc) and info["success"] is True and record["fallback"] is True
    assert [lab["label"] for lab in record["labels"]] == ["GOOD"] * len(wrapped.last_trajectory.steps)
    # the env's own task in the same stack still gets the oracle's real labels
    wrapped.reset(seed=0, options={"task_id": hind.task_id})
    for action in hind.reference[:-1]:
        obs, r, term, trunc, info = wrapped.step(action)
    assert term and info["attribution"]["fallback"] is False
