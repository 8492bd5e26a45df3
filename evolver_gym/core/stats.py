"""Small statistics shared by evaluations, tournaments and benchmarks.

* ``wilson_interval`` - the Wilson score interval of a success or win rate.
* ``mean_interval`` - Student's t interval of a mean (e.g. over training seeds).
* ``summarize_over_seeds`` - mean and 95% intervals of an evaluation repeated over seeds x episodes.
* ``difference_interval`` - interval of a difference of such means: paired or Welch t over seeds
  (the one for claims), or a bootstrap over episodes with the seeds fixed (evaluation noise only).
* ``evaluation_sample`` - which episodes an evaluation played (task ids, seeds, fingerprint), for its report.
* ``team_elo`` - Elo ratings of named players from team games played in order (tournaments, the league).
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["difference_interval", "evaluation_sample", "mean_interval", "summarize_over_seeds", "team_elo",
           "wilson_interval"]


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of ``successes / n`` (``(0, 1)`` when ``n == 0``).

    Example:
        >>> [round(x, 3) for x in wilson_interval(50, 100)]
        [0.404, 0.596]
        >>> wilson_interval(0, 10)[0], wilson_interval(10, 10)[1]
        (0.0, 1.0)
    """
    if n == 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in 0..{n}, got {successes!r}")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # The bounds are exactly 0 and 1 at p = 0 and p = 1; rounding error would put p outside its interval.
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return (lo, hi)


# -- intervals over seeds x evaluation episodes ---------------------------------------------------
def _t_quantile(confidence: float, df: int) -> float:
    try:
        from scipy.stats import t as student_t
    except ImportError as exc:  # the train extra brings scipy
        from evolver_gym.install_check import install_hint

        raise ImportError(f"intervals over seeds need scipy: {install_hint('train')}") from exc
    return float(student_t.ppf(0.5 + confidence / 2, df))


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")


def _per_seed(outcomes: Mapping[Any, Sequence[float]], name: str) -> dict[Any, list[float]]:
    if not outcomes:
        raise ValueError(f"{name} needs outcomes of at least one seed, got none")
    out = {}
    for seed, values in outcomes.items():
        values = [float(v) for v in values]
        if not values:
            raise ValueError(f"{name}: seed {seed!r} has no evaluation episodes")
        out[seed] = values
    return out


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: Student's t interval of the mean of ``values`` (one value: no interval).

    Example:
        >>> [round(x, 3) for x in mean_interval([0.30, 0.34, 0.38])]
        [0.34, 0.241, 0.439]
    """
    _check_confidence(confidence)
    values = [float(v) for v in values]
    if not values:
        raise ValueError("mean_interval needs at least one value")
    mean = sum(values) / len(values)
    if len(values) == 1:
        return mean, -math.inf, math.inf
    sd = statistics.stdev(values)
    half = _t_quantile(confidence, len(values) - 1) * sd / math.sqrt(len(values))
    return mean, mean - half, mean + half


def summarize_over_seeds(outcomes: Mapping[Any, Sequence[float]], confidence: float = 0.95) -> dict[str, Any]:
    """Mean and intervals of an evaluation repeated over training seeds.

    ``outcomes`` maps each seed to its evaluation episodes' outcomes (success 0/1 or scores in [0, 1]).
    The mean is the mean of the per-seed means (each seed weighs the same). Two intervals:

    * ``interval`` - Student's t over the per-seed means (``df = seeds - 1``): what another training
      seed would give, seed-to-seed spread included. This is the one to report for "over N seeds";
      with 3 seeds it is wide (t = 4.30).
    * ``episode_interval`` - the evaluation noise alone, seeds held fixed: Wilson on the pooled
      successes when every outcome is 0/1, else a normal interval with the per-seed variances.

    Example:
        >>> s = summarize_over_seeds({0: [1, 0, 1, 1], 1: [0, 1, 1, 0], 2: [1, 1, 1, 0]})
        >>> round(s["mean"], 3), s["num_seeds"], s["num_episodes"]
        (0.667, 3, 12)
        >>> [round(x, 3) for x in s["interval"]], [round(x, 3) for x in s["episode_interval"]]
        ([0.308, 1.025], [0.391, 0.862])
    """
    per_seed = _per_seed(outcomes, "summarize_over_seeds")
    means = [sum(v) / len(v) for v in per_seed.values()]
    mean, lo, hi = mean_interval(means, confidence)
    pooled = [x for v in per_seed.values() for x in v]
    if all(x in (0.0, 1.0) for x in pooled) and len({len(v) for v in per_seed.values()}) == 1:
        z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
        episode = wilson_interval(int(sum(pooled)), len(pooled), z=z)
    else:
        var = sum(statistics.pvariance(v) / len(v) for v in per_seed.values()) / len(per_seed) ** 2
        half = statistics.NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt(var)
        episode = (mean - half, mean + half)
    return {
        "mean": mean,
        "interval": [lo, hi],
        "interval_method": f"student t over {len(means)} seed means",
        "episode_interval": list(episode),
        "seed_means": {str(k): m for k, m in zip(per_seed, means)},
        "num_seeds": len(per_seed),
        "num_episodes": len(pooled),
        "confidence": confidence,
    }


def difference_interval(
    treatment: Mapping[Any, Sequence[float]],
    baseline: Mapping[Any, Sequence[float]],
    *,
    paired: bool = True,
    method: str = "t",
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> dict[str, Any]:
    """Interval of ``mean(treatment) - mean(baseline)``, each a mean of per-seed means.

    Methods:

    * ``"t"`` (default; the one to report for a claim over seeds) - Student's t. ``paired=True``
      (the same seeds on both sides, e.g. one warm start per seed) uses the per-seed differences,
      ``df = seeds - 1``; ``paired=False`` is Welch's interval with Welch-Satterthwaite ``df``.
    * ``"bootstrap"`` - percentile bootstrap that resamples evaluation episodes within each seed,
      seeds held fixed: the evaluation noise alone, narrower than ``"t"``; never a claim over seeds.

    Example:
        >>> d = difference_interval({0: [1, 1, 0, 1], 1: [1, 0, 1, 1]}, {0: [0, 1, 0, 0], 1: [0, 0, 1, 0]})
        >>> d["difference"], d["df"]
        (0.5, 1)
    """
    _check_confidence(confidence)
    if method not in ("t", "bootstrap"):
        raise ValueError(f"method must be 't' or 'bootstrap', got {method!r}")
    a, b = _per_seed(treatment, "difference_interval"), _per_seed(baseline, "difference_interval")
    if paired and set(a) != set(b):
        raise ValueError(f"paired seeds must match: treatment {sorted(map(str, a))}, baseline {sorted(map(str, b))}")
    mean_a = {k: sum(v) / len(v) for k, v in a.items()}
    mean_b = {k: sum(v) / len(v) for k, v in b.items()}
    diff = sum(mean_a.values()) / len(a) - sum(mean_b.values()) / len(b)
    out: dict[str, Any] = {"difference": diff, "method": method, "paired": paired, "confidence": confidence,
                           "num_seeds": [len(a), len(b)]}
    if method == "bootstrap":
        rng = np.random.default_rng(seed)
        sides = []
        for side in (a, b):
            total = np.zeros(resamples)
            for values in side.values():
                arr = np.asarray(values)
                total += arr[rng.integers(0, len(arr), size=(resamples, len(arr)))].mean(axis=1)
            sides.append(total / len(side))
        draws = sides[0] - sides[1]
        tail = (1 - confidence) / 2
        out["interval"] = [float(np.quantile(draws, tail)), float(np.quantile(draws, 1 - tail))]
        out["df"] = None
        return out
    if paired:
        diffs = [mean_a[k] - mean_b[k] for k in a]
        _, lo, hi = mean_interval(diffs, confidence)
        out.update(interval=[lo, hi], df=len(diffs) - 1)
        return out
    va = statistics.variance(mean_a.values()) / len(a) if len(a) > 1 else math.inf
    vb = statistics.variance(mean_b.values()) / len(b) if len(b) > 1 else math.inf
    if math.isinf(va + vb):
        out.update(interval=[-math.inf, math.inf], df=None)
        return out
    df = (va + vb) ** 2 / ((va**2 / (len(a) - 1) if va else 0.0) + (vb**2 / (len(b) - 1) if vb else 0.0) or 1e-300)
    half = _t_quantile(confidence, df) * math.sqrt(va + vb)
    out.update(interval=[diff - half, diff + half], df=df)
    return out


# -- which episodes an evaluation sampled ----------------------------------------------------------
def evaluation_sample(task_ids: Sequence[str], seeds: Sequence[int] | None = None, **context: Any) -> dict[str, Any]:
    """What an evaluation played, so that two figures are compared only when they should be.

    ``task_ids`` (and the episode ``seeds``, when episodes are sampled) in play order; ``context``
    adds what else fixes the sample (``env_id``, ``split``, ``split_scheme``, ``temperature``...).
    ``fingerprint`` hashes all of it: equal fingerprints, same episodes.

    Example:
        >>> a = evaluation_sample(["webshop/dev/0", "webshop/dev/1"], [7, 8], split_scheme="goal")
        >>> a["num_episodes"], a["num_tasks"], len(a["fingerprint"])
        (2, 2, 16)
        >>> a["fingerprint"] == evaluation_sample(["webshop/dev/1", "webshop/dev/0"], [8, 7],
        ...                                       split_scheme="goal")["fingerprint"]
        False
    """
    task_ids = [str(t) for t in task_ids]
    if seeds is not None:
        seeds = [int(s) for s in seeds]
        if len(seeds) != len(task_ids):
            raise ValueError(f"seeds must give one seed per episode: {len(seeds)} seeds, {len(task_ids)} episodes")
    blob = json.dumps({"task_ids": task_ids, "seeds": seeds, "context": context}, sort_keys=True, default=str)
    return {
        "num_episodes": len(task_ids),
        "num_tasks": len(set(task_ids)),
        "task_ids": task_ids,
        "seeds": seeds,
        **context,
        "fingerprint": hashlib.blake2b(blob.encode(), digest_size=8).hexdigest(),
    }


def team_elo(games: Sequence[tuple[Sequence[str], Sequence[str], float]], k: float = 32.0,
             start: float = 1500.0, ratings: Mapping[str, float] | None = None) -> dict[str, float]:
    """Elo ratings after ``games``, each ``(team_a, team_b, score_a)`` with ``score_a`` 1 (a won), 0 or 0.5.

    A team's rating is the mean of its members' ratings (a name may fill several seats of a team); a
    team gains ``k * (score - expected)``, split equally among its seats, so every update is zero-sum.
    ``ratings``: where to start from (default: every name at ``start``). Unrounded.

    Example:
        >>> r = team_elo([(["a", "a"], ["b"], 1.0)])
        >>> round(r["a"] - 1500, 1), round(r["b"] - 1500, 1)
        (16.0, -16.0)
    """
    out = dict(ratings or {})
    for team_a, team_b, score_a in games:
        for name in (*team_a, *team_b):
            out.setdefault(name, start)
        mean_a = sum(out[n] for n in team_a) / len(team_a)
        mean_b = sum(out[n] for n in team_b) / len(team_b)
        expect_a = 1.0 / (1.0 + 10 ** ((mean_b - mean_a) / 400))
        delta: dict[str, float] = {}
        for team, gain in ((team_a, score_a - expect_a), (team_b, expect_a - score_a)):
            for name in team:
                delta[name] = delta.get(name, 0.0) + k * gain / len(team)
        for name, d in delta.items():
            out[name] += d
    return out
