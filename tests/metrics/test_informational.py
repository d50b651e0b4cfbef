"""Informational metrics: reported values that never pass or fail a case."""

from __future__ import annotations

import pytest

from assay.core.cases import EvalCase, Step, ToolCall, ToolResponse, Turn, Usage
from assay.core.results import Status
from assay.engine import score_case
from assay.errors import ConfigError
from assay.metrics.informational import InvocationLatency, TokenUsage, ToolCallCount
from assay.metrics.registry import build_metric


def _calls(*names: str) -> list[Step]:
    steps = []
    for name in names:
        steps.append(Step(tool_call=ToolCall(name=name, args={"q": 1})))
        steps.append(Step(tool_response=ToolResponse(name=name, response={"output": "ok"})))
    return steps


def test_tool_call_count_counts_calls_not_responses() -> None:
    metric = ToolCallCount()
    case = EvalCase(id="c")
    assert metric.score_invocation(Turn(steps=_calls("a", "b", "a")), None, case).value == 3.0
    assert metric.score_invocation(Turn(final_response="hi"), None, case).value == 0.0


def test_latency_reads_the_turn_and_is_no_score_when_unrecorded() -> None:
    metric = InvocationLatency()
    case = EvalCase(id="c")
    assert metric.score_invocation(Turn(latency_s=1.25), None, case).value == 1.25
    missing = metric.score_invocation(Turn(), None, case)
    assert missing.value is None
    assert missing.explanation == "no latency recorded for this invocation"


def test_token_usage_sums_input_and_output_with_both_in_details() -> None:
    metric = TokenUsage()
    score = metric.score_invocation(
        Turn(usage=Usage(input_tokens=120, output_tokens=30)), None, EvalCase(id="c")
    )
    assert score.value == 150.0
    assert score.details == {"input_tokens": 120, "output_tokens": 30}
    assert metric.row_columns(score)["token_usage/input_tokens"] == 120
    assert metric.score_invocation(Turn(), None, EvalCase(id="c")).value is None


def test_case_value_is_the_mean_per_invocation_without_status() -> None:
    metric = build_metric("tool_call_count", {})
    turns = [Turn(steps=_calls("a")), Turn(steps=_calls("a", "b", "c"))]
    result = metric.score_case(EvalCase(id="c"), turns, [None, None])
    assert result.score == 2.0
    assert result.status is None
    assert metric.threshold is None


@pytest.mark.parametrize("name", ["tool_call_count", "invocation_latency", "token_usage"])
def test_a_threshold_is_rejected(name: str) -> None:
    with pytest.raises(ConfigError, match="no threshold"):
        build_metric(name, 1.0)
    with pytest.raises(ConfigError, match="no threshold"):
        build_metric(name, {"threshold": 3})


def test_informational_metrics_do_not_decide_the_case_status() -> None:
    case = EvalCase(
        id="c",
        reference=[Turn(final_response="the answer is four")],
    )
    actual = [Turn(final_response="The answer is four", latency_s=0.3, steps=_calls("calc"))]
    metrics = [
        build_metric("response_match_score"),
        build_metric("tool_call_count"),
        build_metric("invocation_latency"),
        build_metric("token_usage"),  # no usage recorded: no score, still not a failure
    ]
    result = score_case(case, actual, metrics)
    assert result.status is Status.PASSED
    assert result.metrics["tool_call_count"].score == 1.0
    assert result.metrics["token_usage"].score is None
    assert result.metrics["token_usage"].status is None
