"""Advantage math against hand-computed examples."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evolver_train.advantages import (
    EpisodeSignals,
    adca_step_advantages,
    combine_step_advantages,
    cosine_alpha,
    gigpo_step_advantages,
    outcome_advantages,
    token_advantages,
)


def test_outcome_two_groups_population_std():
    # group 0: returns 1, 0, 0, 1 -> mean .5, population std .5 -> +-1
    adv = outcome_advantages([1, 0, 0, 1, 2, 4], [0, 0, 0, 0, 1, 1])
    np.testing.assert_allclose(adv, [1, -1, -1, 1, -1, 1])


def test_outcome_singleton_and_constant_groups_are_zero():
    adv = outcome_advantages([0.7, 3.0, 3.0, 3.0], ["a", "b", "b", "b"])
    np.testing.assert_array_equal(adv, [0.0, 0.0, 0.0, 0.0])
    assert not np.isnan(adv).any()


def test_outcome_mean_only():
    np.testing.assert_allclose(outcome_advantages([1, 0, 0, 0], [0] * 4, scale=False), [0.75, -0.25, -0.25, -0.25])


def test_adca_hand_example():
    # one group, two trajectories: success with labels [G, B], failure with labels [B]
    eps = [EpisodeSignals(0, 1.0, [0, 1], labels=[1, -1]), EpisodeSignals(0, 0.0, [0], labels=[-1])]
    o = outcome_advantages([1.0, 0.0], [0, 0])  # [1, -1]
    adv, attr = adca_step_advantages(eps, o, alpha=0.1)
    # equal trajectory weight: mu = mean(mean([1,-1]), mean([-1])) = mean(0, -1) = -0.5
    # var = mean(mean([(1.5)^2, (-0.5)^2]), mean([(-0.5)^2])) = mean(1.25, 0.25) = 0.75
    sigma = math.sqrt(0.75 + 1e-8)
    z0 = np.array([1.5, -0.5]) / sigma
    z1 = np.array([-0.5]) / sigma
    np.testing.assert_allclose(attr[0], 0.1 * np.array([z0.sum(), z0[1]]))
    np.testing.assert_allclose(adv[0], 1.0 + 0.1 * np.array([z0.sum(), z0[1]]))
    np.testing.assert_allclose(adv[1], -1.0 + 0.1 * z1)


def test_adca_pooled_weighting_differs():
    eps = [EpisodeSignals(0, 1.0, [0, 0, 0], labels=[1, 1, 1]), EpisodeSignals(0, 0.0, [0], labels=[-1])]
    _, eq = adca_step_advantages(eps, [0, 0], alpha=1.0)
    _, pooled = adca_step_advantages(eps, [0, 0], alpha=1.0, equal_trajectory_weight=False)
    # equal weight: mu = 0, sigma = 1 -> z = +1 each step; pooled: mu = .5, sigma = sqrt(.75)
    np.testing.assert_allclose(eq[0], [3, 2, 1], atol=1e-6)
    np.testing.assert_allclose(pooled[0], np.array([3, 2, 1]) * 0.5 / math.sqrt(0.75), atol=1e-6)


def test_adca_constant_labels_and_unlabelled_give_outcome_only():
    eps = [EpisodeSignals(0, 1.0, [0, 0], labels=[1, 1]), EpisodeSignals(0, 0.0, [0], labels=[1]),
           EpisodeSignals(1, 0.0, [0, 0], labels=None)]
    adv, attr = adca_step_advantages(eps, [1.0, -1.0, 0.0], alpha=0.5)
    np.testing.assert_allclose(adv[0], [1.0, 1.0])
    np.testing.assert_allclose(adv[1], [-1.0])
    np.testing.assert_allclose(adv[2], [0.0, 0.0])
    assert all(np.all(a == 0) for a in attr)


def test_adca_truncated_labels_padded_good():
    # episode cut by the token budget after 3 steps, the attributor only labelled 1 step
    eps = [EpisodeSignals(0, 0.0, [0, 0, 0], labels=[-1]), EpisodeSignals(0, 0.0, [0], labels=[1])]
    _, attr = adca_step_advantages(eps, [0, 0], alpha=1.0)
    # labels become [-1, 1, 1] and [1]: mu = mean(1/3, 1) = 2/3
    mu = 2 / 3
    var = np.mean([np.mean((np.array([-1, 1, 1]) - mu) ** 2), (1 - mu) ** 2])
    z = (np.array([-1, 1, 1]) - mu) / math.sqrt(var + 1e-8)
    np.testing.assert_allclose(attr[0], np.cumsum(z[::-1])[::-1])


def test_gigpo_anchor_groups():
    # two trajectories share the start state "s0"; the second step states differ (singletons -> 0)
    eps = [EpisodeSignals(0, 1.0, [0.0, 1.0], anchors=["s0", "s1"]),
           EpisodeSignals(0, 0.0, [0.0, 0.0], anchors=["s0", "s2"]),
           EpisodeSignals(1, 0.0, [0.0], anchors=["s0"])]  # same key, other group: not clustered
    adv = gigpo_step_advantages(eps, gamma=0.5)
    # returns at s0: 0 + .5*1 = .5 and 0 -> mean .25
    np.testing.assert_allclose(adv[0], [0.25, 0.0])
    np.testing.assert_allclose(adv[1], [-0.25, 0.0])
    np.testing.assert_allclose(adv[2], [0.0])


def test_gigpo_rejects_missing_anchors():
    with pytest.raises(ValueError, match="anchors"):
        gigpo_step_advantages([EpisodeSignals(0, 1.0, [0.0, 1.0], anchors=["s0"])])


def test_combine_plain_grpo_and_shares():
    eps = [EpisodeSignals(0, 1.0, [0, 1], labels=[1, 1], anchors=["a", "b"]),
           EpisodeSignals(0, 0.0, [0], labels=[-1], anchors=["a"])]
    adv, stats = combine_step_advantages(eps)
    np.testing.assert_allclose(adv[0], [1.0, 1.0])
    np.testing.assert_allclose(adv[1], [-1.0])
    assert stats["outcome_share"] == 1.0 and stats["attribution_share"] == 0.0
    adv2, stats2 = combine_step_advantages(eps, alpha=0.1, omega=1.0, gamma=1.0)
    assert stats2["attribution_abs"] > 0 and stats2["anchor_abs"] > 0
    assert math.isclose(stats2["outcome_share"] + stats2["attribution_share"] + stats2["anchor_share"], 1.0)
    # anchor "a": returns 1 and 0 -> +-0.5
    _, attr = adca_step_advantages(eps, [1.0, -1.0], 0.1)
    np.testing.assert_allclose(adv2[0], 1.0 + attr[0] + np.array([0.5, 0.0]))


def test_cosine_alpha_schedule():
    assert cosine_alpha(0, alpha=0.2, decay_steps=10) == pytest.approx(0.2)
    assert cosine_alpha(5, alpha=0.2, decay_steps=10) == pytest.approx(0.1)
    assert cosine_alpha(50, alpha=0.2, alpha_min=0.05, decay_steps=10) == pytest.approx(0.05)
    assert cosine_alpha(7, alpha=0.2) == 0.2
    assert cosine_alpha(100, alpha=0.2, cutoff_step=100) == 0.0


def test_token_advantages():
    np.testing.assert_allclose(token_advantages([0, 0, -1, 1, 1, -1], [2.0, -3.0]), [2, 2, 0, -3, -3, 0])
    with pytest.raises(ValueError, match="step id 2"):
        token_advantages([0, 2], [1.0])
