"""The `adk` format: real ADK eval sets, both intermediate-data shapes, round trips."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from assay.core.cases import (
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
    SessionInput,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    Usage,
    UserFact,
    UserInput,
)
from assay.errors import InputError
from assay.formats import adk, adk_legacy, load
from assay.formats._common import read_structured

SHARED = Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld"
ADK = SHARED / "adk"

# Every ADK eval set / scenarios file among the real-world fixtures, with its case count.
EVAL_SETS = {
    "camelcase_founder_validation/founder_validation_agent_eval.evalset.json": 10,
    "conversation_scenario/conversation_scenario.test.json": 1,
    "crypto_payroll/crypto_payroll_eval_set.evalset.json": 6,
    "elicitation_agent/elicitation_flow.test.json": 1,
    "home_automation/simple_test.test.json": 1,
    "live_non_blocking_tool_agent/live_non_blocking_tool_agent.evalset.json": 2,
    "long_horizon_harness/plot_artifact_journey.evalset.json": 1,
    "samples_user_simulation/conversation_scenarios.json": 2,
    "trip_planner/trip_inquiry_multi_turn.test.json": 1,
    "trpc_agent_go/math-basic.evalset.json": 2,
}
NOT_ADK = [
    "adk/legacy_trip_planner/trip_inquiry.test.json",
    "adk/legacy_trip_planner/initial.session.json",
    "adk/legacy_trip_planner/test_config.json",
    "adk/samples_rubric_criteria/eval_config.json",
    "vertex/eval_dataset.json",
    "vertex/fx-dataset.json",
    "vertex/smoke-dataset.json",
    "vertex/customer_support_eval.json",
    "mlflow/eval_set.jsonl",
    "ces/bella_notte/evaluations/Scenario_-_Large_Party_Rejection.json",
    "ces/bella_notte/evaluations/Off-the-Rails_-_Repeated_Off-Topic.json",
    "ces/scrapi_yaml/exported_eval_example.yaml",
]


def _load(rel: str) -> EvalSet:
    path = ADK / rel
    return adk.load_data(read_structured(path), file=str(path))


def _reload(evalset: EvalSet, file: str = "x.evalset.json") -> EvalSet:
    return adk.load_data(json.loads(json.dumps(adk.dump(evalset))), file=file)


def _case(evalset: EvalSet, case_id: str) -> EvalCase:
    return next(c for c in evalset.cases if c.id == case_id)


# -- detection and counts ----------------------------------------------------------------


@pytest.mark.parametrize("rel", sorted(EVAL_SETS))
def test_real_eval_sets_are_detected_and_load_with_exact_case_counts(rel: str) -> None:
    data = read_structured(ADK / rel)
    assert adk.detect(ADK / rel, data)
    assert not adk_legacy.detect(ADK / rel, data)
    assert len(_load(rel).cases) == EVAL_SETS[rel]


@pytest.mark.parametrize("rel", NOT_ADK)
def test_other_files_are_not_claimed(rel: str) -> None:
    assert not adk.detect(SHARED / rel, read_structured(SHARED / rel))


def test_an_empty_eval_set_is_adk_but_an_empty_vertex_envelope_is_not() -> None:
    assert adk.detect(None, {"eval_set_id": "s", "eval_cases": []})
    assert not adk.detect(None, {"eval_cases": []})
    assert not adk.detect(
        None, {"eval_set_id": "s", "eval_cases": [{"eval_id": "a", "prompt": "hi"}]}
    )


def test_dispatcher_loads_by_content_with_the_chosen_format() -> None:
    evalset = load(ADK / "home_automation/simple_test.test.json", "adk")
    assert evalset.id == "b305bd06-38c5-4796-b9c7-d9c7454338b9"


# -- field values per file -----------------------------------------------------------------


def test_null_heavy_pydantic_dump() -> None:
    evalset = _load("home_automation/simple_test.test.json")
    assert evalset.description is None and evalset.created_at == pytest.approx(1747337309.2360387)
    case = evalset.cases[0]
    assert case.id == "tests/integration/fixture/home_automation_agent/simple_test.test.json"
    assert case.session_input is None and case.metadata == {}
    turn = case.reference[0] if case.reference else Turn()
    assert turn.id == "b7982664-0ab6-47cc-ab13-326656afdf75"
    assert turn.user_input.text == "Turn off device_2 in the Bedroom."
    assert turn.final_response == "I have set the device_2 status to off."
    args = {"location": "Bedroom", "device_id": "device_2", "status": "OFF"}
    assert turn.tool_calls() == [ToolCall(name="set_device_info", args=args)]
    assert turn.created_at == pytest.approx(1747337309.2360144)


def test_camel_case_file() -> None:
    evalset = _load("camelcase_founder_validation/founder_validation_agent_eval.evalset.json")
    assert evalset.id == "founder_validation_agent_eval"
    assert evalset.name == "Founder Validation Agent Test Suite"
    assert evalset.created_at == 1718150400.0
    flow = _case(evalset, "multi_turn_full_flow")
    assert flow.session_input == SessionInput(app_name="agent", user_id="eval_user", state={})
    turns = flow.reference or []
    assert [t.id for t in turns] == ["turn_1", "turn_2", "turn_3"]
    assert [t.tool_calls()[0].name for t in turns] == [
        "clarify_idea",
        "identify_risky_assumptions",
        "generate_interview_questions",
    ]
    assert turns[2].created_at == 1718150402.0
    no_tools = _case(evalset, "challenge_feature_first").reference or []
    assert no_tools[0].steps == [] and no_tools[0].final_response is None


def test_multi_turn_with_state_and_transfer() -> None:
    case = _load("trip_planner/trip_inquiry_multi_turn.test.json").cases[0]
    assert case.session_input is not None
    assert case.session_input.app_name == "trip_planner_agent"
    assert case.session_input.state["origin"] == "San Francisco"
    first, second = case.reference or []
    assert first.steps == []
    assert first.final_response is not None and first.final_response.startswith("I am trip_planner")
    call = ToolCall(name="transfer_to_agent", args={"agent_name": "identify_agent"})
    assert second.tool_calls() == [call]


def test_null_final_text_and_list_args() -> None:
    case = _load("elicitation_agent/elicitation_flow.test.json").cases[0]
    first, second = case.reference or []
    assert first.final_response is None
    assert first.tool_calls()[0].args["missing_entities"] == ["date", "passenger_name"]
    assert second.final_response == "Successfully booked flight to London on 2026-05-15 for Alice."
    assert first.created_at is None and case.session_input is None


def test_scenario_case_without_name() -> None:
    evalset = _load("conversation_scenario/conversation_scenario.test.json")
    assert evalset.name is None
    case = evalset.cases[0]
    assert case.id == "CS-1" and case.reference is None and case.session_input is None
    assert case.scenario == Scenario(
        starting_prompt="Hello", conversation_plan="Ask the agent to do something"
    )


def test_mixed_scenario_and_scripted_cases() -> None:
    evalset = _load("live_non_blocking_tool_agent/live_non_blocking_tool_agent.evalset.json")
    scenario = _case(evalset, "background_task_scenario").scenario
    assert scenario is not None and scenario.persona == "NOVICE"
    assert scenario.starting_prompt == "Hi, can you kick off a long background task for me?"
    scripted = _case(evalset, "background_task_scripted").reference or []
    assert [t.id for t in scripted] == [None, None]
    assert [t.final_response for t in scripted] == [None, None]
    assert scripted[1].user_input.text == "While that runs, what is two plus two?"


def test_invocation_rubrics() -> None:
    evalset = _load("long_horizon_harness/plot_artifact_journey.evalset.json")
    assert evalset.name == "Plot Generation → Workspace → Artifact Round-Trip"
    turn = (evalset.cases[0].reference or [])[0]
    assert [r.id for r in turn.rubrics] == [
        "plot_actually_rendered_via_a_tool",
        "plot_bytes_routed_into_workspace",
        "plot_surfaced_via_artifact_save",
        "plot_does_not_fabricate_success",
    ]
    assert {r.type for r in turn.rubrics} == {RubricType.FINAL_RESPONSE_QUALITY}
    assert turn.rubrics[0].text.startswith("The PNG bytes are actually produced")


def test_partial_expected_args() -> None:
    evalset = _load("crypto_payroll/crypto_payroll_eval_set.evalset.json")
    case = _case(evalset, "proportional_split_chains_helper_and_variable_tool")
    first = (case.reference or [])[0]
    assert [c.name for c in first.tool_calls()] == [
        "lookup_token_info",
        "split_pool_proportionally",
    ]
    assert first.tool_calls()[1].args == {"total_amount": "10000", "decimals": 6}
    eth = (_case(evalset, "variable_eth_selects_spraay_batch_eth_variable").reference or [])[1]
    assert eth.tool_calls()[0].args == {"amounts_eth": ["0.05", "0.02", "0.015"]}


def test_go_framework_file_keeps_its_assistant_role() -> None:
    evalset = _load("trpc_agent_go/math-basic.evalset.json")
    case = _case(evalset, "calc_multiply")
    turn = (case.reference or [])[0]
    assert turn.final_response == "calc result: 42"
    assert turn.tool_calls() == [
        ToolCall(name="calculator", args={"a": 6, "b": 7, "operation": "multiply"})
    ]
    assert case.session_input == SessionInput(app_name="math-eval-app", user_id="user")
    dumped = adk.dump(evalset)["eval_cases"][1]["conversation"][0]
    assert dumped["final_response"]["role"] == "assistant"


def test_standalone_scenarios_file() -> None:
    evalset = _load("samples_user_simulation/conversation_scenarios.json")
    assert evalset.id == "conversation_scenarios"
    novice, expert = evalset.cases
    assert novice.scenario is not None and expert.scenario is not None
    assert novice.scenario.starting_prompt == "I want my bedroom to be comfortable."
    assert novice.scenario.persona == "NOVICE" and expert.scenario.persona == "EXPERT"
    assert all(len(c.id) == 8 and int(c.id, 16) >= 0 for c in evalset.cases)
    assert [c.id for c in _load("samples_user_simulation/conversation_scenarios.json").cases] == [
        novice.id,
        expert.id,
    ]


def test_scenario_ids_match_adk_add_eval_case_for_persona_free_scenarios() -> None:
    from google.adk.evaluation.conversation_scenarios import ConversationScenario

    raw = {"starting_prompt": "Hi", "conversation_plan": "Ask for the weather in Paris."}
    evalset = adk.load_data({"scenarios": [raw]}, file="s.json")
    text = json.dumps(ConversationScenario.model_validate(raw).model_dump(), sort_keys=True)
    assert evalset.cases[0].id == hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


# -- round trips and what google-adk reads -----------------------------------------------


@pytest.mark.parametrize("rel", sorted(EVAL_SETS))
def test_round_trip_keeps_the_model(rel: str) -> None:
    evalset = _load(rel)
    assert _reload(evalset, str(ADK / rel)) == evalset


@pytest.mark.parametrize("rel", sorted(EVAL_SETS))
def test_dump_is_snake_case_and_stable(rel: str) -> None:
    dumped = adk.dump(_load(rel))
    assert "evalCases" not in json.dumps(dumped) and "userContent" not in json.dumps(dumped)
    assert adk.dump(_reload(_load(rel), str(ADK / rel))) == dumped


def _adk_view(evalset: Any) -> list[tuple[str, list[Any]]]:
    from google.adk.evaluation.eval_case import get_all_tool_calls

    view = []
    for case in evalset.eval_cases:
        for inv in case.conversation or []:
            final = inv.final_response
            text = [p.text for p in final.parts] if final and final.parts else None
            calls = [(c.name, c.args) for c in get_all_tool_calls(inv.intermediate_data)]
            view.append((case.eval_id, [inv.invocation_id, calls, text]))
        if case.conversation_scenario is not None:
            view.append((case.eval_id, [case.conversation_scenario.starting_prompt]))
    return view


@pytest.mark.parametrize(
    "rel",
    [r for r in sorted(EVAL_SETS) if "camelcase" not in r and "scenarios.json" not in r],
)
def test_google_adk_reads_what_assay_writes(rel: str) -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    ours = AdkEvalSet.model_validate(adk.dump(_load(rel)))
    theirs = AdkEvalSet.model_validate_json((ADK / rel).read_text(encoding="utf-8"))
    assert _adk_view(ours) == _adk_view(theirs)


def test_google_adk_reads_the_camel_case_file_once_assay_rewrote_it() -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    rel = "camelcase_founder_validation/founder_validation_agent_eval.evalset.json"
    ours = AdkEvalSet.model_validate(adk.dump(_load(rel)))
    assert ours.eval_set_id == "founder_validation_agent_eval"
    flow = next(c for c in ours.eval_cases if c.eval_id == "multi_turn_full_flow")
    assert [i.invocation_id for i in flow.conversation or []] == ["turn_1", "turn_2", "turn_3"]
    assert flow.session_input is not None and flow.session_input.app_name == "agent"


def test_written_file_loads_back(tmp_path: Path) -> None:
    evalset = _load("trip_planner/trip_inquiry_multi_turn.test.json")
    target = tmp_path / "out.evalset.json"
    adk.write(evalset, target)
    assert adk.load_data(read_structured(target), file=str(target)) == evalset


# -- intermediate_data shapes --------------------------------------------------------------

EVENTS_CASE: dict[str, Any] = {
    "evalId": "events",
    "conversation": [
        {
            "invocationId": "inv-1",
            "userContent": {"role": "user", "parts": [{"text": "Book it", "thought": None}]},
            "finalResponse": {"role": "model", "parts": [{"text": "Booked."}]},
            "intermediateData": {
                "invocationEvents": [
                    {"author": "planner", "content": {"parts": [{"text": "Let me check."}]}},
                    {
                        "author": "planner",
                        "content": {
                            "role": "model",
                            "parts": [
                                {
                                    "functionCall": {
                                        "id": "c1",
                                        "name": "search",
                                        "args": {"q": "x"},
                                    }
                                },
                                {"functionCall": {"id": "c2", "name": "price", "args": {}}},
                            ],
                        },
                    },
                    {
                        "author": "planner",
                        "content": {
                            "role": "user",
                            "parts": [
                                {
                                    "functionResponse": {
                                        "id": "c1",
                                        "name": "search",
                                        "response": {"hits": 2},
                                    }
                                }
                            ],
                        },
                    },
                    {
                        "author": "booker",
                        "content": {"parts": [{"text": "Found"}, {"text": "two."}]},
                    },
                    {"author": "booker", "content": None},
                ]
            },
        }
    ],
}


def test_events_shape_gives_steps_in_event_order_with_authors() -> None:
    evalset = adk.load_data({"evalSetId": "s", "evalCases": [EVENTS_CASE]}, file="e.json")
    turn = (evalset.cases[0].reference or [])[0]
    assert [s.kind for s in turn.steps] == [
        "agent_message",
        "tool_call",
        "tool_call",
        "tool_response",
        "agent_message",
    ]
    assert turn.steps[0].agent_message == AgentMessage(author="planner", text="Let me check.")
    assert turn.steps[1].tool_call == ToolCall(id="c1", name="search", args={"q": "x"})
    assert turn.steps[3].tool_response == ToolResponse(id="c1", name="search", response={"hits": 2})
    assert turn.steps[4].agent_message == AgentMessage(author="booker", text="Found\ntwo.")
    assert turn.final_response == "Booked."


def test_events_shape_round_trips_and_google_adk_reads_it() -> None:
    from google.adk.evaluation.eval_case import get_all_tool_calls, get_all_tool_responses
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    evalset = adk.load_data({"eval_set_id": "s", "eval_cases": [EVENTS_CASE]}, file="e.json")
    assert _reload(evalset) == evalset
    assert "functionCall" not in json.dumps(adk.dump(evalset))  # kept input, snake_cased
    theirs = AdkEvalSet.model_validate(adk.dump(evalset))
    data = (theirs.eval_cases[0].conversation or [])[0].intermediate_data
    assert [c.name for c in get_all_tool_calls(data)] == ["search", "price"]
    assert [r.response for r in get_all_tool_responses(data)] == [{"hits": 2}]


def _turn(steps: list[Step]) -> EvalSet:
    turn = Turn(id="t1", user_input=UserInput(text="hi"), steps=steps, final_response="done")
    return EvalSet(id="s", cases=[EvalCase(id="c", reference=[turn])])


CALL_A = Step(tool_call=ToolCall(id="a", name="lookup", args={"k": 1}))
CALL_B = Step(tool_call=ToolCall(name="book", args={}))
RESP_A = Step(tool_response=ToolResponse(id="a", name="lookup", response={"v": 2}))
SAY = Step(agent_message=AgentMessage(author="helper", text="working on it"))


def test_steps_in_tool_uses_order_are_written_as_tool_uses() -> None:
    evalset = _turn([CALL_A, CALL_B, RESP_A, SAY])
    data = adk.dump(evalset)["eval_cases"][0]["conversation"][0]["intermediate_data"]
    assert set(data) == {"tool_uses", "tool_responses", "intermediate_responses"}
    assert data["intermediate_responses"] == [["helper", [{"text": "working on it"}]]]
    assert _reload(evalset) == evalset


@pytest.mark.parametrize(
    "steps",
    [
        [CALL_A, RESP_A, CALL_B],
        [SAY, CALL_A],
        [CALL_A, Step(agent_transfer=AgentTransfer(target_agent="booker")), CALL_B],
        [Step(variables_update={"x": 1}), Step(retrieval=Retrieval(chunks=[Chunk(content="c")]))],
        [Step(agent_message=AgentMessage(text="no author")), CALL_A],
    ],
)
def test_interleaved_steps_are_written_as_events_and_keep_their_order(steps: list[Step]) -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    evalset = _turn(steps)
    data = adk.dump(evalset)["eval_cases"][0]["conversation"][0]["intermediate_data"]
    assert set(data) == {"invocation_events"}
    assert _reload(evalset) == evalset
    AdkEvalSet.model_validate(adk.dump(evalset))


# -- what the model holds only in part, and model fields ADK lacks -----------------------


def test_unknown_and_partially_mapped_fields_survive_a_round_trip() -> None:
    raw: dict[str, Any] = {
        "eval_set_id": "s",
        "owner": "team-a",
        "eval_cases": [
            {
                "eval_id": "c",
                "labels": ["smoke"],
                "conversation": [
                    {
                        "invocation_id": "i",
                        "user_content": {"role": "user", "parts": [{"text": "hi"}]},
                        "final_response": {
                            "role": "model",
                            "parts": [{"text": "thinking", "thought": True}, {"text": "hello"}],
                        },
                        "app_details": {"agent_details": {}},
                        "rubrics": [
                            {
                                "rubric_id": "r1",
                                "rubric_content": {"text_property": "polite"},
                                "type": "INSTRUCTION_ADHERENCE",
                                "description": "tone",
                            }
                        ],
                    }
                ],
                "session_input": {"app_name": "a", "user_id": "u", "session_id": "fixed"},
            }
        ],
    }
    evalset = adk.load_data(copy.deepcopy(raw), file="u.json")
    case = evalset.cases[0]
    assert evalset.metadata == {"owner": "team-a"} and case.metadata["labels"] == ["smoke"]
    turn = (case.reference or [])[0]
    assert turn.final_response == "thinking\nhello"
    assert turn.rubrics == [Rubric(id="r1", text="polite", type="INSTRUCTION_ADHERENCE")]
    again = adk.dump(evalset)
    assert again["owner"] == "team-a"
    written = again["eval_cases"][0]
    assert written["labels"] == ["smoke"] and written["session_input"]["session_id"] == "fixed"
    inv = written["conversation"][0]
    assert inv["final_response"] == raw["eval_cases"][0]["conversation"][0]["final_response"]
    assert inv["app_details"] == {"agent_details": {}}
    assert inv["rubrics"][0]["type"] == "INSTRUCTION_ADHERENCE"
    assert _reload(evalset) == evalset


def test_kept_input_yields_to_an_edited_model() -> None:
    evalset = _load("trpc_agent_go/math-basic.evalset.json")
    turn = (evalset.cases[0].reference or [])[0]
    turn.final_response = "calc result: 6"
    written = adk.dump(evalset)["eval_cases"][0]["conversation"][0]["final_response"]
    assert written == {"role": "model", "parts": [{"text": "calc result: 6"}]}


def test_model_fields_adk_lacks_travel_under_the_assay_key() -> None:
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

    turn = Turn(
        id="t",
        user_input=UserInput(text="hi", dtmf="12", variables={"v": 1}),
        steps=[CALL_A],
        final_response="ok",
        latency_s=1.5,
        usage=Usage(input_tokens=3, output_tokens=4),
        error="boom",
        expectations=[Expectation(note="n", agent_transfer="booker")],
        created_at=10.0,
    )
    golden = EvalCase(
        id="golden",
        tags=["t1"],
        description="d",
        reference=[turn],
        actual=[Turn(id="a", final_response="x")],
        expected_response="ok",
        expected_facts=["f"],
        expected_retrieved_context=[Chunk(doc_uri="u")],
        guidelines={"tone": ["polite"]},
        final_session_state={"s": 1},
        rubrics=[Rubric(id="r", text="good", type=RubricType.TOOL_USE_QUALITY)],
        metadata={"eval_id": "clash", "note": "kept"},
    )
    scenario = EvalCase(
        id="scenario",
        scenario=Scenario(
            task="book a table",
            starting_prompt="hello",
            conversation_plan="ask",
            user_facts=[UserFact(name="n", value="v")],
            persona=Persona(id="p", display_name="Pat", description="d", personality="terse"),
            max_turns=4,
        ),
        reference=[Turn(id="r")],
    )
    rows_only = EvalCase(id="rows", actual=[Turn(id="a", final_response="x")])
    evalset = EvalSet(id="s", cases=[golden, scenario, rows_only], metadata={"eval_cases": 1})
    dumped = adk.dump(evalset)
    assert dumped["eval_cases"][0]["conversation"][0]["duration"] == 1.5
    assert dumped["eval_cases"][0]["assay"]["tags"] == ["t1"]
    fitted, losses = adk.fit(evalset)
    assert losses == []
    assert _reload(evalset) == fitted
    # A turn with steps and expectations keeps them all as expectations (one has a
    # note), the first turn's variables are the session state.
    first = (fitted.cases[0].reference or [])[0]
    assert [e.note for e in first.expectations] == [None, None, "n"]
    assert first.expectations[1].agent_response == "ok" and first.steps == []
    assert fitted.cases[0].session_input == SessionInput(state={"v": 1})
    assert first.user_input.variables is None
    AdkEvalSet.model_validate(dumped)


def test_user_content_tool_responses_blobs_persona_objects_and_camel_rubrics() -> None:
    case = {
        "evalId": "c",
        "conversationScenario": {
            "startingPrompt": "hi",
            "conversationPlan": "plan",
            "userPersona": {
                "id": "picky",
                "description": "A picky user",
                "behaviors": [
                    {
                        "name": "terse",
                        "description": "Answers briefly.",
                        "behaviorInstructions": ["Use few words."],
                        "violationRubrics": ["Long answers."],
                    }
                ],
            },
        },
        "rubrics": [{"rubricId": "r", "rubricContent": {"textProperty": "kind"}, "type": None}],
    }
    golden = {
        "eval_id": "g",
        "conversation": [
            {
                "user_content": {
                    "role": "user",
                    "parts": [
                        {"inlineData": {"mimeType": "image/png", "data": "aGk="}},
                        {"functionResponse": {"id": "x", "name": "ask", "response": {"ok": 1}}},
                        {"text": "see above"},
                    ],
                }
            }
        ],
    }
    evalset = adk.load_data({"eval_set_id": "s", "eval_cases": [case, golden]}, file="p.json")
    scenario = evalset.cases[0].scenario
    assert scenario is not None and isinstance(scenario.persona, Persona)
    assert scenario.persona.id == "picky" and scenario.persona.description == "A picky user"
    assert scenario.persona.personality == "Answers briefly.\n- Use few words."
    assert evalset.cases[0].rubrics == [Rubric(id="r", text="kind")]
    user = (evalset.cases[1].reference or [])[0].user_input
    assert user.text == "see above" and [b.mime_type for b in user.blobs] == ["image/png"]
    assert user.tool_responses == [ToolResponse(id="x", name="ask", response={"ok": 1})]
    dumped = adk.dump(evalset)
    persona = dumped["eval_cases"][0]["conversation_scenario"]["user_persona"]
    assert persona["behaviors"][0]["violation_rubrics"] == ["Long answers."]
    assert _reload(evalset) == evalset


# -- errors ------------------------------------------------------------------------------------


def _set(*cases: dict[str, Any]) -> dict[str, Any]:
    return {"eval_set_id": "s", "eval_cases": list(cases)}


def _inv(**extra: Any) -> dict[str, Any]:
    return {"invocation_id": "i", "user_content": {"parts": [{"text": "hi"}]}, **extra}


GOOD = {"eval_id": "ok", "conversation": [_inv()]}


def _error(data: Any) -> str:
    with pytest.raises(InputError) as info:
        adk.load_data(data, file="bad.evalset.json")
    return str(info.value)


def test_tool_uses_not_a_list_is_located() -> None:
    bad = {"eval_id": "c3", "conversation": [_inv(intermediate_data={"tool_uses": {"name": "x"}})]}
    message = _error(_set(GOOD, {"eval_id": "c2", "conversation": []}, bad))
    assert "bad.evalset.json" in message and "'c3'" in message
    assert "$.eval_cases[2].conversation[0].intermediate_data.tool_uses" in message
    assert "a list of function calls" in message


def test_camel_case_paths_name_the_keys_in_the_file() -> None:
    bad = {"evalId": "c", "conversation": [{"userContent": {"parts": ["hi"]}}]}
    message = _error({"evalSetId": "s", "evalCases": [bad]})
    assert "$.evalCases[0].conversation[0].userContent.parts[0]" in message
    assert "a Part object" in message and "got string" in message


def test_missing_eval_id() -> None:
    message = _error(_set(GOOD, {"conversation": []}))
    assert "$.eval_cases[1].eval_id" in message and "eval_id: a string" in message


def test_duplicate_case_ids() -> None:
    message = _error(_set(GOOD, GOOD))
    assert "duplicate case id" in message and "'ok'" in message and "bad.evalset.json" in message


def test_conversation_not_a_list() -> None:
    message = _error(_set({"eval_id": "c", "conversation": {"user_content": {}}}))
    assert "$.eval_cases[0].conversation" in message and "'c'" in message
    assert "a list of invocations" in message


def test_neither_conversation_nor_scenario() -> None:
    message = _error(_set({"eval_id": "c", "session_input": {"app_name": "a"}}))
    assert "neither" in message and "conversation_scenario" in message and "'c'" in message


def test_tool_use_without_a_name_and_bad_args() -> None:
    no_name = {
        "eval_id": "c",
        "conversation": [_inv(intermediate_data={"tool_uses": [{"args": {}}]})],
    }
    message = _error(_set(no_name))
    assert "$.eval_cases[0].conversation[0].intermediate_data.tool_uses[0].name" in message
    bad_args = {"tool_uses": [{"name": "t", "args": [1]}]}
    message = _error(_set({"eval_id": "c", "conversation": [_inv(intermediate_data=bad_args)]}))
    assert "tool_uses[0].args" in message and "args: an object" in message


def test_wrong_types_in_user_content_and_timestamps() -> None:
    message = _error(_set({"eval_id": "c", "conversation": [{"invocation_id": "i"}]}))
    assert "conversation[0].user_content" in message and "missing" in message
    message = _error(_set({"eval_id": "c", "conversation": [_inv(creation_timestamp="now")]}))
    assert "creation_timestamp" in message and "a number" in message


def test_bad_assay_extension_fields_are_located() -> None:
    message = _error(_set({**GOOD, "assay": {"tags": "not-a-list"}}))
    assert "$.eval_cases[0].assay.tags" in message and "'ok'" in message
    message = _error(_set({**GOOD, "assay": {"nope": 1}}))
    assert "$.eval_cases[0].assay.nope" in message and "unknown field" in message


def test_column_mappings_are_refused() -> None:
    with pytest.raises(InputError, match="row formats"):
        adk.load_data(_set(GOOD), file="x.json", mapping={"a": "b"})
