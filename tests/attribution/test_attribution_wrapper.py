"""The Attribution wrapper on a tiny contract-following env: format, oracle labels, stacking."""

from __future__ import annotations

import gymnasium as gym
import pytest

from evolver_gym.core import Trajectory
from evolver_gym.core.llm import LLMError
from wrappers.attribution import (
    Attribution,
    AttributionResult,
    Attributor,
    OracleAttributor,
    RuleAttributor,
    StepLabel,
)

from .counter_env import CounterEnv


def play(env, actions, seed=0):
    obs, info = env.reset(seed=seed)
    out = [(obs, None, False, False, info)]
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append((obs, r, term, trunc, info))
        if term or trunc:
            break
    return out


def labels(info):
    return [lab["label"] for lab in info["attribution"]["labels"]]


def test_oracle_labels_a_mixed_successful_episode():
    actions = ["inc", "inc", "wait", "jump", "dec", "inc", "submit"]
    out = play(Attribution(CounterEnv(2), OracleAttributor()), actions)
    final = out[-1][4]
    # inc 0->.5 GOOD, inc .5->1 GOOD, wait 1->1 BAD, invalid BAD, dec 1->.5 BAD, inc .5->1 GOOD, right submit GOOD
    assert labels(final) == ["GOOD", "GOOD", "BAD", "BAD", "BAD", "GOOD", "GOOD"]
    att = final["attribution"]
    assert set(att) == {"attributor", "labels", "fallback"}
    assert att["attributor"] == "oracle" and att["fallback"] is False
    assert [lab["step"] for lab in att["labels"]] == list(range(7))
    assert all(set(lab) == {"step", "label", "score", "reason"} for lab in att["labels"])
    assert [lab["score"] for lab in att["labels"]] == [1.0, 1.0, -1.0, -1.0, -1.0, 1.0, 1.0]
    assert all("attribution" not in o[4] for o in out[:-1])  # final step only


def test_oracle_marks_a_wrong_submit_bad_even_after_progress():
    out = play(Attribution(CounterEnv(3), OracleAttributor()), ["inc", "inc", "submit"])
    assert out[-1][4]["success"] is False
    assert labels(out[-1][4]) == ["GOOD", "GOOD", "BAD"]


def test_observations_rewards_and_env_info_are_untouched():
    actions = ["inc", "zzz", "inc", "submit"]
    plain = play(CounterEnv(2), actions)
    wrapped = play(Attribution(CounterEnv(2), OracleAttributor()), actions)
    for (o1, r1, t1, u1, i1), (o2, r2, t2, u2, i2) in zip(plain, wrapped):
        assert (o1, r1, t1, u1) == (o2, r2, t2, u2)
        assert {k: v for k, v in i2.items() if k != "attribution"} == i1


def test_truncation_by_inner_time_limit_is_labelled_and_stats_stack():
    env = gym.wrappers.RecordEpisodeStatistics(
        Attribution(gym.wrappers.TimeLimit(CounterEnv(5), max_episode_steps=3), OracleAttributor()))
    out = play(env, ["inc", "wait", "inc", "inc"])
    obs, r, term, trunc, info = out[-1]
    assert trunc and not term and len(out) == 4
    assert labels(info) == ["GOOD", "BAD", "GOOD"]  # truncated: the last step follows progress
    assert info["episode"]["l"] == 3


def test_outer_wrappers_see_the_key_and_a_second_episode_starts_clean():
    env = gym.wrappers.TimeLimit(Attribution(CounterEnv(1), RuleAttributor()), max_episode_steps=10)
    first = play(env, ["oops", "inc", "submit"])
    assert labels(first[-1][4]) == ["BAD", "GOOD", "GOOD"]
    second = play(env, ["inc", "wait", "submit"])
    assert labels(second[-1][4]) == ["GOOD", "BAD", "GOOD"]  # waiting changed nothing
    assert len(second[-1][4]["attribution"]["labels"]) == 3  # nothing carried over from episode one


def test_last_trajectory_keeps_per_step_labels_and_public_task():
    env = Attribution(CounterEnv(1), OracleAttributor())
    play(env, ["inc", "submit"])
    traj = env.last_trajectory
    assert isinstance(traj, Trajectory) and traj.success and traj.terminated
    assert traj.task.reference == []  # only the public view ever reaches attributors
    assert [s.info["attribution"]["label"] for s in traj.steps] == ["GOOD", "GOOD"]
    assert traj.metadata["final_observation"] == "Submitted 1."
    assert Trajectory.from_json(traj.to_json()).steps[1].action == "submit"


def test_user_attributor_is_one_small_class():
    class VowelCount(Attributor):
        name = "vowels"

        def label_step(self, trajectory, index):
            return StepLabel(index, "GOOD", score=0.25 * index, reason="graded")

    out = play(Attribution(CounterEnv(1), VowelCount()), ["inc", "submit"])
    att = out[-1][4]["attribution"]
    assert att["attributor"] == "vowels"
    assert [lab["score"] for lab in att["labels"]] == [0.0, 0.25]


def test_llm_error_in_attributor_falls_back_to_outcome_sign():
    class Down(Attributor):
        name = "down"

        def attribute(self, trajectory):
            raise LLMError("judge unreachable", kind="connection")

    out = play(Attribution(CounterEnv(1), Down()), ["wait", "inc", "submit"])
    att = out[-1][4]["attribution"]
    assert att["fallback"] is True and labels(out[-1][4]) == ["GOOD"] * 3
    assert "judge unreachable" in att["labels"][0]["reason"]


def test_oracle_needs_progress_and_says_so():
    traj = Trajectory.from_dict({"task": {"task_id": "x", "env_id": "e", "instruction": "i"},
                                 "steps": [{"observation": "o", "action": "a", "info": {"step": 1}}]})
    with pytest.raises(ValueError, match="progress"):
        OracleAttributor().attribute(traj)


def test_constructor_and_labels_validate():
    with pytest.raises(TypeError, match="attribute"):
        Attribution(CounterEnv(), object())
    with pytest.raises(ValueError, match="''"):
        Attribution(CounterEnv(), OracleAttributor(), info_key="")
    with pytest.raises(ValueError, match="'MEH'"):
        StepLabel(0, "MEH")
    with pytest.raises(ValueError, match="'sometimes'"):
        RuleAttributor(valid_label="sometimes")
    env = Attribution(CounterEnv(), OracleAttributor())
    with pytest.raises(gym.error.ResetNeeded):
        env.step("inc")


def test_result_to_info_round_trip():
    res = AttributionResult("x", [StepLabel.of(0, True), StepLabel.of(1, False, "r")])
    assert res.to_info() == {"attributor": "x", "fallback": False, "labels": [
        {"step": 0, "label": "GOOD", "score": 1.0, "reason": ""},
        {"step": 1, "label": "BAD", "score": -1.0, "reason": "r"}]}
    assert res.flags == [True, False]


def test_attributors_by_name_for_config_files(llm_server, tmp_path):
    out = play(Attribution(CounterEnv(1), "rules"), ["zz", "inc", "submit"])
    assert out[-1][4]["attribution"]["attributor"] == "rules"
    assert Attribution(CounterEnv(1)).attributor.name == "oracle"
    llm_server.push("Step 1 Judgment: GOOD\nStep 2 Judgment: BAD")
    cfg = {"defaults": {"base_url": llm_server.url, "model": "m", "api_key": "k"}}
    out = play(Attribution(CounterEnv(1), "llm-judge", llm_config=cfg), ["inc", "submit"])
    assert labels(out[-1][4]) == ["GOOD", "BAD"]
    assert llm_server.requests[-1]["temperature"] == 0.0
    with pytest.raises(ValueError, match="'psychic'"):
        Attribution(CounterEnv(1), "psychic")
    with pytest.raises(ValueError, match="llm_config"):
        Attribution(CounterEnv(1), "llm-judge")


def test_llm_judge_with_an_unwritable_log_still_labels_the_final_step(llm_server, tmp_path):
    """A log path in a missing folder costs log lines, never the episode's last step."""
    llm_server.push("Step 1 Judgment: GOOD\nStep 2 Judgment: BAD")
    log_path = str(tmp_path / "missing" / "llm.jsonl")
    cfg = {"defaults": {"base_url": llm_server.url, "model": "m", "api_key": "k", "log_path": log_path}}
    out = play(Attribution(CounterEnv(1), "llm-judge", llm_config=cfg), ["inc", "submit"])
    assert labels(out[-1][4]) == ["GOOD", "BAD"] and not out[-1][4]["attribution"]["fallback"]


class NoProgress(gym.Wrapper):
    """The counter game without its privileged ``info["progress"]``: no oracle labels exist."""

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        info.pop("progress", None)
        return obs, r, term, trunc, info


def test_reference_labels_sit_next_to_the_attributors_and_never_become_rewards():
    from wrappers.attribution import AttributionPayload

    actions = ["inc", "dec", "jump", "inc", "inc", "submit"]
    final = play(Attribution(CounterEnv(2), RuleAttributor(), reference="oracle"), actions)[-1][4]
    oracle = play(Attribution(CounterEnv(2), OracleAttributor()), actions)[-1][4]
    rules = play(Attribution(CounterEnv(2), RuleAttributor()), actions)[-1][4]
    payload = AttributionPayload.from_info(final)
    assert payload.reference == labels(oracle) and payload.step_labels() == labels(rules)
    assert payload.reference != payload.step_labels()  # "dec" is a valid move to the rules, a loss to the oracle
    assert payload.step_rewards() == AttributionPayload.from_info(rules).step_rewards()
    assert "reference" not in rules["attribution"]
    unchecked = play(Attribution(NoProgress(CounterEnv(2)), RuleAttributor(), reference="oracle"), actions)[-1][4]
    assert AttributionPayload.from_info(unchecked).reference is None and "reference" not in unchecked["attribution"]
