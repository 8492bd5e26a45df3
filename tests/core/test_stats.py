"""Intervals over seeds x episodes, differences of means, and evaluation-sample fingerprints."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from evolver_gym.core.stats import (
    difference_interval,
    evaluation_sample,
    mean_interval,
    summarize_over_seeds,
    wilson_interval,
)

scipy_stats = pytest.importorskip("scipy.stats")


def test_mean_interval_is_students_t():
    values = [0.31, 0.36, 0.29, 0.41]
    mean, lo, hi = mean_interval(values)
    ref = scipy_stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=scipy_stats.sem(values))
    assert mean == pytest.approx(np.mean(values)) and (lo, hi) == pytest.approx(ref)
    assert mean_interval([0.5])[1:] == (-math.inf, math.inf)


def _study(rng, true_mean, seed_sd, seeds, episodes):
    """Success outcomes: each seed's policy has its own success rate around ``true_mean``."""
    rates = np.clip(rng.normal(true_mean, seed_sd, size=seeds), 0, 1)
    return {s: rng.random(episodes) < rates[s] for s in range(seeds)}


def test_seed_interval_covers_the_mean_over_seeds_and_the_episode_interval_does_not():
    # With seed-to-seed spread, the t interval over seeds keeps its 95% coverage of the mean a new seed
    # would have; the episode-only interval (seeds fixed) is too narrow for that question.
    rng = np.random.default_rng(0)
    hits_t = hits_episode = 0
    trials = 400
    for _ in range(trials):
        study = _study(rng, 0.4, 0.08, seeds=3, episodes=128)
        s = summarize_over_seeds({k: v.astype(float) for k, v in study.items()})
        hits_t += s["interval"][0] <= 0.4 <= s["interval"][1]
        hits_episode += s["episode_interval"][0] <= 0.4 <= s["episode_interval"][1]
    assert 0.91 <= hits_t / trials <= 0.99
    assert hits_episode / trials < 0.85


def test_summary_fields_and_pooled_wilson():
    s = summarize_over_seeds({0: [1, 0, 1, 1], 1: [0, 1, 1, 0]})
    assert s["episode_interval"] == list(wilson_interval(5, 8, z=statistics.NormalDist().inv_cdf(0.975)))
    assert s["num_seeds"] == 2 and s["num_episodes"] == 8 and s["seed_means"] == {"0": 0.75, "1": 0.5}
    scores = summarize_over_seeds({0: [0.2, 0.9], 1: [0.5, 0.7]})  # scores: normal episode interval
    assert scores["episode_interval"][0] < scores["mean"] < scores["episode_interval"][1]
    with pytest.raises(ValueError, match="seed 1 has no evaluation episodes"):
        summarize_over_seeds({0: [1], 1: []})
    with pytest.raises(ValueError, match="confidence must lie in"):
        summarize_over_seeds({0: [1]}, confidence=95)


def test_paired_difference_is_t_over_seed_differences():
    treat = {0: [1, 1, 0, 1], 1: [1, 0, 1, 1], 2: [1, 1, 1, 1]}
    base = {0: [0, 1, 0, 0], 1: [0, 0, 1, 0], 2: [1, 1, 0, 0]}
    d = difference_interval(treat, base)
    diffs = [0.5, 0.5, 0.5]
    assert d["difference"] == pytest.approx(0.5) and d["df"] == 2
    assert d["interval"] == pytest.approx([0.5, 0.5])  # no spread across seeds: a zero-width interval
    assert mean_interval(diffs)[1:] == pytest.approx(tuple(d["interval"]))
    with pytest.raises(ValueError, match="paired seeds must match"):
        difference_interval({0: [1]}, {1: [0]})
    with pytest.raises(ValueError, match="method must be 't' or 'bootstrap', got 'z'"):
        difference_interval(treat, base, method="z")


def test_welch_matches_scipy_and_bootstrap_is_episode_noise():
    rng = np.random.default_rng(1)
    a = {s: (rng.random(200) < p).astype(float) for s, p in enumerate((0.50, 0.58, 0.44))}
    b = {s: (rng.random(200) < p).astype(float) for s, p in enumerate((0.35, 0.41, 0.38))}
    welch = difference_interval(a, b, paired=False)
    ma, mb = [v.mean() for v in a.values()], [v.mean() for v in b.values()]
    res = scipy_stats.ttest_ind(ma, mb, equal_var=False)
    assert welch["interval"] == pytest.approx(list(res.confidence_interval(0.95)))
    boot = difference_interval(a, b, method="bootstrap", resamples=4000)
    assert boot == difference_interval(a, b, method="bootstrap", resamples=4000)  # seeded
    assert boot["interval"][0] < boot["difference"] < boot["interval"][1]
    # Seeds fixed: narrower than the t interval over seeds, which also carries the seed spread.
    assert boot["interval"][1] - boot["interval"][0] < welch["interval"][1] - welch["interval"][0]


def test_evaluation_sample_fingerprints_the_episodes():
    ids = ["webshop/product-dev/0", "webshop/product-dev/1", "webshop/product-dev/1"]
    a = evaluation_sample(ids, [3, 4, 5], env_id="evolver/WebShop-v0", split_scheme="product")
    assert a["num_episodes"] == 3 and a["num_tasks"] == 2 and a["split_scheme"] == "product"
    assert a == evaluation_sample(ids, [3, 4, 5], env_id="evolver/WebShop-v0", split_scheme="product")
    others = [evaluation_sample(ids, [3, 4, 6], env_id="evolver/WebShop-v0", split_scheme="product"),
              evaluation_sample(ids[:2], [3, 4], env_id="evolver/WebShop-v0", split_scheme="product"),
              evaluation_sample(ids, [3, 4, 5], env_id="evolver/WebShop-v0", split_scheme="goal")]
    assert len({a["fingerprint"], *(o["fingerprint"] for o in others)}) == 4
    with pytest.raises(ValueError, match="one seed per episode: 2 seeds, 3 episodes"):
        evaluation_sample(ids, [1, 2])
