"""``evolver/BFCL-v0`` against ``bfcl-eval``: the oracle passes, short or idle callers fail as the official
checker says, hostile replies never run, instances never leak between episodes or envs."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolver_gym.bfcl.env import BFCLEnv
from evolver_gym.bfcl.package import CATEGORIES, executor
from evolver_gym.bfcl.policies import RandomCaller, one_call_short, perturb, replay_policy
from evolver_gym.bfcl.runtime import CallTimeout, call_deadline, official_verdict
from evolver_gym.bfcl.tasks import HANDBACK
from evolver_gym.core.trajectory import record_episode


@pytest.fixture(scope="module")
def env():
    e = BFCLEnv(split="train")
    yield e
    e.close()


def _play(env, task_id, policy):
    traj = record_episode(env, policy, options={"task_id": task_id})
    verdict = official_verdict(env._entry, env._truth, env.raw_turns())
    return traj, verdict


def _live_names():
    return [k for k in vars(executor()) if k.endswith("_instance")]


@pytest.mark.parametrize("category", CATEGORIES)
def test_oracle_passes_and_short_or_idle_callers_fail_like_the_checker(env, category):
    task_id = f"bfcl/multi_turn_{category}_7"
    oracle = env.oracle(env._find(task_id))
    traj, official = _play(env, task_id, replay_policy(oracle))
    assert traj.success and traj.terminated and traj.steps[-1].reward == 1.0 and official
    assert traj.steps[-1].info["progress"] == 1.0
    assert all(s.info["action_valid"] for s in traj.steps)
    # Progress never falls along the oracle, and a calling step (not only a hand-back) makes it rise.
    progress = [traj.metadata["reset_info"]["progress"]] + [s.info["progress"] for s in traj.steps]
    assert progress == sorted(progress)
    assert any(b > a and s.info.get("calls") for a, b, s in zip(progress, progress[1:], traj.steps))
    for actions in ([], one_call_short(oracle)):
        traj, official = _play(env, task_id, replay_policy(actions))
        assert traj.terminated and not traj.success and not official
        assert traj.steps[-1].info["evaluation"]["error_type"].startswith("multi_turn:")
        assert 0.0 <= traj.steps[-1].info["progress"] <= 1.0  # read-only calls change no state
    for seed in range(3):  # random callers and perturbed oracles: the env's reward is the checker's verdict
        traj, official = _play(env, task_id, RandomCaller(np.random.default_rng(seed)))
        assert traj.success == official
        traj, official = _play(env, task_id, replay_policy(perturb(oracle, np.random.default_rng(seed))))
        assert traj.success == official
    assert _live_names() == []  # every episode removed its instances


def test_observations_follow_bfcl_prompting_and_reveal_a_missed_function_on_its_turn(env):
    obs, info = env.reset(options={"task_id": "bfcl/multi_turn_miss_func_0"})
    assert obs.startswith("You are an expert in composing functions.") and '"name": "sort"' not in obs
    assert obs.endswith("Make sure to create the directory") and info["turn"] == 0
    obs, *_ = env.step("[cd(folder='document'), pwd()]")
    assert obs.startswith("[{'role': 'tool', 'name': \"cd(folder='document')\"") and "/document" in obs
    for _ in range(3):
        obs, r, term, trunc, info = env.step(HANDBACK)
    assert info["turn"] == 3 and "'name': 'sort'" in obs and "I have updated some more functions" in obs
    again, _ = env.reset(options={"task_id": "bfcl/multi_turn_miss_func_0"})
    assert again == env.reset(options={"task_id": "bfcl/multi_turn_miss_func_0"})[0]  # same task, same text


def test_hostile_replies_never_run(env, tmp_path):
    target = tmp_path / "made"
    env.reset(options={"task_id": "bfcl/multi_turn_base_0"})
    before = set(vars(executor()))
    replies = [
        f"[cd(folder=(lambda: open({str(target)!r}, 'w'))())]",  # the decoder would eval a lambda
        f"[cd(folder=__import__('os').system('touch {target}') + 1)]",  # ... and any arithmetic
        f"[open(file={str(target)!r}, mode='w')]",  # a builtin the executor would eval
        "[importlib.import_module(name='os')]",
        "[post_tweet(content={\"k': __import__('os').getcwd(), 'j\": 1})]",  # a dict key that breaks quoting
        "[power(base=10, exponent=100000000000000)]",
    ]
    infos = []
    for reply in replies:
        env.reset(options={"task_id": "bfcl/multi_turn_base_0"})
        obs, r, term, trunc, info = env.step(reply)
        infos.append(info)
        assert "error" in info and not term and isinstance(obs, str)
    assert [i["action_valid"] for i in infos[:2]] == [False, False] and infos[0]["handback"]
    assert all(i["results"] == [i["results"][0]] and "not allowed" in i["results"][0] for i in infos[2:])
    assert not target.exists() and not os.path.exists("made")
    assert set(vars(executor())) - before <= {k for k in vars(executor()) if k.endswith("_instance")}
    # Prose, non-strings and over-long replies end the turn; the env never raises.
    for reply in ("I need the file name first.", 12, "x" * 100_001, "[", "[[1]]", ""):
        env.reset(options={"task_id": "bfcl/multi_turn_base_0"})
        obs, r, term, trunc, info = env.step(reply)
        assert info["handback"] and info["turn"] == 1 and not term


def test_step_cap_truncates_like_bfcl_force_quit(env):
    env.reset(options={"task_id": "bfcl/multi_turn_base_0"})
    for _ in range(21):
        obs, r, term, trunc, info = env.step("[pwd()]")
        assert not term
    assert trunc and r == 0.0 and info["evaluation"]["error_type"] == "multi_turn:force_terminated"
    assert "forced to quit after 20 steps" in obs


def test_two_envs_on_the_same_entry_keep_their_own_state():
    a, b = BFCLEnv(), BFCLEnv()
    try:
        a.reset(options={"task_id": "bfcl/multi_turn_base_0"})
        b.reset(options={"task_id": "bfcl/multi_turn_base_0"})
        a.step("[cd(folder='document'), mkdir(dir_name='only_a')]")
        *_, info = b.step("[cd(folder='document'), ls()]")
        assert "only_a" not in info["results"][1]
        *_, info = a.step("[ls()]")
        assert "only_a" in info["results"][0]
        # A second episode of the same entry starts from the initial state again.
        a.reset(options={"task_id": "bfcl/multi_turn_base_0"})
        *_, info = a.step("[cd(folder='document'), ls()]")
        assert "only_a" not in info["results"][1]
    finally:
        a.close()
        b.close()
    assert _live_names() == []


def test_call_deadline_interrupts_python_code():
    with pytest.raises(CallTimeout):
        with call_deadline(0.05):
            while True:
                pass
    with call_deadline(None):
        pass


def test_constructor_arguments_are_checked():
    for kwargs, word in [({"split": "val"}, "split"), ({"categories": ("base", "web")}, "categories"),
                         ({"split_scheme": "api"}, "split_scheme"), ({"max_steps_per_turn": 0}, "max_steps_per_turn"),
                         ({"step_timeout_s": -1}, "step_timeout_s")]:
        with pytest.raises(ValueError, match=word):
            BFCLEnv(**kwargs)
    env = BFCLEnv()
    with pytest.raises(ValueError, match="ret_fmt=json"):
        BFCLEnv(prompt_format="ret_fmt=json&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=plaintext&style=classic")
    with pytest.raises(ValueError, match="prompt_format"):
        BFCLEnv(prompt_format="python please")
    short = BFCLEnv(prompt_format="ret_fmt=python&tool_call_tag=False&func_doc_fmt=python&prompt_fmt=plaintext"
                                  "&style=classic")
    long_obs, _ = env.reset(options={"task_id": "bfcl/multi_turn_base_0"})
    short_obs, _ = short.reset(options={"task_id": "bfcl/multi_turn_base_0"})
    assert len(short_obs) < len(long_obs) / 2 and short_obs.endswith(long_obs[-100:])
    with pytest.raises(ValueError, match="multi_turn_base_999"):
        env.reset(options={"task_id": "bfcl/multi_turn_base_999"})
    with pytest.raises(RuntimeError, match="reset"):
        BFCLEnv().step("[pwd()]")


_CALLISH = st.builds(
    lambda name, key, value, wrap: wrap.replace("{}", f"{name}({key}={value!r})"),
    st.sampled_from(["cd", "ls", "mkdir", "open", "eval", "exec", "__import__", "getattr", "x", "post_tweet"]),
    st.sampled_from(["folder", "dir_name", "content", "file", "source", "a"]),
    st.one_of(st.text(max_size=30), st.integers(), st.floats(allow_nan=True), st.lists(st.integers(), max_size=3),
              st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2)),
    st.sampled_from(["[{}]", "{}", "```[{}]```", "[{}, {}]", "[{}", "'[{}]'", "[[{}]]", "{} and more"]))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(replies=st.lists(st.one_of(st.text(max_size=60), _CALLISH), min_size=1, max_size=6))
def test_any_reply_keeps_the_env_whole(env, replies):
    obs, info = env.reset(options={"task_id": "bfcl/multi_turn_base_0"})
    for reply in replies:
        obs, reward, term, trunc, info = env.step(reply)
        assert obs in env.observation_space and reward in (0.0, 1.0)
        assert isinstance(info["action_valid"], bool) and 0.0 <= info["progress"] <= 1.0
        if term or trunc:
            break
