"""Means and sample standard deviations of score columns (exact sums, `math.fsum`).

Kept apart from `assay.metrics.base`: plain functions over a tally's arrays, which a
streamed run of many rows calls once at its end.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence


def mean(values: Sequence[float]) -> float | None:
    """The exact mean (None for no values)."""
    return math.fsum(values) / len(values) if values else None


def sample_std(values: Sequence[float], m: float) -> float:
    """The sample standard deviation of two or more `values` around their mean `m`."""
    try:
        if isinstance(values, array) and values.typecode == "d":
            squares: Sequence[float] = _squared_deviations(values, m)
        else:
            squares = [(v - m) ** 2 for v in values]
    except OverflowError:  # a square beyond a double: C's pow gives infinity
        return math.inf
    return math.sqrt(math.fsum(squares) / (len(values) - 1))


_SQUARE = 2.0
"""The exponent, a variable: a C compiler turns `pow(x, 2.0)` into `x * x`, which
rounds differently from the C library's `pow` (Python's `**`) for ~0.1 % of values."""


def _squared_deviations(values: array[float], m: float) -> array[float]:
    """`(v - m) ** 2` for each of `values` (a tally's array), in a new array, by the C
    library's `pow` (what Python's `**` calls)."""
    squares = array("d", values)
    view = squares
    for i in range(len(squares)):
        view[i] = pow(view[i] - m, _SQUARE)
    return squares
