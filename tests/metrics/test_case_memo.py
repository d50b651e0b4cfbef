"""The call-diff explanations shared by the trajectory metrics of one case."""

from __future__ import annotations

from assay.core.cases import EvalCase, Step, ToolCall, Turn
from assay.engine.scoring import score_case
from assay.metrics import calldiff
from assay.metrics.case_memo import case_scope, explain_turn
from assay.metrics.trajectory import (
    ToolTrajectoryAvgScore,
    TrajectoryExactMatch,
    TrajectoryPrecision,
    TrajectoryRecall,
)


def _turn(*calls: ToolCall) -> Turn:
    return Turn(steps=[Step(tool_call=c) for c in calls])


def _case() -> EvalCase:
    expected = _turn(ToolCall(name="a", args={"x": 1}), ToolCall(name="b"))
    actual = _turn(ToolCall(name="a", args={"x": 2}))
    return EvalCase(id="c", reference=[expected], actual=[actual])


def test_scores_and_explanations_in_a_case_equal_each_metric_alone(monkeypatch) -> None:
    ignoring = ToolTrajectoryAvgScore(
        ToolTrajectoryAvgScore.options_model.model_validate({"ignore_args": True})
    )
    metrics = [TrajectoryExactMatch(), ignoring, TrajectoryPrecision(), TrajectoryRecall()]
    case = _case()
    alone = [m.score_case(case, case.actual, case.reference) for m in metrics]
    computed = []
    real = calldiff.explain_calls
    monkeypatch.setattr(
        "assay.metrics.case_memo.explain_calls",
        lambda *a: computed.append(a) or real(*a),
    )
    result = score_case(case, case.actual or [], metrics)
    for metric, one in zip(metrics, alone, strict=True):
        shared = result.metrics[metric.name]
        assert (shared.score, shared.explanation) == (one.score, one.explanation)
    # The three default matchers share one diff; the ignore_args matcher has its own,
    # which does not report the differing argument.
    assert len(computed) == 2
    assert "wrong argument" in (result.metrics["trajectory_exact_match"].explanation or "")
    assert result.metrics["tool_trajectory_avg_score"].explanation == "missing call b()"


def test_nothing_is_kept_outside_a_scope_or_after_it(monkeypatch) -> None:
    case = _case()
    expected, actual = case.reference[0], (case.actual or [])[0]  # type: ignore[index]
    calls = []
    real = calldiff.explain_calls
    monkeypatch.setattr(
        "assay.metrics.case_memo.explain_calls", lambda *a: calls.append(a) or real(*a)
    )
    args = (expected.tool_calls(), actual.tool_calls(), calldiff.same_call)
    explain_turn(expected, actual, *args)
    explain_turn(expected, actual, *args)
    assert len(calls) == 2  # no scope: computed each time
    with case_scope():
        first = explain_turn(expected, actual, *args)
        assert explain_turn(expected, actual, *args) == first
    assert len(calls) == 3
    with case_scope():  # a new case starts empty
        explain_turn(expected, actual, *args)
    assert len(calls) == 4
