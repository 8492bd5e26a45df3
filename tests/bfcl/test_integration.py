"""``evolver/BFCL-v0`` with the rest of the toolkit: gym.make, check_env, vector envs, splits, the three
wrappers and self-questioning's hindsight path."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import evolver_gym  # noqa: F401  (registers the ids)
from evolver_gym.bfcl.env import BFCLEnv
from evolver_gym.bfcl.policies import RandomCaller
from evolver_gym.bfcl.tasks import split_table
from evolver_gym.core.trajectory import record_episode
from wrappers.attribution import Attribution, OracleAttributor
from wrappers.questioning import CurriculumConfig, SelfQuestioning, TaskPool
from wrappers.questioning.filters import Feasibility
from wrappers.questioning.proposers import HindsightProposer


def test_gym_make_and_check_env():
    env = gym.make("evolver/BFCL-v0", categories=("base",))
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=0)
    assert info["task"]["split"] == "train" and "reference" not in info["task"]
    env.close()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_vector_envs_play_the_oracle(kind):
    fns = [lambda: gym.make("evolver/BFCL-v0", categories=("miss_param",)) for _ in range(2)]
    venv = gym.vector.SyncVectorEnv(fns) if kind == "sync" else gym.vector.AsyncVectorEnv(fns, shared_memory=False)
    try:
        task = BFCLEnv(categories=("miss_param",)).tasks("train")[0]
        obs, infos = venv.reset(options={"task_id": task.task_id})
        assert all(task.instruction in o for o in obs)
        # The second env replaces the first calls by an unknown function (an error result, the same steps).
        first = next(i for i, a in enumerate(task.reference) if a.startswith("["))
        other = [("[no_such_function()]" if i == first else a) for i, a in enumerate(task.reference)]
        for action, wrong in zip(task.reference, other):
            obs, rewards, term, trunc, infos = venv.step([action, wrong])
        assert term.all() and list(rewards) == [1.0, 0.0] and list(infos["success"]) == [True, False]
    finally:
        venv.close()


@pytest.mark.parametrize("scheme", ["entry", "class"])
def test_splits_are_disjoint_and_keep_a_scenario_together(scheme):
    table = split_table(scheme, 0)
    assert sorted(i for v in table.values() for i in v) == list(range(200))
    env = BFCLEnv(split_scheme=scheme)
    ids = {s: {t.goal["entry_id"].rsplit("_", 1)[1] for t in env.tasks(s)} for s in ("train", "dev", "test")}
    assert not (ids["train"] & ids["test"]) and not (ids["train"] & ids["dev"])
    assert len(env.tasks("test")) == 4 * len(table["test"])
    if scheme == "class":
        held = env.profile()["held_out_classes"]["test"]
        assert all(not set(held) & set(t.goal["involved_classes"]) for t in env.tasks("train"))
    assert split_table(scheme, 1) != table  # the seed draws the split


def test_profile_lists_classes_and_docs():
    profile = BFCLEnv().profile()
    assert "GorillaFileSystem" in profile["entities"] and "ls" in profile["operations"]["GorillaFileSystem"]
    assert profile["splits"] == {"train": 480, "dev": 160, "test": 160} and len(profile["entities"]) == 8
    held = BFCLEnv(split_scheme="class").profile()  # held-out classes are not shown to proposers
    assert not set(held["entities"]) & set(held["held_out_classes"]["test"] + held["held_out_classes"]["dev"])


def test_hindsight_task_is_checkable_and_feeds_self_questioning():
    env = BFCLEnv(categories=("base",))
    try:
        parent = env.tasks("train")[0]
        traj = record_episode(env, RandomCaller(np.random.default_rng(1)), options={"task": parent})
        candidates, why = HindsightProposer(env).propose(traj)
        assert why is None and len(candidates) == 1
        task = candidates[0].task
        assert task.origin == "synthetic" and task.parent_id == parent.task_id and task.goal["ground_truth"]
        assert Feasibility(env).check(candidates) == [None]  # its reference replays to the checker's pass
        pool = TaskPool(None)
        pool.add_many([task])
        wrapped = Attribution(SelfQuestioning(BFCLEnv(categories=("base",)), pool, CurriculumConfig(seed_ratio=0.0)),
                              OracleAttributor())
        obs, info = wrapped.reset(seed=0)
        assert info["questioning"]["task_id"] == task.task_id and task.instruction in obs
        for action in task.reference:
            obs, reward, term, trunc, info = wrapped.step(action)
        assert term and reward == 1.0 and info["success"]
        assert {label["label"] for label in info["attribution"]["labels"]} == {"GOOD"}  # from progress
        _, info = wrapped.reset(options={"task_id": task.task_id})
        *_, info = wrapped.step("Nothing to do.")
        while "evaluation" not in info:
            *_, info = wrapped.step("Nothing to do.")
        assert info["success"] is False
        wrapped.close()
    finally:
        env.close()


def test_an_openai_compatible_endpoint_plays_an_episode(llm_server):
    from evolver_gym.bfcl.policies import ChatCaller
    from evolver_gym.core.llm.testing import Fault

    env = BFCLEnv(categories=("base",))
    try:
        task = env.tasks("dev")[0]
        llm_server.push(*task.reference)
        traj = record_episode(env, ChatCaller(llm_server.client(), temperature=0.0), options={"task": task})
        assert traj.success and len(llm_server.requests) == len(task.reference)
        first, last = llm_server.requests[0]["messages"], llm_server.requests[-1]["messages"]
        assert first[0]["role"] == "user" and '"name": "cd"' in first[0]["content"]
        assert [m["role"] for m in last[-3:]] == ["user", "assistant", "user"]  # the whole chat each time
        # An endpoint that fails ends turns with hand-backs: the episode scores 0 and the run goes on.
        llm_server.reset()
        llm_server.fail_next(Fault.http(500), times=100)
        caller = ChatCaller(llm_server.client(max_retries=0))
        traj = record_episode(env, caller, options={"task": task})
        assert traj.terminated and not traj.success and caller.last_error
    finally:
        env.close()


@pytest.mark.slow  # loads the sentence embedder and a milvus-lite pool (about 25 s)
def test_experience_context_learns_from_a_train_episode_and_injects_it(tmp_path):
    from wrappers.navigation import ExperienceContext

    env = BFCLEnv(categories=("base",))
    wrapped = ExperienceContext(env, pool=str(tmp_path / "exp.db"), threshold=-1.0)
    try:
        task = env.tasks("train")[0]
        obs, info = wrapped.reset(options={"task": task})
        assert info["experience"]["ids"] == []
        for action in task.reference:
            obs, reward, term, trunc, info = wrapped.step(action)
        assert term and reward == 1.0
        obs, info = wrapped.reset(options={"task": task})
        start, end = info["experience"]["span"]
        assert info["experience"]["ids"] and obs[start:end] == info["experience"]["text"]
        assert obs[end:].startswith("You are an expert in composing functions.")
        *_, info = wrapped.step(task.reference[0])
        assert info["action_valid"] and info["results"]
    finally:
        wrapped.close()


def test_evolver_play_scores_the_reference_policies(capsys):
    import json

    from evolver_gym.cli import play_main

    assert play_main(["--env-id", "evolver/BFCL-v0", "--split", "dev", "--n", "3", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert results["oracle"]["success_rate"] == 1.0 and results["do_nothing"]["success_rate"] == 0.0
    assert set(results) == {"oracle", "random", "do_nothing"}


def test_leakage_guard_refuses_a_copy_of_a_test_task_and_held_out_classes():
    from wrappers.questioning import LeakageGuard

    env = BFCLEnv(categories=("base",), split_scheme="class")
    from evolver_gym.bfcl.package import entries, ground_truth

    test = env.tasks("test")
    # The same entry written inline, as a hindsight task carries it: another goal, the same target.
    raw = next(e for e in entries("base") if e["id"] == test[0].goal["entry_id"])
    raw = {**raw, "id": "multi_turn_base_hindsightcopy"}
    goal = {"entry": raw, "ground_truth": ground_truth("base")[test[0].goal["entry_id"]],
            "involved_classes": raw["involved_classes"]}
    copy = test[0].derive(instruction="reworded entirely, nothing shared", goal=goal,
                          reference=test[0].reference, proposer="x")
    train = env.tasks("train")[0]
    mixed = train.derive(instruction="another wording", goal={**train.goal, "involved_classes":
                         list(train.goal["involved_classes"]) + env.profile()["held_out_classes"]["test"][:1]},
                         reference=train.reference, proposer="x")
    verdicts = LeakageGuard(test, env=env, solves=False).near([copy, mixed, train])
    assert verdicts[0] == "same target as a dev/test task" and verdicts[1] == "in a unit the split holds out"
    assert verdicts[2] is None


def test_evolver_eval_plays_the_oracle_through_the_rollout_loop(tmp_path, capsys):
    pytest.importorskip("torch")
    import json
    from pathlib import Path

    from evolver_train.cli import main

    config = str(Path(__file__).resolve().parents[2] / "configs" / "bfcl.yaml")
    out = tmp_path / "report.json"
    assert main(["eval", "--checkpoint", "oracle", "--config", config, "--k", "1", "--num-tasks", "4", "--quiet",
                 "--max-turn-tokens", "100000", "--max-observation-tokens", "10000000",
                 "--max-episode-tokens", "100000000", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["num_episodes"] == 4 and report["success_rate"] == 1.0


@pytest.mark.slow  # builds the tiny policy's tokenizer from 64 oracle episodes and runs one GRPO step (about 1 min)
def test_evolver_train_runs_the_bfcl_recipe(tmp_path):
    pytest.importorskip("torch")
    from pathlib import Path

    from evolver_train.cli import main

    config = str(Path(__file__).resolve().parents[2] / "configs" / "bfcl.yaml")
    out = tmp_path / "run"
    assert main(["train", "--config", config, "--max-steps", "1", "--evolver-eval-episodes", "0",
                 "--output-dir", str(out)]) == 0
    assert any(out.iterdir())
