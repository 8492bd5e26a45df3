"""Curriculum: band status, weighted draws, seed mixing, and tracking a policy that improves."""

from __future__ import annotations

import numpy as np
import pytest

from evolver_gym.core import Task, make_rng
from wrappers.questioning import Curriculum, CurriculumConfig, TaskPool


def _pool(n_seed: int = 0, n_synth: int = 30) -> TaskPool:
    pool = TaskPool(None)
    for i in range(n_seed):
        pool.add(Task(f"toy/train/{i}", "toy", f"seed {i}"))
    parent = Task("toy/train/parent", "toy", "parent")
    for i in range(n_synth):
        pool.add(parent.derive(instruction=f"synthetic {i}", goal={"d": i}, reference=["x"], proposer="hindsight"))
    return pool


def test_config_is_validated():
    with pytest.raises(ValueError, match="band"):
        CurriculumConfig(band=(0.9, 0.1))
    with pytest.raises(ValueError, match="seed_ratio"):
        CurriculumConfig(seed_ratio=1.5)
    with pytest.raises(ValueError, match="window"):
        CurriculumConfig(window=0)


def test_status_and_weights_follow_the_band():
    pool = _pool(n_synth=3)
    a, b, c = pool.ids()
    cur = Curriculum(pool, CurriculumConfig(band=(0.25, 0.75), window=4, min_observations=2,
                                            out_of_band_weight=0.1))
    for s in (1, 1, 1, 1):
        cur.update(a, s)
    for s in (1, 0, 1, 0):
        cur.update(b, s)
    cur.update(c, 0)
    assert (cur.status(a), cur.status(b), cur.status(c)) == ("above", "in_band", "unknown")
    assert cur.weights([a, b, c]).tolist() == [0.1, 1.0, 1.0]
    assert cur.difficulty(b) == 0.5 and cur.difficulty(c) is None
    # The window forgets old outcomes: four failures bring a from "above" to "below".
    for _ in range(4):
        cur.update(a, 0)
    assert cur.status(a) == "below"
    assert cur.summary() == {"band": [0.25, 0.75], "unknown": 1, "below": 1, "in_band": 1, "above": 0}


def test_same_seed_same_draws():
    pool = _pool()
    cur = Curriculum(pool)
    draws = lambda: [cur.sample(make_rng(3, "draws")) for _ in range(1)] + [  # noqa: E731
        cur.sample(r) for r in [make_rng(3, "more")] for _ in range(20)]
    assert draws() == draws()


def test_seed_ratio_mixes_seed_and_synthetic():
    pool = _pool(n_seed=10, n_synth=10)
    rng = np.random.default_rng(0)
    cur = Curriculum(pool, CurriculumConfig(seed_ratio=0.25))
    origins = [pool.get(cur.sample(rng)).origin for _ in range(800)]
    share = origins.count("seed") / len(origins)
    assert 0.2 < share < 0.3
    only_synth = Curriculum(pool, CurriculumConfig(seed_ratio=0.0))
    assert {pool.get(only_synth.sample(rng)).origin for _ in range(100)} == {"synthetic"}


def test_curriculum_follows_a_changing_pass_rate():
    """Tasks have latent difficulty; the policy's skill jumps from 0.2 to 0.8 half-way.

    The curriculum only sees outcomes. Draws should concentrate on tasks near the current skill,
    and move to harder tasks after the skill rises.
    """
    pool = _pool(n_synth=30)
    ids = pool.ids()
    latent = {t: i / 29 for i, t in enumerate(ids)}  # 0 (trivial) .. 1 (impossible)
    cur = Curriculum(pool, CurriculumConfig(band=(0.2, 0.8), window=6, min_observations=2, out_of_band_weight=0.02))
    rng = make_rng(0, "curriculum-test")

    def play(skill: float, episodes: int) -> list[float]:
        drawn = []
        for _ in range(episodes):
            t = cur.sample(rng)
            p_success = 1.0 / (1.0 + np.exp(-(skill - latent[t]) * 12))
            cur.update(t, bool(rng.random() < p_success))
            drawn.append(latent[t])
        return drawn

    early = play(0.2, 600)[-300:]
    late = play(0.8, 900)[-300:]

    # Draws sit near the skill level: median close to it, and far more draws within 0.2 of it
    # than uniform sampling would give (12 of 30 tasks = 0.4).
    assert abs(np.median(early) - 0.2) < 0.12 and abs(np.median(late) - 0.8) < 0.12, (np.median(early), np.median(late))
    assert np.mean(np.abs(np.array(early) - 0.2) <= 0.2) > 0.55
    assert np.mean(np.abs(np.array(late) - 0.8) <= 0.2) > 0.55
    assert np.median(late) - np.median(early) > 0.35
    # Tasks that are easy for the improved policy are recognised as above the band.
    easy = [t for t in ids if latent[t] <= 0.35]
    assert np.mean([cur.status(t) == "above" for t in easy]) >= 0.75
