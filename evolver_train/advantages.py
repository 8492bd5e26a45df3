"""Advantage estimators for multi-turn GRPO: outcome, attributed (ADCA) and anchor-state (GiGPO).

Pure functions over numpy arrays, one value per trajectory or per step, plus the cross-rank
gather that makes them correct when a GRPO group is split over several processes.

* ``EpisodeSignals`` - what the estimators read from one finished episode.
* ``outcome_advantages`` - group-relative outcome advantage, one scalar per trajectory.
* ``adca_step_advantages`` - ADCA "decouple": labels -> group z-score (equal trajectory weight)
  -> suffix sum -> x alpha, plus the normalised outcome on every step through the suffix sum.
* ``gigpo_step_advantages`` - GiGPO step advantage over anchor-state groups of discounted returns.
* ``combine_step_advantages`` - outcome + alpha * attribution + omega * anchor, per step, with the
  mean absolute size of each component (for the "share" metrics).
* ``cosine_alpha`` - the attribution weight schedule (cosine decay, cut off after a step).
* ``gather_episodes`` - all-gather per-episode records across ranks (no-op in one process).
* ``token_advantages`` - broadcast per-step advantages onto token positions via step ids.

Conventions: ``groups[i]`` is the GRPO group (task slot) of trajectory ``i``; all statistics are
computed within a group. Degenerate groups (one member, or every value equal) give zero advantage,
never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wrappers.attribution.plugin import cosine_alpha  # the schedule lives with the mechanism it weighs

__all__ = [
    "EpisodeSignals",
    "outcome_advantages",
    "adca_step_advantages",
    "gigpo_step_advantages",
    "combine_step_advantages",
    "cosine_alpha",
    "gather_episodes",
    "token_advantages",
]

_EPS = 1e-8


@dataclass
class EpisodeSignals:
    """The per-episode inputs of the estimators.

    Args:
        group: GRPO group key (equal for the G rollouts of one task slot; a multi-seat game adds the seat slot).
        outcome: The episode's return (the reward the outcome advantage normalises).
        step_rewards: Environment reward of each step, in order.
        labels: Attribution score per step (+1 GOOD / -1 BAD or a graded score), or ``None`` when
            the episode was not attributed.
        anchors: Hashable key of the state each step acted on (GiGPO anchor states).
    """

    group: Hashable
    outcome: float
    step_rewards: list[float] = field(default_factory=list)
    labels: list[float] | None = None
    anchors: list[Hashable] = field(default_factory=list)

    @property
    def num_steps(self) -> int:
        return len(self.step_rewards)


def _group_index(groups: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    return members


def outcome_advantages(returns: Sequence[float], groups: Sequence[Hashable], *, scale: bool = True,
                       eps: float = _EPS) -> np.ndarray:
    """Group-relative outcome advantage ``(R_i - mean_g R) / std_g R``.

    ``std`` is the population standard deviation (AgentEvolver's convention). When a group's std is
    at most ``eps`` (constant rewards, singleton groups) the advantage is only centred, i.e. 0.
    With ``scale=False`` it is mean-centred only (Dr. GRPO / GiGPO ``mean_norm``).

    Example:
        >>> outcome_advantages([1.0, 0.0, 5.0, 5.0], [0, 0, 1, 1]).tolist()
        [1.0, -1.0, 0.0, 0.0]
    """
    r = np.asarray(returns, dtype=np.float64)
    if r.shape != (len(groups),):
        raise ValueError(f"returns has shape {r.shape}, expected ({len(groups)},) like groups")
    adv = np.zeros_like(r)
    for idx in _group_index(groups).values():
        vals = r[idx]
        centred = vals - vals.mean()
        std = vals.std()
        adv[idx] = centred / std if (scale and std > eps) else centred
    return adv


def adca_step_advantages(episodes: Sequence[EpisodeSignals], outcome_adv: Sequence[float], alpha: float, *,
                         equal_trajectory_weight: bool = True) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """ADCA "decouple" step advantages (AgentEvolver Eq. 20-21).

    Per group g: ``mu_g`` and ``sigma_g`` of the step labels (each trajectory weighted equally when
    ``equal_trajectory_weight``, else every step pooled), ``z_ik = (l_ik - mu_g) / sqrt(sigma_g^2 +
    1e-8)``; step reward ``c_ik = alpha * z_ik + 1[k = last] * o_i``; advantage = undiscounted suffix
    sum ``A_ik = o_i + alpha * sum_{j >= k} z_ij``.

    Episodes whose ``labels`` is ``None`` take no part in the label statistics and get only the
    outcome term. Labels shorter than the episode are padded with GOOD (+1), longer ones cut.

    Returns:
        ``(advantages, attribution_terms)``: per episode, the full step advantage and the
        ``alpha * suffix-sum`` part alone.
    """
    if len(outcome_adv) != len(episodes):
        raise ValueError(f"{len(outcome_adv)} outcome advantages for {len(episodes)} episodes")
    labels: list[np.ndarray | None] = []
    for ep in episodes:
        if ep.labels is None:
            labels.append(None)
            continue
        lab = np.ones(ep.num_steps, dtype=np.float64)
        given = np.asarray(ep.labels[: ep.num_steps], dtype=np.float64)
        lab[: len(given)] = given
        labels.append(lab)

    z: list[np.ndarray] = [np.zeros(ep.num_steps) for ep in episodes]
    for idx in _group_index([ep.group for ep in episodes]).values():
        labelled = [i for i in idx if labels[i] is not None and len(labels[i]) > 0]
        if not labelled:
            continue
        if equal_trajectory_weight:
            mu = float(np.mean([labels[i].mean() for i in labelled]))
            var = float(np.mean([((labels[i] - mu) ** 2).mean() for i in labelled]))
        else:
            pooled = np.concatenate([labels[i] for i in labelled])
            mu, var = float(pooled.mean()), float(pooled.var())
        sigma = math.sqrt(var + _EPS)
        for i in labelled:
            z[i] = (labels[i] - mu) / sigma

    advantages, attribution = [], []
    for ep, zi, o in zip(episodes, z, outcome_adv):
        attr = alpha * np.cumsum(zi[::-1])[::-1] if ep.num_steps else np.zeros(0)
        attribution.append(attr)
        advantages.append(attr + float(o))
    return advantages, attribution


def _discounted_returns(rewards: Sequence[float], gamma: float) -> np.ndarray:
    out = np.zeros(len(rewards))
    running = 0.0
    for k in range(len(rewards) - 1, -1, -1):
        running = float(rewards[k]) + gamma * running
        out[k] = running
    return out


def gigpo_step_advantages(episodes: Sequence[EpisodeSignals], *, gamma: float = 0.95,
                          scale: bool = False) -> list[np.ndarray]:
    """GiGPO anchor-state step advantage (Feng et al. 2025, Eq. 5-7).

    Step returns ``R_t = sum_{k>=t} gamma^(k-t) r_k``; within a task group, steps taken from the same
    anchor state form a cluster; ``A_t = R_t - mean(cluster)`` (divided by the cluster std when
    ``scale``). Singleton clusters get 0.
    """
    returns = [_discounted_returns(ep.step_rewards, gamma) for ep in episodes]
    out = [np.zeros(ep.num_steps) for ep in episodes]
    clusters: dict[tuple[Hashable, Hashable], list[tuple[int, int]]] = {}
    for i, ep in enumerate(episodes):
        if len(ep.anchors) != ep.num_steps:
            raise ValueError(f"episode {i} has {len(ep.anchors)} anchors for {ep.num_steps} steps")
        for k, key in enumerate(ep.anchors):
            clusters.setdefault((ep.group, key), []).append((i, k))
    for members in clusters.values():
        if len(members) < 2:
            continue
        vals = np.array([returns[i][k] for i, k in members])
        centred = vals - vals.mean()
        std = vals.std()
        if scale and std > _EPS:
            centred = centred / std
        for (i, k), a in zip(members, centred):
            out[i][k] = a
    return out


def combine_step_advantages(episodes: Sequence[EpisodeSignals], *, alpha: float = 0.0, omega: float = 0.0,
                            gamma: float = 0.95, scale_outcome: bool = True,
                            equal_trajectory_weight: bool = True) -> tuple[list[np.ndarray], dict[str, float]]:
    """Per-step advantage ``A_ik = o_i + alpha * sum_{j>=k} z_ij + omega * A^S_ik``.

    With ``alpha = omega = 0`` this is plain GRPO (the outcome advantage on every step).

    Returns:
        ``(advantages, stats)`` with ``stats`` holding the mean absolute value of each component
        over all steps (``outcome_abs``, ``attribution_abs``, ``anchor_abs``) and their shares.
    """
    outcome = outcome_advantages([ep.outcome for ep in episodes], [ep.group for ep in episodes],
                                 scale=scale_outcome)
    if alpha != 0.0:
        _, attribution = adca_step_advantages(episodes, outcome, alpha,
                                              equal_trajectory_weight=equal_trajectory_weight)
    else:
        attribution = [np.zeros(ep.num_steps) for ep in episodes]
    anchor = (gigpo_step_advantages(episodes, gamma=gamma) if omega != 0.0
              else [np.zeros(ep.num_steps) for ep in episodes])
    advantages = [o + a + omega * s for o, a, s in zip(outcome, attribution, anchor)]

    n_steps = sum(ep.num_steps for ep in episodes)
    def _abs_mean(parts: list[np.ndarray] | np.ndarray, per_step: bool = True) -> float:
        if n_steps == 0:
            return 0.0
        if not per_step:  # outcome: one value per episode, counted once per step it covers
            return float(sum(abs(o) * ep.num_steps for o, ep in zip(parts, episodes)) / n_steps)
        return float(sum(np.abs(p).sum() for p in parts) / n_steps)

    stats = {
        "outcome_abs": _abs_mean(outcome, per_step=False),
        "attribution_abs": _abs_mean(attribution),
        "anchor_abs": _abs_mean([omega * s for s in anchor]),
    }
    total = stats["outcome_abs"] + stats["attribution_abs"] + stats["anchor_abs"]
    for name in ("outcome", "attribution", "anchor"):
        stats[f"{name}_share"] = stats[f"{name}_abs"] / total if total > 0 else 0.0
    return advantages, stats


def gather_episodes(local: list[Any]) -> tuple[list[Any], slice]:
    """All-gather ``local`` records from every rank, in rank order.

    Returns the concatenated list and the slice of it that belongs to this rank. Without an
    initialised ``torch.distributed`` process group it returns ``local`` unchanged. Every rank must
    call it (it is a collective).
    """
    try:
        import torch.distributed as dist
    except ImportError:  # torch missing: single process by definition
        return list(local), slice(0, len(local))
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return list(local), slice(0, len(local))
    parts: list[list[Any] | None] = [None] * dist.get_world_size()
    dist.all_gather_object(parts, list(local))
    rank = dist.get_rank()
    start = sum(len(p) for p in parts[:rank])
    merged = [x for p in parts for x in p]
    return merged, slice(start, start + len(local))


def token_advantages(step_ids: Sequence[int], step_advantages: Sequence[float]) -> np.ndarray:
    """Broadcast step advantages onto tokens: token ``t`` gets ``step_advantages[step_ids[t]]``.

    Tokens with a negative step id (environment tokens, padding) get 0.

    Example:
        >>> token_advantages([0, 0, -1, 1, -1], [0.5, -1.0]).tolist()
        [0.5, 0.5, 0.0, -1.0, 0.0]
    """
    ids = np.asarray(step_ids, dtype=np.int64)
    adv = np.asarray(step_advantages, dtype=np.float64)
    out = np.zeros(len(ids))
    valid = ids >= 0
    if valid.any():
        if ids[valid].max() >= len(adv):
            raise ValueError(f"step id {int(ids[valid].max())} has no advantage ({len(adv)} steps)")
        out[valid] = adv[ids[valid]]
    return out
