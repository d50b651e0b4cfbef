"""Means and sample standard deviations of score columns (exact sums, `math.fsum`).

Kept apart from `assay.metrics.base` so it compiles with the row path (`assay._native`):
a streamed run of 1,000,000 rows and eight metrics sums eight million values at its
end, serially, while nothing else runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def mean(values: Sequence[float]) -> float | None:
    """The exact mean (None for no values)."""
    return math.fsum(values) / len(values) if values else None


def sample_std(values: Sequence[float], m: float) -> float:
    """The sample standard deviation of two or more `values` around their mean `m`."""
    return math.sqrt(math.fsum([(v - m) ** 2 for v in values]) / (len(values) - 1))
