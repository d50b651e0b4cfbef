"""The format-neutral model (SPEC §1) and the result shapes and status rules (SPEC §3)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from assay.core.cases import (
    STEP_KINDS,
    AgentMessage,
    AgentTransfer,
    Chunk,
    EvalCase,
    EvalSet,
    Expectation,
    Persona,
    Retrieval,
    Rubric,
    RubricType,
    Scenario,
    ScenarioExpectation,
    Step,
    ToolCall,
    ToolExpectation,
    ToolResponse,
    Turn,
    UserGoalBehavior,
    UserInput,
)
from assay.core.results import (
    CaseResult,
    EvalResult,
    InvocationResult,
    MetricResult,
    Score,
    Status,
    combine_statuses,
    status_for,
)
from assay.metrics.base import Metric

# ----------------------------------------------------------------------------- Step


def _one_of_each() -> list[Step]:
    return [
        Step(tool_call=ToolCall(id="c1", name="lookup", args={"q": "x"})),
        Step(tool_response=ToolResponse(id="c1", name="lookup", response={"output": 3})),
        Step(agent_message=AgentMessage(author="helper", text="thinking")),
        Step(agent_transfer=AgentTransfer(target_agent="billing")),
        Step(variables_update={"paid": True}),
        Step(retrieval=Retrieval(chunks=[Chunk(doc_uri="a", content="A"), Chunk(content="B")])),
    ]


def test_each_step_kind_is_reported_by_kind() -> None:
    assert [s.kind for s in _one_of_each()] == list(STEP_KINDS)


def test_step_with_no_kind_is_rejected_naming_the_kinds() -> None:
    with pytest.raises(ValidationError) as info:
        Step()
    text = str(info.value)
    assert "exactly one of" in text
    for kind in STEP_KINDS:
        assert kind in text
    assert "none" in text


def test_step_with_two_kinds_is_rejected_naming_what_was_set() -> None:
    with pytest.raises(ValidationError) as info:
        Step(
            tool_call=ToolCall(name="a"),
            agent_transfer=AgentTransfer(target_agent="b"),
        )
    text = str(info.value)
    assert "exactly one of" in text
    assert "['tool_call', 'agent_transfer']" in text


def test_step_from_dict_with_two_kinds_is_rejected() -> None:
    with pytest.raises(ValidationError, match="exactly one of"):
        Step.model_validate(
            {"tool_call": {"name": "a"}, "tool_response": {"name": "a", "response": 1}}
        )


def test_empty_variables_update_is_still_a_step() -> None:
    # `{}` is set (not None): an update of nothing is a step of its own kind.
    assert Step(variables_update={}).kind == "variables_update"


# ----------------------------------------------------------------------------- UserInput


def test_user_input_from_plain_string() -> None:
    assert UserInput.model_validate("hello") == UserInput(text="hello")
    turn = Turn.model_validate({"user_input": "book a table"})
    assert turn.user_input.text == "book a table"
    assert turn.user_input.blobs == [] and turn.user_input.tool_responses == []


def test_user_input_object_keeps_other_inputs() -> None:
    ui = UserInput.model_validate(
        {
            "dtmf": "12#",
            "event": "welcome",
            "variables": {"lang": "en"},
            "blobs": [{"mime_type": "image/png", "data": "iVBORw0K"}],
            "tool_responses": [{"name": "client_tool", "response": {"ok": True}}],
        }
    )
    assert ui.text is None and ui.dtmf == "12#" and ui.event == "welcome"
    assert ui.blobs[0].mime_type == "image/png"
    assert ui.tool_responses[0].response == {"ok": True}


def test_user_input_rejects_non_text_scalar() -> None:
    with pytest.raises(ValidationError):
        UserInput.model_validate(42)


# ----------------------------------------------------------------------------- Turn helpers


def test_turn_helpers_pick_steps_in_order() -> None:
    steps = [
        *_one_of_each(),
        Step(tool_call=ToolCall(name="second")),
        Step(retrieval=Retrieval(chunks=[Chunk(doc_uri="c")])),
        Step(agent_message=AgentMessage(text="done")),
    ]
    turn = Turn(user_input=UserInput(text="q"), steps=steps, final_response="ok")
    assert [c.name for c in turn.tool_calls()] == ["lookup", "second"]
    assert turn.tool_calls()[0].args == {"q": "x"}
    assert [r.response for r in turn.tool_responses()] == [{"output": 3}]
    assert [(m.author, m.text) for m in turn.agent_messages()] == [
        ("helper", "thinking"),
        (None, "done"),
    ]
    assert [(c.doc_uri, c.content) for c in turn.retrieved_chunks()] == [
        ("a", "A"),
        (None, "B"),
        ("c", None),
    ]


def test_turn_helpers_on_empty_turn() -> None:
    turn = Turn()
    assert turn.tool_calls() == []
    assert turn.tool_responses() == []
    assert turn.agent_messages() == []
    assert turn.retrieved_chunks() == []
    assert turn.user_input == UserInput()


# ----------------------------------------------------------------------------- round trip


def _rich_case() -> EvalCase:
    golden = [
        Turn(
            id="t1",
            user_input=UserInput(text="I want to pay my bill", variables={"account": "42"}),
            steps=[
                Step(tool_call=ToolCall(id="c1", name="get_bill", args={"account": "42"})),
                Step(
                    tool_response=ToolResponse(
                        id="c1", name="get_bill", response={"output": {"amount": 12.5}}
                    )
                ),
                Step(variables_update={"bill": 12.5}),
                Step(agent_transfer=AgentTransfer(target_agent="payments")),
                Step(retrieval=Retrieval(chunks=[Chunk(doc_uri="kb://billing", content="...")])),
            ],
            final_response="Your bill is 12.50.",
            latency_s=1.25,
            usage={"input_tokens": 120, "output_tokens": 30},
            expectations=[
                Expectation(note="looks the bill up", tool_call=ToolCall(name="get_bill")),
                Expectation(agent_response="Your bill is 12.50."),
                Expectation(agent_transfer="payments"),
                Expectation(updated_variables={"bill": 12.5}),
                Expectation(
                    mock_tool_response=ToolResponse(name="get_bill", response={"amount": 1})
                ),
            ],
            rubrics=[Rubric(id="r1", text="polite", type=RubricType.FINAL_RESPONSE_QUALITY)],
            created_at=1700000000.5,
        ),
        Turn(id="t2", user_input=UserInput(text="thanks"), error="agent raised"),
    ]
    return EvalCase(
        id="case-1",
        tags=["billing", "smoke"],
        description="pays a bill",
        session_input={"app_name": "bank", "user_id": "u1", "state": {"tier": "gold"}},
        reference=golden,
        rubrics=[Rubric(id="r2", text="uses the tool", type=RubricType.TOOL_USE_QUALITY)],
        expected_response="Your bill is 12.50.",
        expected_facts=["amount is 12.50"],
        expected_retrieved_context=[Chunk(doc_uri="kb://billing")],
        guidelines={"tone": ["be polite"], "safety": ["no card numbers"]},
        final_session_state={"paid": True},
        created_at=1700000000.0,
        metadata={"adk:extra": {"k": [1, 2]}},
    )


def _scenario_case(persona: Persona | str) -> EvalCase:
    return EvalCase(
        id="scenario-1",
        scenario=Scenario(
            task="book a table for 12",
            starting_prompt="hi",
            conversation_plan="ask for a table, insist on 12 people",
            user_facts=[{"name": "party_size", "value": "12"}],
            persona=persona,
            max_turns=8,
            rubrics=[Rubric(id="r", text="declines politely")],
            expectations=[
                ScenarioExpectation(
                    tool_expectation=ToolExpectation(
                        expected_tool_call=ToolCall(name="check", args={"size": 12.0}),
                        mock_tool_response=ToolResponse(name="check", response={"free": 0}),
                    )
                ),
                ScenarioExpectation(note="refuses", agent_response="We cannot seat 12."),
            ],
            variable_overrides={"max_party": 8},
            user_goal_behavior=UserGoalBehavior.USER_GOAL_REJECTED,
        ),
    )


def _json_round_trip(case: EvalCase) -> EvalCase:
    text = json.dumps(case.model_dump(mode="json"))
    return EvalCase.model_validate(json.loads(text))


def test_rich_golden_case_survives_json_round_trip() -> None:
    case = _rich_case()
    back = _json_round_trip(case)
    assert back == case
    # Spot-check values whose types JSON could have changed.
    assert back.reference is not None
    assert back.reference[0].steps[1].tool_response == ToolResponse(
        id="c1", name="get_bill", response={"output": {"amount": 12.5}}
    )
    assert back.reference[0].usage is not None and back.reference[0].usage.output_tokens == 30
    assert back.reference[0].rubrics[0].type is RubricType.FINAL_RESPONSE_QUALITY
    assert back.reference[0].expectations[0].note == "looks the bill up"
    assert back.guidelines == {"tone": ["be polite"], "safety": ["no card numbers"]}


@pytest.mark.parametrize(
    "persona",
    [
        Persona(id="p1", display_name="Grumpy", description="short answers", personality="terse"),
        "NOVICE",
    ],
)
def test_scenario_case_survives_json_round_trip(persona: Persona | str) -> None:
    case = _scenario_case(persona)
    back = _json_round_trip(case)
    assert back == case
    assert back.scenario is not None
    assert back.scenario.persona == persona
    assert type(back.scenario.persona) is type(persona)
    assert back.scenario.user_goal_behavior is UserGoalBehavior.USER_GOAL_REJECTED
    assert back.scenario.initiator.value == "USER"


def test_scenario_defaults() -> None:
    scenario = Scenario(task="t")
    assert scenario.user_goal_behavior is UserGoalBehavior.USER_GOAL_SATISFIED
    assert scenario.initiator.value == "USER"
    assert scenario.persona is None


def test_eval_set_round_trip_and_user_turns() -> None:
    evalset = EvalSet(id="s", name="n", cases=[_rich_case(), _scenario_case("EXPERT")])
    back = EvalSet.model_validate_json(evalset.model_dump_json())
    assert back == evalset
    assert [t.id for t in back.cases[0].user_turns()] == ["t1", "t2"]
    assert back.cases[1].user_turns() == []
    actual_only = EvalCase(id="a", actual=[Turn(id="x")])
    assert [t.id for t in actual_only.user_turns()] == ["x"]


@pytest.mark.parametrize(
    ("model", "data"),
    [
        (EvalCase, {"id": "x", "conversation": []}),
        (Turn, {"user_input": "hi", "final_answer": "x"}),
        (ToolCall, {"name": "t", "arguments": {}}),
        (Step, {"tool_call": {"name": "t"}, "kind": "tool_call"}),
        (Scenario, {"task": "t", "persona": {"id": "p", "age": 3}}),
        (EvalSet, {"id": "s", "eval_cases": []}),
        (UserInput, {"text": "hi", "audio": "..."}),
    ],
)
def test_extra_keys_are_forbidden(model: Any, data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        model.model_validate(data)


def test_enum_values_are_checked() -> None:
    # A rubric's type is ADK's free-form designator; the ones metrics select by are enums.
    assert Rubric.model_validate({"id": "r", "text": "t", "type": "STYLE"}).type == "STYLE"
    known = Rubric.model_validate({"id": "r", "text": None, "type": "TOOL_USE_QUALITY"})
    assert known.type is RubricType.TOOL_USE_QUALITY and known.text is None
    with pytest.raises(ValidationError):
        Scenario.model_validate({"task": "t", "user_goal_behavior": "MAYBE"})


# ----------------------------------------------------------------------------- statuses


@pytest.mark.parametrize(
    ("score", "threshold", "status"),
    [
        (0.8, 0.8, Status.PASSED),  # equal to the threshold passes
        (0.9, 0.8, Status.PASSED),
        (0.79, 0.8, Status.FAILED),
        (0.0, 0.0, Status.PASSED),
        (0.0, 1.0, Status.FAILED),
        (None, 0.8, Status.NOT_EVALUATED),
        (None, None, Status.NOT_EVALUATED),
        (0.1, None, Status.PASSED),
    ],
)
def test_status_for(score: float | None, threshold: float | None, status: Status) -> None:
    assert status_for(score, threshold) is status


P, F, N = Status.PASSED, Status.FAILED, Status.NOT_EVALUATED


@pytest.mark.parametrize(
    ("statuses", "combined"),
    [
        ([], N),
        ([P], P),
        ([P, P, P], P),
        ([P, F], F),
        ([P, N], N),  # one passing metric does not hide a not-evaluated one
        ([N, P], N),
        ([N, F, P], F),  # FAILED beats NOT_EVALUATED
        ([F, N], F),
        ([N, N], N),
    ],
)
def test_combine_statuses(statuses: list[Status], combined: Status) -> None:
    assert combine_statuses(statuses) is combined


class _Informational(Metric):
    name = "_test_informational"
    informational = True


class _Gated(Metric):
    name = "_test_gated"
    default_threshold = 0.5


def test_informational_metric_results_carry_no_status() -> None:
    info = _Informational().make_result(0.1, [Score(0.1)])
    gated_fail = _Gated().make_result(0.1, [Score(0.1)])
    gated_pass = _Gated().make_result(0.9, [Score(0.9)])
    assert info.status is None and info.threshold is None
    assert gated_fail.status is Status.FAILED
    assert gated_pass.status is Status.PASSED
    # The engine combines only the statuses that exist: the informational metric
    # neither fails the case nor leaves it NOT_EVALUATED.
    only_gated = [r.status for r in (info, gated_pass) if r.status is not None]
    assert combine_statuses(only_gated) is Status.PASSED
    only_info = [r.status for r in (info,) if r.status is not None]
    assert combine_statuses(only_info) is Status.NOT_EVALUATED


def test_engine_ignores_informational_statuses() -> None:
    from assay.engine import score_case
    from assay.metrics.registry import build_metric

    case = EvalCase(id="c", reference=[Turn(user_input=UserInput(text="q"), final_response="ok")])
    actual = [
        Turn(
            user_input=UserInput(text="q"),
            final_response="ok",
            usage={"input_tokens": 10, "output_tokens": 2},
        )
    ]
    usage, match = build_metric("token_usage"), build_metric("response_match_score")
    both = score_case(case, actual, [usage, match])
    assert both.metrics["token_usage"].status is None
    assert both.metrics["token_usage"].score is not None
    assert both.metrics["response_match_score"].status is Status.PASSED
    assert both.status is Status.PASSED
    # Informational metrics alone never make a case pass.
    assert score_case(case, actual, [usage]).status is Status.NOT_EVALUATED


def test_case_without_scored_invocations_is_not_evaluated() -> None:
    result = _Gated().result_from_invocations([Score(None, "no reference"), Score(None)])
    assert result.score is None
    assert result.status is Status.NOT_EVALUATED
    assert result.explanation == "no reference"
    mixed = _Gated().result_from_invocations([Score(None, "skipped"), Score(1.0), Score(0.0)])
    assert mixed.score == 0.5 and mixed.status is Status.PASSED


def test_adk_codes() -> None:
    assert [s.adk_code for s in (Status.PASSED, Status.FAILED, Status.NOT_EVALUATED)] == [1, 2, 3]
    from google.adk.evaluation.evaluator import EvalStatus

    for status in Status:
        assert EvalStatus(status.adk_code).name == status.value


def test_eval_result_status_is_strict_over_cases() -> None:
    def result(*statuses: Status) -> EvalResult:
        cases = [CaseResult(case_id=f"c{i}", status=s) for i, s in enumerate(statuses)]
        return EvalResult(summary={}, rows=[], cases=cases)

    assert result(P, P).status is P
    assert result(P, N).status is N
    assert result(N, F).status is F
    assert result().status is N


# ----------------------------------------------------------------------------- CaseResult


def test_case_result_to_dict_is_json_serialisable() -> None:
    actual = Turn(
        id="i1",
        user_input=UserInput(text="q"),
        steps=[Step(tool_call=ToolCall(name="t", args={"a": 1}))],
        final_response="a",
    )
    expected = Turn(
        id="i1",
        user_input=UserInput(text="q"),
        final_response="b",
        rubrics=[Rubric(id="r", text="t", type=RubricType.TOOL_USE_QUALITY)],
    )
    case = CaseResult(
        case_id="c1",
        status=Status.FAILED,
        metrics={
            "response_match_score": MetricResult(
                name="response_match_score",
                score=0.25,
                threshold=0.8,
                status=Status.FAILED,
                per_invocation=[Score(0.25, "low overlap", {"rouge1": 0.25})],
            ),
            "token_usage": MetricResult(
                name="token_usage", score=None, threshold=None, status=None
            ),
        },
        invocations=[
            InvocationResult(
                index=0,
                invocation_id="i1",
                actual=actual,
                expected=expected,
                scores={"response_match_score": Score(0.25)},
            ),
            InvocationResult(index=1, invocation_id=None, actual=None, expected=None),
        ],
        latency_s=0.5,
        eval_set_id="s",
    )
    data = case.to_dict()
    back = json.loads(json.dumps(data))
    assert back == data
    assert data["status"] == "FAILED" and type(data["status"]) is str
    metric = data["metrics"]["response_match_score"]
    assert metric["status"] == "FAILED"
    assert metric["per_invocation"][0] == {
        "value": 0.25,
        "explanation": "low overlap",
        "details": {"rouge1": 0.25},
    }
    assert data["metrics"]["token_usage"]["status"] is None
    inv = data["invocations"][0]
    assert inv["actual"]["steps"][0]["tool_call"] == {"name": "t", "args": {"a": 1}}
    assert inv["expected"]["final_response"] == "b"
    assert type(inv["expected"]["rubrics"][0]["type"]) is str
    assert data["invocations"][1]["actual"] is None
    # The turns read back into the model unchanged.
    assert Turn.model_validate(inv["actual"]) == actual
    # The dataclass itself was not modified by the conversion.
    assert case.invocations[0].actual is actual
    assert case.status is Status.FAILED
