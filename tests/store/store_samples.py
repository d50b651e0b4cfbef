"""Realistic case results for the store tests (shapes the engine produces)."""

from __future__ import annotations

from assay.core import (
    AgentMessage,
    AgentTransfer,
    Blob,
    Chunk,
    Expectation,
    Retrieval,
    Rubric,
    RubricType,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    Usage,
    UserInput,
)
from assay.core.error_types import ErrorType
from assay.core.results import CaseResult, InvocationResult, MetricResult, Score, Status


def weather_turn(index: int, response: str) -> Turn:
    """A tool-using turn: call, response, an intermediate message and the answer."""
    return Turn(
        id=f"inv-{index}",
        user_input=UserInput(text="What's the weather in Paris tomorrow? Umbrella?"),
        steps=[
            Step(tool_call=ToolCall(id="c1", name="get_weather", args={"city": "Paris"})),
            Step(
                tool_response=ToolResponse(
                    id="c1", name="get_weather", response={"output": {"temp_c": 14, "rain": 0.7}}
                )
            ),
            Step(agent_message=AgentMessage(author="weather_agent", text="Checking forecast")),
        ],
        final_response=response,
        latency_s=1.25,
        usage=Usage(input_tokens=120, output_tokens=30),
    )


def weather_result(
    case_id: str = "paris_weather",
    *,
    eval_set_id: str | None = "weather",
    run_index: int = 0,
    status: Status = Status.FAILED,
) -> CaseResult:
    """Two invocations scored by a trajectory, a lexical and a judged metric."""
    invocations = [
        InvocationResult(
            index=i,
            invocation_id=f"inv-{i}",
            actual=weather_turn(i, "14°C and a 70% chance of rain: take an umbrella."),
            expected=weather_turn(i, "Tomorrow: 14°C, likely rain. Bring an umbrella."),
            scores={
                "tool_trajectory_avg_score": Score(1.0),
                "response_match_score": Score(0.42),
                "final_response_match_v2": Score(1.0, "The answers agree.", {"votes": [1, 1, 0]}),
            },
        )
        for i in range(2)
    ]
    metrics = {
        "tool_trajectory_avg_score": MetricResult(
            "tool_trajectory_avg_score", 1.0, 1.0, Status.PASSED,
            per_invocation=[Score(1.0), Score(1.0)],
        ),
        "response_match_score": MetricResult(
            "response_match_score", 0.42, 0.8, Status.FAILED,
            per_invocation=[Score(0.42), Score(0.42)],
        ),
        "final_response_match_v2": MetricResult(
            "final_response_match_v2", 1.0, 0.5, Status.PASSED, "2 of 3 samples agree",
            [Score(1.0), Score(1.0)], {"self_agreement": 0.67},
        ),
    }  # fmt: skip
    return CaseResult(
        case_id=case_id,
        status=status,
        metrics=metrics,
        invocations=invocations,
        run_index=run_index,
        latency_s=2.5,
        eval_set_id=eval_set_id,
    )


def row_result(index: int, *, status: Status = Status.PASSED, run_index: int = 0) -> CaseResult:
    """A Vertex-style dataset row: one invocation, informational metrics."""
    actual = Turn(
        user_input=UserInput(text=f"question {index}"),
        steps=[Step(tool_call=ToolCall(name="search", args={"q": f"q{index}"}))],
        final_response=f"answer {index}",
    )
    expected = actual.model_copy(update={"final_response": f"reference {index}"})
    score = 1.0 if status is Status.PASSED else 0.0
    return CaseResult(
        case_id=f"row-{index}",
        status=status,
        metrics={
            "trajectory_exact_match": MetricResult(
                "trajectory_exact_match", score, 1.0, status, per_invocation=[Score(score)]
            ),
            "rouge_l_sum": MetricResult(
                "rouge_l_sum", 0.5, None, None, per_invocation=[Score(0.5)]
            ),
        },
        invocations=[
            InvocationResult(
                0,
                None,
                actual,
                expected,
                {"trajectory_exact_match": Score(score), "rouge_l_sum": Score(0.5)},
            )
        ],
        run_index=run_index,
        eval_set_id="rows",
    )


def error_result(case_id: str = "broken", *, eval_set_id: str = "weather") -> CaseResult:
    """A case whose agent run failed: no scores, CES error type kept."""
    return CaseResult(
        case_id=case_id,
        status=Status.NOT_EVALUATED,
        metrics={
            "response_match_score": MetricResult(
                "response_match_score", None, 0.8, Status.NOT_EVALUATED, "agent run failed"
            )
        },
        failure=True,
        error="TimeoutError: agent did not answer within 300s",
        error_type=ErrorType.RUNTIME_FAILURE,
        eval_set_id=eval_set_id,
    )


def every_step_result() -> CaseResult:
    """Every step kind, blobs, expectations, rubrics (an enum) and odd details."""
    turn = Turn(
        id="t1",
        user_input=UserInput(
            text="turn on the lights",
            blobs=[Blob(mime_type="image/png", data="iVBORw0KGgo=")],
            variables={"room": "kitchen", "unset": None},
        ),
        steps=[
            Step(tool_call=ToolCall(name="lights", args={"on": True, "level": None})),
            Step(tool_response=ToolResponse(name="lights", response={"error": "busy"})),
            Step(agent_transfer=AgentTransfer(target_agent="home_agent")),
            Step(variables_update={"lights": "on"}),
            Step(retrieval=Retrieval(chunks=[Chunk(doc_uri="kb://1", content="Lights...")])),
        ],
        final_response="Done.",
        expectations=[Expectation(agent_transfer="home_agent")],
        rubrics=[Rubric(id="r1", text="Confirms the action", type=RubricType.TOOL_USE_QUALITY)],
    )
    return CaseResult(
        case_id="every_step",
        status=Status.PASSED,
        metrics={
            "rubric_based_tool_use_quality_v1": MetricResult(
                "rubric_based_tool_use_quality_v1",
                1.0,
                0.8,
                Status.PASSED,
                details={"rubrics": {"r1": 1.0}, "nested": [{"a": None}], "empty": {}},
            )
        },
        invocations=[InvocationResult(0, "t1", turn, None, {})],
        eval_set_id=None,
    )
