"""Run comparison: case changes (regressions first) and metric deltas beyond noise."""

from __future__ import annotations

import copy
import random

import pytest
from home_runs import home_result

from assay.errors import InputError
from assay.model.results import EvalResult, Status
from assay.report.compare import Change, compare_many, compare_results, paired_interval


def _copy(run_id: str) -> EvalResult:
    result = copy.deepcopy(home_result())
    result.run_id = run_id
    return result


def test_identical_runs_have_no_regression() -> None:
    comparison = compare_results(_copy("a"), _copy("b"))
    assert not comparison.has_regression
    assert {c.change for c in comparison.cases} == {Change.SAME}
    # Wall-clock figures (invocation_duration_v1) differ between reruns; they are
    # informational, never gated, so only the gated metrics must be equal.
    gated = [m for m in comparison.metrics if m.gated]
    assert gated and all(m.delta == 0 and m.ci_low == 0 == m.ci_high for m in gated)
    assert comparison.summary() == "14 cases in common, 0 newly failing, 0 newly passing"


def test_a_case_that_stops_passing_is_listed_first() -> None:
    base, other = _copy("a"), _copy("b")
    case = next(c for c in other.cases if c.case_id == "kitchen_warmer")
    case.status = Status.FAILED
    metric = case.metrics["response_match_score"]
    metric.score, metric.status = 0.3, Status.FAILED
    fixed = next(c for c in other.cases if c.case_id == "energy_today")
    fixed.status = Status.PASSED
    comparison = compare_results(base, other)
    assert comparison.has_regression
    first = comparison.cases[0]
    assert (first.case_id, first.change) == ("kitchen_warmer", Change.REGRESSED)
    assert first.deltas["response_match_score"] == pytest.approx(0.3 - 1.0)
    assert [c.case_id for c in comparison.newly_failing] == ["kitchen_warmer"]
    assert [c.case_id for c in comparison.newly_passing] == ["energy_today"]
    assert first.other.reason == "response drift: response_match_score 0.30 < 0.70"
    doc = comparison.to_dict()
    assert doc["regression"] is True
    assert doc["newly_failing"] == ["home_automation/kitchen_warmer"]


def test_noise_is_not_a_regression_but_a_real_drop_is() -> None:
    rng = random.Random(7)
    base, noisy = _copy("a"), _copy("b")
    # Noise that moves case scores both ways and sums to zero: no real change.
    half = [rng.uniform(0.01, 0.05) for _ in range(len(noisy.cases) // 2)]
    for case, jitter in zip(noisy.cases, half + [-j for j in half], strict=True):
        metric = case.metrics["response_match_score"]
        assert metric.score is not None
        metric.score += jitter
    comparison = compare_results(base, noisy)
    response = next(m for m in comparison.metrics if m.name == "response_match_score")
    assert response.ci_low is not None and response.ci_high is not None
    assert response.ci_low < 0 < response.ci_high
    assert not response.regressed
    dropped = _copy("c")
    for case in dropped.cases:
        metric = case.metrics["response_match_score"]
        assert metric.score is not None
        metric.score -= 0.2
    worse = compare_results(base, dropped)
    response = next(m for m in worse.metrics if m.name == "response_match_score")
    assert response.regressed and response.delta == pytest.approx(-0.2)
    assert worse.has_regression  # the metric alone, even though no status changed
    assert [m.name for m in worse.regressed_metrics] == ["response_match_score"]


def test_runs_without_a_common_case_cannot_be_compared() -> None:
    other = _copy("b")
    for case in other.cases:
        case.eval_set_id = "another_set"
    with pytest.raises(InputError, match="no case in common"):
        compare_results(_copy("a"), other)
    with pytest.raises(InputError, match="at least two runs"):
        compare_many([_copy("a")])


def test_repeated_runs_are_averaged_per_case() -> None:
    base = _copy("a")
    twice = _copy("b")
    second = copy.deepcopy(twice.cases)
    for case in second:
        case.run_index = 1
    flaky = next(c for c in second if c.case_id == "bedroom_evening")
    flaky.status = Status.FAILED
    twice.cases += second
    comparison = compare_results(base, twice)
    delta = next(c for c in comparison.cases if c.case_id == "bedroom_evening")
    assert delta.change is Change.REGRESSED
    assert (delta.other.runs, delta.other.passed_runs) == (2, 1)


def test_paired_interval_large_samples_use_the_normal_approximation() -> None:
    values = [0.1 if i % 2 else -0.1 for i in range(5000)]
    low, high = paired_interval(values) or (0.0, 0.0)
    assert low < 0 < high and high - low < 0.01
    assert paired_interval([]) is None
