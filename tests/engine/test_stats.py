from __future__ import annotations

import statistics

from assay.engine.stats import bootstrap_ci, pass_at_k, pass_hat_k


def test_pass_at_k_and_pass_hat_k() -> None:
    assert pass_at_k([False, True, False]) and not pass_hat_k([False, True, False])
    assert pass_hat_k([True, True]) and not pass_at_k([False, False])
    assert not pass_hat_k([])


def test_bootstrap_ci_contains_mean_and_narrows_with_more_data() -> None:
    small = [[float(i % 2)] for i in range(10)]
    large = [[float(i % 2)] for i in range(1000)]
    lo_s, hi_s = bootstrap_ci(small) or (0, 0)
    lo_l, hi_l = bootstrap_ci(large) or (0, 0)
    assert lo_s <= 0.5 <= hi_s and lo_l <= 0.5 <= hi_l
    assert (hi_l - lo_l) < (hi_s - lo_s)
    # ~ normal approximation: 1.96 * sd / sqrt(n) ≈ 0.031 for n=1000, p=0.5
    assert 0.04 < hi_l - lo_l < 0.08


def test_bootstrap_is_deterministic_and_handles_constant_and_empty() -> None:
    groups = [[0.2, 0.4], [0.9], [0.5, 0.5, 0.6]]
    assert bootstrap_ci(groups) == bootstrap_ci(groups)
    assert bootstrap_ci([[1.0], [1.0]]) == (1.0, 1.0)
    assert bootstrap_ci([]) is None and bootstrap_ci([[]]) is None
    lo, hi = bootstrap_ci(groups) or (0, 0)
    pooled = statistics.fmean(v for g in groups for v in g)
    assert lo <= pooled <= hi
