"""The summary's mean and sample standard deviation (`assay.metrics.stats`): the same
bits as Python's own `(v - m) ** 2` and `math.fsum`, for a tally's arrays and for plain
lists. (The module is plain Python since issue #34: only the row kernels are compiled.)"""

from __future__ import annotations

import math
import random
from array import array

import pytest

from assay.metrics import stats


def _reference(values: list[float], m: float) -> float:
    return math.sqrt(math.fsum([(v - m) ** 2 for v in values]) / (len(values) - 1))


@pytest.mark.parametrize("scale", [1.0, 1e-3, 7.5, 1e5, 1e-300, 1e150])
def test_same_bits_as_python(scale: float) -> None:
    rng = random.Random(scale)
    values = [rng.random() * scale for _ in range(50_000)]
    m = stats.mean(values)
    assert m is not None
    squares = stats._squared_deviations(array("d", values), m)
    if scale == 1.0:  # rows a C compiler's x * x would get wrong are among these
        assert any((v - m) * (v - m) != (v - m) ** 2 for v in values)
    assert list(squares) == [(v - m) ** 2 for v in values]
    expected = _reference(values, m)
    assert stats.sample_std(array("d", values), m) == expected
    assert stats.sample_std(values, m) == expected


def test_small_and_integer_values() -> None:
    assert stats.sample_std(array("d", [1, 2, 3, 4]), 2.5) == _reference([1, 2, 3, 4], 2.5)
    assert stats.sample_std([1, 2, 3, 4], 2.5) == _reference([1, 2, 3, 4], 2.5)
    assert stats.mean(array("d")) is None


def test_a_square_beyond_a_double_is_infinite_not_an_error() -> None:
    """Python's ** raises OverflowError where C's pow gives infinity: both ways, the
    deviation is infinite and the summary is still written."""
    assert stats.sample_std(array("d", [1e200, -1e200]), 0.0) == math.inf
    assert stats.sample_std([1e200, -1e200], 0.0) == math.inf
