"""Hand-built results covering every status, shared by the report writer tests."""

from __future__ import annotations

from assay.core.cases import Step, ToolCall, ToolResponse, Turn, UserInput
from assay.core.error_types import ErrorType
from assay.core.results import (
    CaseResult,
    EvalResult,
    InvocationResult,
    MetricResult,
    Score,
    Status,
)


def _turn(text: str, response: str | None, calls: list[ToolCall], tid: str | None = None) -> Turn:
    steps: list[Step] = []
    for call in calls:
        steps.append(Step(tool_call=call))
        steps.append(Step(tool_response=ToolResponse(name=call.name, response="done")))
    return Turn(id=tid, user_input=UserInput(text=text), steps=steps, final_response=response)


def passed_case() -> CaseResult:
    call = ToolCall(name="set_device_info", args={"device_id": "device_2", "status": "OFF"})
    actual = [
        _turn("Turn off device_2.", "Done, device_2 is off.", [call], "inv-1"),
        _turn("Thanks", "You're welcome.", [], "inv-2"),
    ]
    expected = [
        _turn("Turn off device_2.", "device_2 is now off.", [call], "inv-1"),
        _turn("Thanks", "You're welcome!", [], "inv-2"),
    ]
    traj = [Score(1.0), Score(1.0)]
    resp = [Score(0.75), Score(1.0)]
    count = [Score(1.0), Score(0.0)]
    metrics = {
        "tool_trajectory_avg_score": MetricResult(
            "tool_trajectory_avg_score", 1.0, 1.0, Status.PASSED, per_invocation=traj
        ),
        "response_match_score": MetricResult(
            "response_match_score", 0.875, 0.8, Status.PASSED, per_invocation=resp
        ),
        "tool_call_count": MetricResult("tool_call_count", 1.0, None, None, per_invocation=count),
    }
    invocations = [
        InvocationResult(
            i,
            actual[i].id,
            actual[i],
            expected[i],
            {
                "tool_trajectory_avg_score": traj[i],
                "response_match_score": resp[i],
                "tool_call_count": count[i],
            },
        )
        for i in range(2)
    ]
    return CaseResult(
        "turn_off", Status.PASSED, metrics, invocations, latency_s=0.25, eval_set_id="home"
    )


def failed_case() -> CaseResult:
    actual = _turn("What is the temperature?", "It is warm.", [], None)
    expected = _turn("What is the temperature?", "It is 21 degrees in the living room.", [], "t-1")
    metrics = {
        "tool_trajectory_avg_score": MetricResult(
            "tool_trajectory_avg_score", 1.0, 1.0, Status.PASSED, per_invocation=[Score(1.0)]
        ),
        "response_match_score": MetricResult(
            "response_match_score",
            0.4,
            0.8,
            Status.FAILED,
            explanation="rouge1 below threshold",
            per_invocation=[Score(0.4)],
        ),
    }
    inv = InvocationResult(
        0, "t-1", actual, expected, {k: m.per_invocation[0] for k, m in metrics.items()}
    )
    return CaseResult("temperature", Status.FAILED, metrics, [inv], eval_set_id="home")


def not_evaluated_case() -> CaseResult:
    reason = "no agent given and the case has no recorded response"
    metrics = {
        name: MetricResult(name, None, threshold, Status.NOT_EVALUATED, explanation=reason)
        for name, threshold in (("tool_trajectory_avg_score", 1.0), ("response_match_score", 0.8))
    }
    return CaseResult("no_response", Status.NOT_EVALUATED, metrics, [], eval_set_id="other")


def crashed_case() -> CaseResult:
    reason = "agent raised ValueError: boom"
    metrics = {
        name: MetricResult(name, None, threshold, Status.NOT_EVALUATED, explanation=reason)
        for name, threshold in (("tool_trajectory_avg_score", 1.0), ("response_match_score", 0.8))
    }
    expected = _turn("Break please", "ok", [], "b-1")
    inv = InvocationResult(0, "b-1", None, expected, {})
    return CaseResult(
        "crash",
        Status.FAILED,
        metrics,
        [inv],
        latency_s=0.5,
        failure=True,
        error=reason,
        error_type=ErrorType.RUNTIME_FAILURE,
        eval_set_id="home",
    )


def sample_result() -> EvalResult:
    cases = [passed_case(), failed_case(), not_evaluated_case(), crashed_case()]
    rows = [
        {
            "eval_set_id": "home",
            "case_id": "turn_off",
            "run": 0,
            "prompt": "Turn off device_2.",
            "response": "Done, device_2 is off.",
            "predicted_trajectory": [{"tool_name": "set_device_info", "tool_input": {"a": 1}}],
            "response_match_score/score": 0.75,
            "latency_in_seconds": 0.1,
            "failure": 0,
        },
        {
            "eval_set_id": "home",
            "case_id": "temperature",
            "run": 0,
            "prompt": 'He said "hi", then left',
            "response": "line one\nline two",
            "response_match_score/score": 0.4,
            "response_match_score/explanation": "rouge1 below threshold",
            "latency_in_seconds": float("nan"),
            "failure": 0,
        },
        {"eval_set_id": "other", "case_id": "no_response", "run": 0, "error": "no agent"},
    ]
    summary = {
        "row_count": 3,
        "response_match_score/mean": 0.575,
        "response_match_score/std": 0.247,
        "passed": 1,
        "failed": 2,
        "not_evaluated": 1,
    }
    return EvalResult(
        summary=summary,
        rows=rows,
        cases=cases,
        run_id="run-123",
        metrics=["tool_trajectory_avg_score", "response_match_score", "tool_call_count"],
    )
