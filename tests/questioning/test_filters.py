"""Filters: Jaccard index against brute force, lexical/embedding dedup, leakage guard, feasibility."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from evolver_gym.core import Task
from wrappers.questioning import Candidate, EmbeddingDedup, Feasibility, LeakageGuard, LexicalDedup
from wrappers.questioning.text import JaccardIndex, jaccard

from .questioning_env import ToyShopEnv

WORDS = ["red", "blue", "hat", "shoe", "buy", "the", "a", "size", "large", "cheap"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), min_size=1, max_size=12),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
       st.sampled_from([0.5, 0.8, 1.0]))
def test_jaccard_index_matches_brute_force(stored, query, threshold):
    texts = [" ".join(s) for s in stored]
    idx = JaccardIndex(threshold, texts[: len(texts) // 2])
    for t in texts[len(texts) // 2:]:
        idx.add(t)
    q = " ".join(query)
    best = max(jaccard(q, t) for t in texts)
    found = idx.most_similar(q)
    if best >= threshold:
        assert found is not None and abs(found[1] - best) < 1e-12
    else:
        assert found is None


def _cand(instruction: str, goal: dict | None = None, grader: str = "env") -> Candidate:
    parent = Task("toy/train/0", "toy", "parent", goal={"product": "p", "option": "o"})
    t = parent.derive(instruction=instruction, goal=goal if goal is not None else {"i": instruction},
                      reference=["x"], proposer="test", metadata={"grader": grader})
    return Candidate(t, "test")


def test_lexical_dedup_against_pool_batch_and_goals():
    known = [Task("k/0", "toy", "buy the red wool hat in size large", goal={"g": 1})]
    f = LexicalDedup(known, 0.8)
    cands = [
        _cand("Buy the red wool hat, in size large!"),       # same tokens as a pool task
        _cand("completely different request", {"g": 1}),     # same goal as a pool task
        _cand("find blue shoes for running today"),
        _cand("find blue shoes for running today please"),   # 6/7 = 0.857 with the previous one
        _cand("find green socks"),
    ]
    assert f.check(cands) == ["jaccard>=0.8 with a pool task", "same goal as a pool task", None,
                              "jaccard>=0.8 with another candidate", None]
    f.admit(cands[2])
    assert f.check([_cand("find blue shoes for running today", {"g": 2})]) == ["jaccard>=0.8 with a pool task"]


def test_judge_tasks_are_not_compared_by_their_parent_goal():
    f = LexicalDedup([Task("k/0", "toy", "x", goal={"product": "p", "option": "o"})])
    assert f.check([_cand("some new question", goal={"product": "p", "option": "o"}, grader="judge")]) == [None]


class _BagOfWords:
    """A deterministic embedder (word counts over a fixed vocabulary), for testing the dedup logic."""

    def encode(self, texts):
        v = np.array([[t.lower().split().count(w) for w in WORDS] for t in texts], dtype=np.float32)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def test_embedding_dedup_logic():
    f = EmbeddingDedup(_BagOfWords(), [Task("k", "toy", "red hat")], threshold=0.95)
    cands = [_cand("hat red"), _cand("blue shoe"), _cand("shoe blue"), _cand("cheap large size")]
    assert f.check(cands) == ["cosine>=0.95 with a pool task", None, "cosine>=0.95 with another candidate", None]
    f.admit(cands[1])
    assert f.check([_cand("blue blue shoe shoe")]) == ["cosine>=0.95 with a pool task"]


def test_embedding_dedup_with_the_packaged_embedder():
    from wrappers.questioning import packaged_embedder

    emb = packaged_embedder()
    f = EmbeddingDedup(emb, [Task("k", "toy", "I need a pair of black leather boots for hiking")], threshold=0.85)
    verdicts = f.check([_cand("i need black leather hiking boots, one pair"),
                        _cand("a ceramic coffee mug that holds 12 ounces")])
    assert verdicts == ["cosine>=0.85 with a pool task", None]


def test_leakage_guard_rejects_tasks_near_dev_or_test():
    env = ToyShopEnv()
    protected = env.tasks("dev") + env.tasks("test")
    guard = LeakageGuard(protected, embedder=_BagOfWords(), cosine_threshold=0.99)
    d = protected[0]
    near = guard.check([_cand("totally new words here", goal=dict(d.goal)),
                        _cand(d.instruction + " now"),
                        _cand("zzz"), ])
    assert near[0] == "same goal as a dev/test task"
    assert near[1].startswith("jaccard>=0.8")
    assert near[2] is None


def test_feasibility_replays_references():
    env = ToyShopEnv()
    good = env.tasks("train")[0]
    ok = _cand("buy it", goal=dict(good.goal))
    ok.task.reference = env.oracle(good) + ["click[buy now]"]  # the extra action is trimmed away
    wrong_item = _cand("buy it", goal=dict(good.goal))
    wrong_item.task.reference = env.oracle(good)[:2] + ["click[buy now]"]  # no colour picked
    invalid = _cand("buy it", goal=dict(good.goal))
    invalid.task.reference = ["click[nothing here]"]
    unfinished = _cand("buy it", goal=dict(good.goal))
    unfinished.task.reference = env.oracle(good)[:2]
    empty = _cand("buy it", goal=dict(good.goal))
    empty.task.reference = []
    judged = _cand("what is there?", grader="judge")
    verdicts = Feasibility(ToyShopEnv()).check([ok, wrong_item, invalid, unfinished, empty, judged])
    assert verdicts[0] is None and ok.task.reference == env.oracle(good)
    assert verdicts[1:] == ["reference replay fails the env check", "reference has an invalid action",
                            "reference does not finish the episode", "empty reference",
                            "no judge for a task the env cannot check"]
