"""SelfQuestioning with its defaults: a pool of the env's tasks, and tasks it proposes itself."""

from __future__ import annotations

import warnings

import pytest

from wrappers.questioning import CurriculumConfig, SelfQuestioning, SynthesisConfig, TaskPool, build_synthesizer

from .questioning_env import ToyShopEnv


def _fail(env) -> None:
    """Finish the current episode without buying: it ends by the env's step cap."""
    for _ in range(50):
        *_, term, trunc, _ = env.step("search[lamp]")
        if term or trunc:
            return
    raise AssertionError("the episode did not end")


def test_defaults_need_only_the_env_and_propose_on_the_first_reset():
    env = SelfQuestioning(ToyShopEnv())
    assert env.propose and len(env.pool) == 40 and env.pool.ids(origin="synthetic") == []
    obs, info = env.reset(seed=0)
    assert env.proposals == 1 and env.last_proposal["reason"] == "dry"
    admitted = env.last_proposal["admitted"]
    assert 0 < len(admitted) <= 8 and set(admitted) == set(env.pool.ids(origin="synthetic"))
    for tid in admitted:
        task = env.pool.get(tid)
        assert task.origin == "synthetic" and task.parent_id.startswith("toy/train/")
    assert info["questioning"]["task_id"] in env.pool


def test_proposes_again_when_every_synthetic_task_was_played():
    env = SelfQuestioning(ToyShopEnv(max_steps=4), propose_tasks=2)
    env.reset(seed=0)
    first = list(env.last_proposal["admitted"])
    assert env.proposals == 1 and first
    for tid in first:  # play each synthetic task once: the pool has run dry of unplayed ones
        env.reset(options={"task_id": tid})
        _fail(env)
        assert env.pool.history(tid) == [0.0]
    env.reset()
    assert env.proposals == 2 and env.last_proposal["reason"] == "dry"
    assert set(env.last_proposal["admitted"]).isdisjoint(first) and env.last_proposal["admitted"]


def test_schedule_proposes_every_n_episodes_and_is_seeded():
    runs = []
    for _ in range(2):
        # seed tasks only are drawn (seed_ratio 1): the synthetic ones stay unplayed, the pool never runs dry
        env = SelfQuestioning(ToyShopEnv(max_steps=4), curriculum=CurriculumConfig(seed_ratio=1.0), propose_every=3)
        env.reset(seed=4)
        cycles = [env.proposals]
        for _ in range(7):
            _fail(env)
            env.reset()
            cycles.append(env.proposals)
        runs.append((cycles, env.pool.ids(origin="synthetic")))
    assert runs[0][0] == [1, 1, 1, 2, 2, 2, 3, 3]
    assert runs[0] == runs[1]  # same seed, same proposals


def test_a_given_pool_keeps_its_behaviour_unless_asked():
    pool = TaskPool(None)
    pool.add_many(ToyShopEnv().tasks("train")[:3])
    env = SelfQuestioning(ToyShopEnv(), pool)
    env.reset(seed=0)
    assert not env.propose and env.proposals == 0 and len(pool) == 3 and env.synthesizer is None
    with pytest.raises(RuntimeError, match="propose=False"):
        env.propose_now()
    env = SelfQuestioning(ToyShopEnv(), pool, propose=True, propose_tasks=3)
    env.reset(seed=0)
    assert env.proposals == 1 and len(pool.ids(origin="synthetic")) == len(env.last_proposal["admitted"]) > 0


def test_a_ready_synthesizer_is_used_and_must_share_the_pool():
    pool = TaskPool(None)
    base = ToyShopEnv()
    synth = build_synthesizer(base, pool, SynthesisConfig(batch=4, max_rounds=1), embedder=None)
    env = SelfQuestioning(base, pool, propose=True, synthesis=synth, propose_tasks=2)
    env.reset(seed=0)
    assert env.synthesizer is synth and synth.round == 1
    with pytest.raises(ValueError, match="wrapper.s pool"):
        SelfQuestioning(base, TaskPool(None), propose=True, synthesis=synth)


def test_bad_arguments_name_the_value():
    base = ToyShopEnv()
    for kwargs, needle in [({"propose_tasks": 0}, "propose_tasks.*0"), ({"propose_every": -1}, "propose_every.*-1"),
                           ({"synthesis": {"batch": 2}}, "synthesis.*batch"), ({"propose": "yes"}, "'yes'"),
                           ({"seed_split": "nope"}, "seed_split 'nope'")]:
        with pytest.raises((TypeError, ValueError), match=needle):
            SelfQuestioning(base, **kwargs)
    with pytest.raises(ValueError, match="empty and propose is off"):
        SelfQuestioning(base, propose=False, seed_split="none")


def test_an_env_without_a_proposer_says_so():
    class NoHindsight(ToyShopEnv):
        hindsight_task = None

    with pytest.raises(ValueError, match="cannot propose tasks for NoHindsight.*propose=False"):
        SelfQuestioning(NoHindsight())
    env = SelfQuestioning(NoHindsight(), propose=False)
    assert env.reset(seed=0)[1]["questioning"]["origin"] == "seed"


def test_a_fruitless_cycle_warns_and_backs_off():
    env = SelfQuestioning(ToyShopEnv(max_steps=4), synthesis=SynthesisConfig(batch=1, max_rounds=1, max_steps=1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env.reset(seed=0)  # one exploration of one step cannot buy anything: nothing to propose
    assert env.proposals == 1 and env.last_proposal["admitted"] == []
    assert any("admitted no task" in str(w.message) for w in caught)
    for _ in range(7):
        _fail(env)
        env.reset()
    assert env.proposals == 1  # backs off 8 episodes
    _fail(env)
    env.reset()
    assert env.proposals == 2
