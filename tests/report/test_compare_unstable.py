"""Compare: a case that flips only through unstable judge verdicts is counted apart,
never a regression (or an improvement) by itself."""

from __future__ import annotations

from typing import Any

from assay.core.results import CaseResult, EvalResult, MetricResult, Status
from assay.report.compare import Change, compare_results

JUDGED = "final_response_match_v2"
MATCH = "response_match_score"


def judged(passed: bool, unstable: bool | None) -> MetricResult:
    details: dict[str, Any] = {}
    if unstable is not None:
        split = (
            {"pass": 3, "fail": 2}
            if unstable
            else ({"pass": 5, "fail": 0} if passed else {"pass": 0, "fail": 5})
        )
        details = {
            "sample_split": split,
            "unstable": unstable,
            "unstable_invocations": int(unstable),
        }
    status = Status.PASSED if passed else Status.FAILED
    return MetricResult(JUDGED, 1.0 if passed else 0.0, 0.8, status, details=details)


def lexical(score: float) -> MetricResult:
    return MetricResult(MATCH, score, 0.5, Status.PASSED if score >= 0.5 else Status.FAILED)


def case(case_id: str, *metrics: MetricResult) -> CaseResult:
    statuses = [m.status for m in metrics]
    status = Status.PASSED if all(s is Status.PASSED for s in statuses) else Status.FAILED
    return CaseResult(case_id, status, metrics={m.name: m for m in metrics}, eval_set_id="set")


def run(run_id: str, *cases: CaseResult) -> EvalResult:
    return EvalResult(summary={}, cases=list(cases), run_id=run_id, metrics=[JUDGED, MATCH])


def test_an_unstable_flip_is_counted_apart_and_is_not_a_regression() -> None:
    base = run(
        "a",
        case("noisy", judged(True, True), lexical(1.0)),  # unstable pass ...
        case("steady", judged(True, False), lexical(1.0)),
        case("shaky-then-sure", judged(False, True), lexical(1.0)),
    )
    other = run(
        "b",
        case("noisy", judged(False, True), lexical(1.0)),  # ... unstable fail
        case("steady", judged(True, False), lexical(1.0)),
        case("shaky-then-sure", judged(True, False), lexical(1.0)),  # was unstable: noise too
    )
    comparison = compare_results(base, other)
    changes = {c.case_id: c.change for c in comparison.cases}
    assert changes == {
        "noisy": Change.UNSTABLE,
        "steady": Change.UNCHANGED,
        "shaky-then-sure": Change.UNSTABLE,
    }
    assert comparison.newly_failing == [] and comparison.newly_passing == []
    assert [c.case_id for c in comparison.unstable_flips] == ["noisy", "shaky-then-sure"]
    assert not comparison.has_regression
    assert comparison.counts()["unstable flip"] == 2
    assert "2 flips of unstable items" in comparison.summary()
    doc = comparison.to_dict()
    assert doc["unstable_flips"] == ["set/noisy", "set/shaky-then-sure"]
    noisy = next(c for c in doc["cases"] if c["case_id"] == "noisy")
    assert noisy["flipped"] == [JUDGED] and noisy["base"]["unstable"] == [JUDGED]


def test_a_stable_judged_flip_or_a_flip_with_another_metric_is_a_regression() -> None:
    base = run(
        "a",
        case("sure", judged(True, False), lexical(1.0)),
        case("two-reasons", judged(True, True), lexical(1.0)),
        case("unsampled", judged(True, None), lexical(1.0)),
    )
    other = run(
        "b",
        case("sure", judged(False, False), lexical(1.0)),
        # the judged flip is noise, but the lexical metric failed as well: a regression
        case("two-reasons", judged(False, True), lexical(0.0)),
        case("unsampled", judged(False, None), lexical(1.0)),
    )
    comparison = compare_results(base, other)
    assert {c.case_id for c in comparison.newly_failing} == {"sure", "two-reasons", "unsampled"}
    assert comparison.unstable_flips == [] and comparison.has_regression


def test_an_unscored_judge_is_not_an_unstable_flip() -> None:
    # Passed (unstably) before, not evaluated now: the judge did not answer, which is
    # not noise between two verdicts.
    base = run("a", case("gone", judged(True, True)))
    missing = MetricResult(JUDGED, None, 0.8, Status.NOT_EVALUATED, explanation="judge down")
    other = run(
        "b", CaseResult("gone", Status.NOT_EVALUATED, metrics={JUDGED: missing}, eval_set_id="set")
    )
    comparison = compare_results(base, other)
    assert [c.change for c in comparison.cases] == [Change.REGRESSED]


def test_the_terminal_lists_unstable_flips_apart() -> None:
    from rich.console import Console

    from assay.report.console_runs import render_comparison

    base = run("a", case("noisy", judged(True, True)), case("sure", judged(True, False)))
    other = run("b", case("noisy", judged(False, True)), case("sure", judged(False, False)))
    console = Console(record=True, width=160)
    render_comparison(compare_results(base, other), console)
    text = console.export_text()
    assert "unstable flip" in text and "1 flip of unstable items" in text
    assert "Regression: " in text  # "sure" regressed: a stable verdict that flipped
    assert "Cases: 1 regressed, 1 unstable flip" in text
