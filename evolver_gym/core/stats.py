"""Small statistics shared by evaluations, tournaments and benchmarks.

* ``wilson_interval`` - the Wilson score interval of a success or win rate.
"""

from __future__ import annotations

import math

__all__ = ["wilson_interval"]


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
