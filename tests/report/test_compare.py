"""Run comparison: case changes (regressions first) and metric deltas beyond noise."""

from __future__ import annotations

import copy
import json
import math
import random

import pytest
from home_runs import home_result
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.core.results import EvalResult, Status
from assay.errors import InputError
from assay.metrics.registry import metric_names, metric_traits
from assay.report.compare import (
    DIFF_MAX_TOKENS,
    EQUAL_WITHIN,
    Change,
    compare_many,
    compare_results,
    paired_interval,
    word_diff,
)


def _copy(run_id: str) -> EvalResult:
    result = copy.deepcopy(home_result())
    result.run_id = run_id
    return result


def test_identical_runs_have_no_regression() -> None:
    comparison = compare_results(_copy("a"), _copy("b"))
    assert not comparison.has_regression
    assert {c.change for c in comparison.cases} == {Change.UNCHANGED}
    assert len(comparison.unchanged) == 14 and comparison.counts()["unchanged"] == 14
    # Wall-clock figures (invocation_duration_v1) differ between reruns; they are
    # informational, never gated, so only the gated metrics must be equal.
    gated = [m for m in comparison.metrics if m.gated]
    assert gated and all(m.delta == 0 and m.ci_low == 0 == m.ci_high for m in gated)
    assert comparison.summary() == (
        "14 cases in common, 14 unchanged, 0 newly failing, 0 newly passing"
    )


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


def _scores(result: EvalResult, name: str, change: float) -> None:
    for case in result.cases:
        metric = case.metrics[name]
        assert metric.score is not None
        metric.score += change


def test_informational_metrics_never_make_a_case_better_or_worse() -> None:
    base, slower = _copy("a"), _copy("b")
    for case in slower.cases:
        for name in ("invocation_duration_v1", "tool_call_count_v1"):
            metric = case.metrics[name]
            metric.score = (metric.score or 0.0) + 1.5
    comparison = compare_results(base, slower)
    assert {c.change for c in comparison.cases} == {Change.UNCHANGED}
    assert not comparison.has_regression
    duration = next(m for m in comparison.metrics if m.name == "invocation_duration_v1")
    # Shown, with its delta, but never gating: 1.5 s slower everywhere is no regression.
    assert duration.delta == pytest.approx(1.5) and duration.informational
    assert not duration.gated and duration.verdict == "informational"
    assert duration.to_dict()["better"] == "lower"
    assert all(c.deltas["invocation_duration_v1"] == pytest.approx(1.5) for c in comparison.cases)
    assert all(c.better == () == c.worse for c in comparison.cases)


def test_the_registry_declares_direction_and_informational_for_every_metric() -> None:
    for name in metric_names():
        traits = metric_traits(name)
        assert traits is not None, name
        # Counts, tokens and seconds are informational and lower is better; every
        # gating score is higher-is-better.
        assert traits.higher_is_better is not traits.informational, name
    duration = metric_traits("invocation_duration_v1")
    assert duration is not None and duration.direction == "lower" and duration.informational
    assert metric_traits("no_such_metric_anywhere") is None


def test_a_gating_lower_is_better_metric_follows_its_direction() -> None:
    """A custom gating metric declared lower-is-better (as a plugin may) moves the case
    `better` when its score goes down."""
    from assay.metrics import registry
    from assay.metrics.base import Metric

    class Errors(Metric):
        name = "test_error_rate"
        higher_is_better = False

    registry._REGISTRY["test_error_rate"] = Errors
    try:
        base, other = _copy("a"), _copy("b")
        for run, score in ((base, 0.4), (other, 0.1)):
            for case in run.cases:
                metric = copy.deepcopy(case.metrics["response_match_score"])
                metric.name, metric.score = "test_error_rate", score
                case.metrics["test_error_rate"] = metric
        comparison = compare_results(base, other)
    finally:
        del registry._REGISTRY["test_error_rate"]
    errors = next(m for m in comparison.metrics if m.name == "test_error_rate")
    assert errors.delta == pytest.approx(-0.3) and errors.improved and not errors.regressed
    assert {c.change for c in comparison.cases} == {Change.BETTER}
    assert all(c.better == ("test_error_rate",) for c in comparison.cases)


def test_float_noise_is_equal_and_reported_as_zero() -> None:
    base, noisy = _copy("a"), _copy("b")
    _scores(noisy, "response_match_score", -2.4e-17)
    _scores(noisy, "trajectory_recall", EQUAL_WITHIN / 2)
    comparison = compare_results(base, noisy)
    assert {c.change for c in comparison.cases} == {Change.UNCHANGED}
    for case in comparison.cases:
        for name in ("response_match_score", "trajectory_recall"):
            assert case.deltas[name] == 0 and math.copysign(1, case.deltas[name]) == 1
    response = next(m for m in comparison.metrics if m.name == "response_match_score")
    assert response.delta == 0 and (response.ci_low, response.ci_high) == (0, 0)
    doc = comparison.to_dict()
    text = json.dumps([[c["deltas"] for c in doc["cases"]], doc["metrics"]])
    assert "-0.0" not in text and "e-17" not in text and "e-10" not in text
    # Just past the tolerance it is a change.
    moved = _copy("c")
    _scores(moved, "response_match_score", 1e-6)
    assert {c.change for c in compare_results(base, moved).cases} == {Change.BETTER}


def test_three_of_fourteen_cases_losing_a_call_is_a_regression_beyond_noise() -> None:
    """The interval of the issue's run: 11 unchanged cases and 3 that drop from 1 to 0."""
    differences = [-1.0] * 3 + [0.0] * 11
    low, high = paired_interval(differences) or (0.0, 0.0)
    assert low < high < 0  # excludes 0: the percentile bootstrap ended exactly at 0
    base, other = _copy("a"), _copy("b")
    lost = ["turn_off_device_by_id", "list_bedroom_devices", "kitchen_light_status"]
    for case in other.cases:
        if case.case_id in lost:
            case.status = Status.FAILED
            metric = case.metrics["tool_trajectory_avg_score"]
            metric.score, metric.status = 0.0, Status.FAILED
    comparison = compare_results(base, other)
    trajectory = next(m for m in comparison.metrics if m.name == "tool_trajectory_avg_score")
    assert trajectory.delta == pytest.approx(-3 / 14) and trajectory.regressed
    assert trajectory.ci_high is not None and trajectory.ci_high < 0
    assert comparison.counts()["regressed"] == 3 and len(comparison.unchanged) == 11


def _scipy_interval(differences: list[float], seed: int) -> tuple[float, float]:
    np = pytest.importorskip("numpy")
    stats = pytest.importorskip("scipy.stats")
    before = np.zeros(len(differences))
    after = np.asarray(differences)

    def mean_change(a: object, b: object, axis: int = -1) -> object:
        return np.mean(np.asarray(b) - np.asarray(a), axis=axis)

    found = stats.bootstrap(
        (before, after), mean_change, paired=True, vectorized=True, random_state=seed
    ).confidence_interval
    return float(found.low), float(found.high)


@pytest.mark.parametrize("kind", ["lost calls", "mixed", "normal", "skewed", "noise"])
def test_the_interval_agrees_with_scipys_paired_bootstrap(kind: str) -> None:
    rng = random.Random(kind)
    if kind == "lost calls":
        data = [-1.0] * 3 + [0.0] * 11
    elif kind == "mixed":
        data = [-1.0] * 5 + [1.0] * 2 + [0.0] * 13
    elif kind == "normal":
        data = [rng.gauss(-0.05, 0.2) for _ in range(40)]
    elif kind == "skewed":
        data = [rng.expovariate(5.0) - 0.1 for _ in range(60)]
    else:
        data = [rng.uniform(-0.05, 0.05) for _ in range(25)]
    ours = paired_interval(data)
    assert ours is not None
    theirs = _scipy_interval(data, seed=1)
    # Different random resamples: the bounds agree to a small share of the width, and
    # both say the same about zero.
    width = theirs[1] - theirs[0]
    assert ours[0] == pytest.approx(theirs[0], abs=0.08 * width), (ours, theirs)
    assert ours[1] == pytest.approx(theirs[1], abs=0.08 * width), (ours, theirs)
    assert (ours[1] < 0) == (theirs[1] < 0) and (ours[0] > 0) == (theirs[0] > 0)


def test_word_diff_of_the_final_responses() -> None:
    before = "OK, the Bedroom Lamp (device_2) is now off."
    after = "OK, the Bedroom Fan (device_5) is now off."
    segments = word_diff(before, after)
    assert segments == [
        ("equal", "OK, the Bedroom "),
        ("delete", "Lamp (device_2)"),
        ("insert", "Fan (device_5)"),
        ("equal", " is now off."),
    ]
    assert "".join(t for op, t in segments if op != "insert") == before
    assert "".join(t for op, t in segments if op != "delete") == after
    assert word_diff(before, before) is None
    assert word_diff(None, "hello") == [("insert", "hello")]
    # Past DIFF_MAX_TOKENS words and spaces the texts are one delete and one insert.
    long_a, long_b = "a " * DIFF_MAX_TOKENS, "b " * DIFF_MAX_TOKENS
    assert word_diff(long_a, long_b) == [("delete", long_a), ("insert", long_b)]
    base, other = _copy("a"), _copy("b")
    case = next(c for c in other.cases if c.case_id == "turn_off_device_by_id")
    turn = case.invocations[0].actual
    assert turn is not None
    case.invocations[0].actual = turn.model_copy(update={"final_response": after})
    comparison = compare_results(base, other)
    changed = next(c for c in comparison.cases if c.case_id == "turn_off_device_by_id")
    assert changed.base.response == before and changed.other.response == after
    doc = changed.to_dict()
    assert doc["response_diff"][1] == ["delete", "Lamp (device_2)"]
    assert all(c.response_diff is None for c in comparison.cases if c is not changed)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False),
        min_size=1,
        max_size=40,
    )
)
def test_the_interval_is_finite_ordered_and_inside_the_data(differences: list[float]) -> None:
    found = paired_interval(differences, seed=3)
    assert found is not None
    low, high = found
    assert math.isfinite(low) and math.isfinite(high) and low <= high
    assert min(differences) - EQUAL_WITHIN <= low and high <= max(differences) + EQUAL_WITHIN
    assert found == paired_interval(differences, seed=3)  # the seed makes it repeatable


_WORD = st.sampled_from(["the", "lamp", "fan", "is", "on", "off", "22°C", "", "\n", "  "])


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORD, max_size=30), st.lists(_WORD, max_size=30))
def test_the_word_diff_gives_back_both_texts(before: list[str], after: list[str]) -> None:
    a, b = " ".join(before), " ".join(after)
    segments = word_diff(a, b)
    if a == b:
        assert segments is None
        return
    assert segments is not None
    assert "".join(t for op, t in segments if op != "insert") == a
    assert "".join(t for op, t in segments if op != "delete") == b
    assert all(op in ("equal", "delete", "insert") and text for op, text in segments)


def test_a_metric_scored_in_one_run_only_is_not_paired() -> None:
    base, other = _copy("a"), _copy("b")
    for case in other.cases:
        metric = copy.deepcopy(case.metrics["response_match_score"])
        metric.name = "exact_match"
        case.metrics["exact_match"] = metric
    comparison = compare_results(base, other)
    exact = next(m for m in comparison.metrics if m.name == "exact_match")
    assert (exact.paired, exact.delta, exact.ci_low, exact.verdict) == (0, None, None, "not paired")
    assert not comparison.has_regression and len(comparison.unchanged) == 14
