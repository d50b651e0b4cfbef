"""Repeated-run statistics: pass@k, pass^k, bootstrap confidence intervals."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence


def bootstrap_ci(
    groups: Sequence[Sequence[float]],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap CI of the mean, resampling whole groups (one group per case).

    Resampling cases rather than individual runs keeps the interval honest when runs of
    one case are correlated. Returns None when there is nothing to resample.
    """
    groups = [g for g in groups if g]
    if not groups:
        return None
    sums = [math.fsum(g) for g in groups]
    counts = [len(g) for g in groups]
    n = len(groups)
    rng = random.Random(seed)
    means = []
    indices = range(n)
    for _ in range(resamples):
        picks = rng.choices(indices, k=n)
        total = math.fsum(sums[i] for i in picks)
        count = sum(counts[i] for i in picks)
        means.append(total / count)
    means.sort()
    alpha = (1.0 - confidence) / 2.0
    lo = means[max(0, math.floor(alpha * resamples))]
    hi = means[min(resamples - 1, math.ceil((1.0 - alpha) * resamples) - 1)]
    return lo, hi


def pass_at_k(passes: Sequence[bool]) -> bool:
    """At least one of the k runs passed."""
    return any(passes)


def pass_hat_k(passes: Sequence[bool]) -> bool:
    """All k runs passed."""
    return bool(passes) and all(passes)
