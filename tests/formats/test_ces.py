"""CES Evaluation resources: golden turns, scenarios, expectation resources, YAML."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from assay.core.cases import (
    EvalCase,
    EvalSet,
    Expectation,
    Persona,
    Rubric,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    UserGoalBehavior,
    UserInput,
)
from assay.errors import ConversionLossError, InputError
from assay.formats import ces, load
from assay.formats._common import read_structured

REALWORLD = Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld" / "ces"
BELLA = REALWORLD / "bella_notte"
OFF_RAILS = BELLA / "evaluations" / "Off-the-Rails_-_Repeated_Off-Topic.json"
PREFILL = BELLA / "evaluations" / "Event_Prefill_-_Party_Size_Skipped.json"
SCENARIO = BELLA / "evaluations" / "Scenario_-_Large_Party_Rejection.json"
LEAKAGE = BELLA / "evaluationExpectations" / "No_Technical_Leakage.json"
SCRAPI = REALWORLD / "scrapi_yaml"


def _load(data: Any) -> EvalSet:
    return ces.load_data(data, file=None, mapping=None)


def _golden(*steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"displayName": "g", "golden": {"turns": [{"steps": list(steps)}]}, **top}


# ----------------------------------------------------------------------------- golden


def test_golden_expectations_and_metadata() -> None:
    evalset = load(OFF_RAILS)
    assert evalset.id == "Off-the-Rails_-_Repeated_Off-Topic" and len(evalset.cases) == 1
    case = evalset.cases[0]
    assert case.id == "c3c25604-5aa9-4a04-95b5-3db284e72790"
    assert case.metadata["displayName"] == "Off-the-Rails - Repeated Off-Topic"
    assert case.metadata["evaluationDatasets"] == ["Bella Notte Slot Machine - Full Suite"]
    assert case.tags[0] == "slot-machine" and case.description
    turns = case.reference
    assert turns is not None and len(turns) == 4
    assert turns[1].user_input.text == "Actually, what's the weather going to be like tonight?"
    assert turns[0].expectations == [
        Expectation(
            note="Check_Status_In_Progress",
            updated_variables={"sm": {"status": "in_progress", "filled": {}}},
        )
    ]
    call = turns[3].expectations[1]
    assert call.note == "Check_End_Session_Called"
    assert call.tool_call == ToolCall(
        name="end_session", args={"reason": "retry_exhausted", "session_escalated": True}
    )


def test_user_inputs_of_a_turn_merge() -> None:
    turn = load(PREFILL).cases[0].reference[0]  # type: ignore[index]
    assert turn.user_input.variables == {"event_data": {"party_size": 4}}
    assert turn.user_input.event == "welcome" and turn.user_input.text is None
    assert turn.expectations[0].agent_response == "welcome"


def test_references_resolve_from_the_export_folder() -> None:
    case = load(PREFILL).cases[0]
    # A resolved reference is the case's rubric; the others stay references.
    assert case.metadata[ces.REFS] == [
        "Warm Restaurant Host Persona",
        "Event Prefill - Skips Pre-Filled Slots",
    ]
    assert [r.id for r in case.rubrics] == ["No Technical Leakage"]
    assert case.rubrics[0].text.startswith("Evaluate whether the agent avoids")
    alone = _load(read_structured(PREFILL)).cases[0]
    assert alone.rubrics == [] and alone.metadata[ces.REFS] == [
        "Warm Restaurant Host Persona",
        "No Technical Leakage",
        "Event Prefill - Skips Pre-Filled Slots",
    ]


def test_a_standalone_expectation_resource_and_linking() -> None:
    resource = load(LEAKAGE)
    assert resource.cases == []
    stored = resource.metadata[ces.RESOURCES][0]
    assert stored["displayName"] == "No Technical Leakage"
    assert stored["tags"] == ["slot-machine", "technical-leakage"]
    evaluation = _load(read_structured(OFF_RAILS))
    linked, same = ces.link_expectations([evaluation, resource])
    assert [r.id for r in linked.cases[0].rubrics] == ["No Technical Leakage"]
    assert evaluation.cases[0].rubrics == []  # the inputs are not changed
    assert same == resource
    by_name = _golden(
        evaluationExpectations=[
            "projects/p/apps/a/evaluationExpectations/374838c5-154b-4a41-b477-257abf86994f"
        ]
    )
    by_name["golden"]["evaluationExpectations"] = by_name.pop("evaluationExpectations")
    linked_by_name = ces.link_expectations([_load(by_name), resource])[0]
    assert linked_by_name.cases[0].rubrics[0].id == "No Technical Leakage"


def test_a_wrapper_file_links_its_own_resources() -> None:
    evaluation = copy.deepcopy(read_structured(OFF_RAILS))
    wrapper = {
        "evaluations": [evaluation],
        "evaluationExpectations": [read_structured(LEAKAGE)],
        "description": "suite",
    }
    evalset = _load(wrapper)
    assert evalset.description == "suite"
    assert [r.id for r in evalset.cases[0].rubrics] == ["No Technical Leakage"]
    # No CES resource holds a set's description: writing refuses to drop it silently.
    with pytest.raises(ConversionLossError, match="the set: description"):
        ces.dump(evalset)
    evalset.description = None
    assert _load(ces.dump(evalset)) == evalset


def test_other_user_inputs_and_agent_transfer_steps() -> None:
    data = _golden(
        {"userInput": {"dtmf": "12#"}},
        {"userInput": {"audio": "QUJD"}},
        {"userInput": {"image": {"mimeType": "image/png", "data": "iVBO"}}},
        {
            "userInput": {
                "toolResponses": {"toolResponses": [{"tool": "lookup", "response": {"output": 3}}]}
            }
        },
        {"agentTransfer": {"targetAgent": "billing"}},
        {"expectation": {"agentTransfer": {"targetAgent": "billing"}}},
        {
            "expectation": {
                "mockToolResponse": {
                    "toolsetTool": {"toolset": "projects/p/apps/a/toolsets/crm", "toolId": "find"},
                    "response": {"output": "x"},
                }
            }
        },
    )
    turn = _load(data).cases[0].reference[0]  # type: ignore[index]
    ui = turn.user_input
    assert ui.dtmf == "12#" and [b.mime_type for b in ui.blobs] == ["audio/*", "image/png"]
    assert ui.tool_responses == [ToolResponse(name="lookup", response={"output": 3})]
    assert turn.steps[0].agent_transfer is not None
    assert turn.steps[0].agent_transfer.target_agent == "billing"
    assert turn.expectations[0].agent_transfer == "billing"
    mock = turn.expectations[1].mock_tool_response
    assert mock is not None and mock.name == "projects/p/apps/a/toolsets/crm/tools/find"
    written = ces.dump(_load(data))
    assert written["golden"]["turns"][0]["steps"][-1]["expectation"]["mockToolResponse"][
        "toolsetTool"
    ] == {"toolset": "projects/p/apps/a/toolsets/crm", "toolId": "find"}
    assert _load(written) == _load(data)


# ----------------------------------------------------------------------------- scenario


def test_scenario_evaluation() -> None:
    case = load(SCENARIO).cases[0]
    sc = case.scenario
    assert sc is not None and case.reference is None
    assert sc.task == "Try to make a dinner reservation for 12 people at Bella Notte."
    assert [r.id for r in sc.rubrics] == ["rubric-1", "rubric-2", "rubric-3"]
    assert sc.user_goal_behavior == UserGoalBehavior.USER_GOAL_REJECTED
    assert sc.max_turns == 5 and sc.user_facts[0].value == "12"
    tool = sc.expectations[0].tool_expectation
    assert tool is not None and tool.expected_tool_call.args == {"size": 12.0}
    assert sc.expectations[1].agent_response == "events@bellanotte.com"


def test_scenario_extensions_round_trip() -> None:
    data = {
        "name": "s1",
        "displayName": "Scenario one",
        "scenario": {
            "task": "Book",
            "startingPrompt": "Hi",
            "conversationPlan": "Ask, then confirm",
            "persona": {"name": "p1", "displayName": "Pat", "personality": "curt"},
            "initiator": "AGENT",
            "variableOverrides": {"tier": "gold"},
            "evaluationExpectations": ["No Technical Leakage"],
        },
    }
    case = _load(data).cases[0]
    assert case.id == "s1" and case.metadata["displayName"] == "Scenario one"
    assert case.scenario is not None
    assert case.scenario.persona == Persona(id="p1", display_name="Pat", personality="curt")
    assert case.scenario.initiator.value == "AGENT"
    # assay reads its extensions, but an Evaluation has no field for them: writing
    # refuses to drop them silently.
    with pytest.raises(ConversionLossError) as caught:
        ces.dump(_load(data))
    assert caught.value.losses == [
        ("s1", f"scenario.{name}")
        for name in ("starting_prompt", "conversation_plan", "persona", "initiator")
    ]
    for key in ("startingPrompt", "conversationPlan", "persona", "initiator"):
        del data["scenario"][key]  # type: ignore[attr-defined]
    assert ces.dump(_load(data)) == data


# ----------------------------------------------------------------------------- yaml / scrapi


def test_exported_yaml_evaluation(tmp_path: Path) -> None:
    evalset = load(SCRAPI / "exported_eval_example.yaml")
    case = evalset.cases[0]
    assert case.id == "Basic Product Search Simplified"
    assert case.reference is not None and len(case.reference) == 4
    assert case.reference[0].user_input.event == "WelcomeEvent"
    assert case.reference[3].user_input.text == "sandwiches"
    assert case.rubrics[0].id == "Simple tool expectation 1"
    out = tmp_path / "exported.yaml"
    ces.write(evalset, out)
    assert "displayName: Basic Product Search Simplified" in out.read_text(encoding="utf-8")
    assert load(out).cases == evalset.cases


def test_scrapi_golden_shorthand() -> None:
    evalset = load(SCRAPI / "golden_eval_example.yaml")
    assert [c.id for c in evalset.cases] == [
        "Unlock_Intent1",
        "Unlock.Intent2",
        "Datastore_Intent1",
    ]
    first = evalset.cases[0]
    assert first.tags == ["direct", "p0"]
    turns = first.reference
    assert turns is not None
    assert turns[0].user_input.text is None
    assert turns[0].user_input.variables == {"account_id": "9820598207", "customer_id": "4444444"}
    assert turns[1].user_input.variables is None
    assert [e.tool_call.name for e in turns[1].expectations] == [  # type: ignore[union-attr]
        "retrieve_intent_matches",
        "transfer_to_cx",
    ]
    assert first.rubrics[0].id == f"{first.id} expectation 1"
    assert _load(ces.dump(evalset)).cases == evalset.cases


def test_scrapi_turn_evals_are_refused_clearly() -> None:
    with pytest.raises(InputError) as info:
        load(SCRAPI / "turn_eval_example.yaml")
    assert "turn-eval" in str(info.value) and info.value.path == "$.conversations"


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize(
    "path",
    [OFF_RAILS, PREFILL, SCENARIO, LEAKAGE, SCRAPI / "exported_eval_example.yaml"],
    ids=lambda p: p.name,
)
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_real_files_round_trip(path: Path, suffix: str, tmp_path: Path) -> None:
    original = _load(read_structured(path))
    out = tmp_path / (path.stem + suffix)
    ces.write(original, out)
    again = load(out)
    assert again.id == out.stem
    assert (again.cases, again.metadata) == (original.cases, original.metadata)


def test_written_evaluations_are_camel_case() -> None:
    written = ces.dump(load(SCENARIO))
    assert set(written) >= {"name", "displayName", "scenario", "evaluationDatasets"}
    assert written["scenario"]["scenarioExpectations"][0] == {
        "toolExpectation": {"expectedToolCall": {"tool": "set_party_size", "args": {"size": 12.0}}}
    }
    assert written["scenario"]["userGoalBehavior"] == "USER_GOAL_REJECTED"


def test_reference_steps_are_written_as_expectations() -> None:
    case = EvalCase(
        id="adk-case",
        reference=[
            Turn(
                user_input=UserInput(text="weather?"),
                steps=[Step(tool_call=ToolCall(name="get_weather", args={"city": "Oslo"}))],
                final_response="Sunny",
            )
        ],
        rubrics=[Rubric(id="tone", text="Friendly")],
    )
    wrapper = ces.dump(EvalSet(id="s", cases=[case]))
    # The rubric is an expectation resource beside the evaluation, referred to by name.
    assert wrapper["evaluationExpectations"] == [
        {"displayName": "tone", "llmCriteria": {"prompt": "Friendly"}}
    ]
    written = wrapper["evaluations"][0]
    assert written["displayName"] == "adk-case" and "name" not in written
    steps = written["golden"]["turns"][0]["steps"]
    assert steps == [
        {"userInput": {"text": "weather?"}},
        {"expectation": {"toolCall": {"tool": "get_weather", "args": {"city": "Oslo"}}}},
        {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": "Sunny"}]}}},
    ]
    assert written["golden"]["evaluationExpectations"] == ["tone"]
    reloaded = _load(wrapper).cases[0]
    assert reloaded.reference[0].expectations[0].tool_call.name == "get_weather"  # type: ignore[index, union-attr]
    assert reloaded.rubrics == case.rubrics
    with pytest.raises(InputError, match="actual"):
        ces.dump(EvalSet(id="s", cases=[EvalCase(id="rec", actual=[Turn()])]))


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("data", "path", "fragment"),
    [
        (
            _golden({"userInput": {"text": "a"}, "expectation": {}}),
            "$.golden.turns[0].steps[0]",
            "exactly one of userInput",
        ),
        (
            _golden({"expectation": {"note": "n"}}),
            "$.golden.turns[0].steps[0].expectation",
            "exactly one of toolCall",
        ),
        (
            _golden({"userInput": {"text": "a"}}, {"userInput": {"text": "b"}}),
            "$.golden.turns[0].steps[1].userInput.text",
            "one text per turn",
        ),
        (
            _golden({"userInput": {"video": "x"}}),
            "$.golden.turns[0].steps[0].userInput.video",
            "toolResponses",
        ),
        (
            _golden({"expectation": {"toolCall": {"args": {}}}}),
            "$.golden.turns[0].steps[0].expectation.toolCall",
            "toolsetTool",
        ),
        (
            {"displayName": "x", "scenario": {"task": "t", "maxTurns": "5"}},
            "$.scenario.maxTurns",
            "an integer",
        ),
        (
            {"displayName": "x", "scenario": {"task": "t", "userGoalBehavior": "MAYBE"}},
            "$.scenario.userGoalBehavior",
            "USER_GOAL_IGNORED",
        ),
    ],
)
def test_errors_name_case_and_path(data: dict[str, Any], path: str, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        _load(data)
    assert info.value.path == path and fragment in str(info.value)
    assert info.value.case_id == "x" if "scenario" in data else info.value.case_id == "g"


def test_evaluations_need_a_name_and_inputs() -> None:
    with pytest.raises(InputError, match="no name or displayName"):
        _load({"golden": {"turns": []}})
    with pytest.raises(InputError, match="neither golden nor scenario"):
        _load([{"displayName": "a", "golden": {"turns": []}}, {"displayName": "b"}])
    with pytest.raises(InputError, match="duplicate case id"):
        _load([_golden(), _golden()])


def test_detection() -> None:
    assert ces.detect(None, read_structured(OFF_RAILS))
    assert ces.detect(None, read_structured(LEAKAGE))
    assert ces.detect(None, [read_structured(SCENARIO)])
    assert not ces.detect(None, {"eval_set_id": "s", "eval_cases": []})
    assert not ces.detect(None, [{"prompt": "p"}])
    assert not ces.detect(None, {"scenarios": [{"starting_prompt": "hi"}]})
