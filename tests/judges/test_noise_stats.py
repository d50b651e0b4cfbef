"""The statistics of judge noise: Fleiss' kappa, flip rates, intervals."""

from __future__ import annotations

import random

import pytest

from assay.judges.noise import fleiss_kappa, flip_rate, wilson_interval
from assay.session.judge_noise import mean_interval

# Fleiss (1971), as worked in Wikipedia's "Fleiss' kappa" article: 10 subjects, 14
# raters each, 5 categories. P-bar = 0.378, P-bar_e = 0.213, kappa = 0.210.
FLEISS_EXAMPLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_matches_the_published_worked_example() -> None:
    kappa = fleiss_kappa(FLEISS_EXAMPLE)
    assert kappa == pytest.approx(0.2099, abs=5e-4)
    # The per-item agreement of the example's second row: (4 + 36 + 16 + 4 - 14) / 182.
    assert 1 - (flip_rate(FLEISS_EXAMPLE[1]) or 0) == pytest.approx(46 / 182)


def _kappa_from_definition(table: list[list[int]]) -> float:
    """Fleiss' formula written out again, the long way, as an independent check."""
    n = sum(table[0])
    big_n = len(table)
    p_i = [sum(c * (c - 1) for c in row) / (n * (n - 1)) for row in table]
    p_j = [sum(row[j] for row in table) / (big_n * n) for j in range(len(table[0]))]
    p_bar = sum(p_i) / big_n
    p_e = sum(p * p for p in p_j)
    return (p_bar - p_e) / (1 - p_e)


def test_fleiss_kappa_agrees_with_the_formula_on_random_tables() -> None:
    rng = random.Random(7)
    for _ in range(50):
        raters = rng.randint(2, 9)
        table = []
        for _ in range(rng.randint(2, 30)):
            passed = rng.randint(0, raters)
            table.append([passed, raters - passed])
        if len({tuple(r) for r in table}) == 1 and min(table[0]) == 0:
            continue  # one category only: undefined
        assert fleiss_kappa(table) == pytest.approx(_kappa_from_definition(table))


def test_perfect_repeats_give_kappa_one_and_no_flips() -> None:
    table = [[5, 0], [0, 5], [5, 0], [0, 5]]
    assert fleiss_kappa(table) == pytest.approx(1.0)
    assert all(flip_rate(row) == 0.0 for row in table)


def test_kappa_is_undefined_for_one_category_or_one_rater() -> None:
    assert fleiss_kappa([[3, 0], [3, 0]]) is None  # chance agreement is 1
    assert fleiss_kappa([[1, 0], [0, 1]]) is None  # one rater per item
    assert fleiss_kappa([]) is None
    with pytest.raises(ValueError, match="same number of ratings"):
        fleiss_kappa([[2, 1], [1, 1]])


def test_coin_flips_have_kappa_near_zero() -> None:
    rng = random.Random(1)
    table = []
    for _ in range(400):
        passed = sum(rng.random() < 0.5 for _ in range(5))
        table.append([passed, 5 - passed])
    kappa = fleiss_kappa(table)
    assert kappa is not None and abs(kappa) < 0.08
    # Two of five repeats against three: 6 of the 10 pairs of repeats disagree.
    assert flip_rate([2, 3]) == pytest.approx(0.6)
    assert flip_rate([1, 1]) == pytest.approx(1.0)
    assert flip_rate([1, 0]) is None  # one repeat cannot flip


def test_wilson_interval_known_values() -> None:
    # 0 of 60: the upper bound is z^2 / (n + z^2) = 3.8415 / 63.8415.
    low, high = wilson_interval(0, 60) or (None, None)
    assert low == 0.0 and high == pytest.approx(3.8415 / 63.8415, abs=1e-4)
    # 60 of 60 mirrors it.
    low, high = wilson_interval(60, 60) or (None, None)
    assert high == pytest.approx(1.0) and low == pytest.approx(60 / 63.8415, abs=1e-4)
    # 50 of 100: 0.5 +- 0.0979 (centre 0.5 exactly).
    low, high = wilson_interval(50, 100) or (None, None)
    assert (low, high) == (pytest.approx(0.4038, abs=1e-4), pytest.approx(0.5962, abs=1e-4))
    assert wilson_interval(0, 0) is None


def test_bootstrap_interval_covers_the_mean_and_is_reproducible() -> None:
    values = [0.0] * 30 + [1.0] * 10
    interval = mean_interval(values)
    assert interval is not None
    assert interval[0] < 0.25 < interval[1]
    assert mean_interval(values) == interval  # seeded
    assert mean_interval([0.5, 0.5]) == (0.5, 0.5)
    assert mean_interval([]) is None
