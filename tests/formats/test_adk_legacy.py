"""The `adk-legacy` format: `*.test.json` lists of turns plus an initial session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from assay.core.cases import (
    AgentMessage,
    EvalCase,
    EvalSet,
    Scenario,
    SessionInput,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    UserInput,
)
from assay.errors import InputError
from assay.formats import adk, adk_legacy, load
from assay.formats._common import read_structured

SHARED = Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld"
FOLDER = SHARED / "adk" / "legacy_trip_planner"
LEGACY = FOLDER / "trip_inquiry.test.json"
SESSION = FOLDER / "initial.session.json"
STATE = {
    "origin": "San Francisco",
    "interests": "Food, Shopping, Museums",
    "range": "1000 miles",
    "cities": "",
}


def test_detects_the_legacy_file_and_nothing_else_in_the_fixtures() -> None:
    assert adk_legacy.detect(LEGACY, read_structured(LEGACY))
    assert not adk.detect(LEGACY, read_structured(LEGACY))
    others = [p for p in SHARED.rglob("*.json*") if p != LEGACY]
    assert others
    for path in others:
        assert not adk_legacy.detect(path, read_structured(path)), path


def test_a_dot_test_json_holding_an_eval_set_is_not_legacy() -> None:
    path = SHARED / "adk" / "home_automation" / "simple_test.test.json"
    assert not adk_legacy.detect(path, read_structured(path))


def test_dispatcher_reads_the_initial_session_beside_the_file() -> None:
    evalset = load(LEGACY, "adk-legacy")
    (case,) = evalset.cases
    assert case.id == str(LEGACY)
    assert case.session_input == SessionInput(
        app_name="trip_planner_agent", user_id="test_user", state=STATE
    )
    first, second = case.reference or []
    assert first.user_input.text == "Hi, who are you? What can you do?"
    assert first.steps == []
    assert first.final_response is not None and first.final_response.endswith(
        "each day of the trip.\n"
    )
    assert second.tool_calls() == [
        ToolCall(name="transfer_to_agent", args={"agent_name": "indentify_agent"})
    ]


def test_load_data_alone_has_no_session() -> None:
    evalset = adk_legacy.load_data(read_structured(LEGACY), file=str(LEGACY))
    assert evalset.cases[0].session_input is None
    assert len(evalset.cases[0].reference or []) == 2


def test_load_with_session_explicit_or_beside(tmp_path: Path) -> None:
    copy = tmp_path / "trip.test.json"
    shutil.copy(LEGACY, copy)
    assert adk_legacy.load_with_session(copy).cases[0].session_input is None
    with_session = adk_legacy.load_with_session(copy, SESSION).cases[0].session_input
    assert with_session is not None and with_session.state == STATE
    shutil.copy(SESSION, tmp_path / "initial.session.json")
    beside = adk_legacy.load_with_session(copy).cases[0].session_input
    assert beside is not None and beside.app_name == "trip_planner_agent"


def test_ids_are_stable_and_shaped_like_adks() -> None:
    one, two = load(LEGACY, "adk-legacy"), load(LEGACY, "adk-legacy")
    assert one == two
    assert one.name == one.id and len(one.id) == 36
    ids = [t.id for t in one.cases[0].reference or []]
    assert len(set(ids)) == 2 and all(i is not None and len(i) == 36 for i in ids)


def test_matches_google_adks_own_migration() -> None:
    from google.adk.evaluation.local_eval_sets_manager import (
        convert_eval_set_to_pydantic_schema,
    )

    theirs = convert_eval_set_to_pydantic_schema(
        "any",
        [
            {
                "name": str(LEGACY),
                "data": read_structured(LEGACY),
                "initial_session": read_structured(SESSION),
            }
        ],
    ).eval_cases[0]
    ours = load(LEGACY, "adk-legacy").cases[0]
    assert ours.id == theirs.eval_id
    assert ours.session_input is not None and theirs.session_input is not None
    assert ours.session_input.state == theirs.session_input.state
    assert ours.session_input.app_name == theirs.session_input.app_name
    for turn, inv in zip(ours.reference or [], theirs.conversation or [], strict=True):
        assert inv.user_content.parts and turn.user_input.text == inv.user_content.parts[0].text
        assert inv.final_response and inv.final_response.parts
        assert turn.final_response == inv.final_response.parts[0].text
        calls = inv.intermediate_data.tool_uses if inv.intermediate_data else []
        assert [(c.name, c.args) for c in turn.tool_calls()] == [(c.name, c.args) for c in calls]


def test_round_trip_with_and_without_session() -> None:
    bare = adk_legacy.load_data(read_structured(LEGACY), file=str(LEGACY))
    dumped = adk_legacy.dump(bare)
    assert isinstance(dumped, list) and dumped[1]["expected_tool_use"][0]["tool_name"] == (
        "transfer_to_agent"
    )
    assert "expected_intermediate_agent_responses" not in dumped[0]
    assert adk_legacy.load_data(json.loads(json.dumps(dumped)), file=str(LEGACY)) == bare
    full = load(LEGACY, "adk-legacy")
    named = adk_legacy.dump(full)
    assert named[0]["name"] == str(LEGACY) and named[0]["initial_session"]["state"] == STATE
    assert adk_legacy.detect(None, named)
    assert adk_legacy.load_data(json.loads(json.dumps(named)), file=str(LEGACY)) == full


def test_google_adk_loads_the_named_form_assay_writes(tmp_path: Path) -> None:
    from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file

    target = tmp_path / "out.test.json"
    adk_legacy.write(load(LEGACY, "adk-legacy"), target)
    theirs = load_eval_set_from_file(str(target), "out")
    case = theirs.eval_cases[0]
    assert case.eval_id == str(LEGACY)
    assert case.session_input is not None and case.session_input.state == STATE
    assert [
        i.final_response.parts[0].text for i in case.conversation or [] if i.final_response
    ] == [t["reference"] for t in read_structured(LEGACY)]


def test_intermediate_responses_and_extra_row_keys() -> None:
    rows: list[dict[str, Any]] = [
        {
            "query": "q",
            "expected_tool_use": [{"tool_name": "t", "tool_input": {"a": 1}}],
            "expected_intermediate_agent_responses": [{"author": "sub", "text": "wait"}],
            "reference": "r",
            "comment": "kept",
        }
    ]
    evalset = adk_legacy.load_data(rows, file="x.test.json")
    turn = (evalset.cases[0].reference or [])[0]
    assert turn.steps == [
        Step(tool_call=ToolCall(name="t", args={"a": 1})),
        Step(agent_message=AgentMessage(author="sub", text="wait")),
    ]
    assert adk_legacy.dump(evalset) == rows
    assert not adk_legacy.detect(None, rows)  # unknown keys: only with --from adk-legacy


def test_errors_are_located() -> None:
    def message(data: Any) -> str:
        with pytest.raises(InputError) as info:
            adk_legacy.load_data(data, file="bad.test.json")
        return str(info.value)

    text = message([{"query": "q", "expected_tool_use": {"tool_name": "t"}}])
    assert "bad.test.json" in text and "'bad.test.json'" in text
    assert "$[0].expected_tool_use" in text and "a list of {tool_name, tool_input}" in text
    text = message([{"query": "q"}, {"reference": "r"}])
    assert "$[1].query" in text and "missing" in text
    text = message([{"query": "q", "expected_tool_use": [{"tool_name": "t", "tool_input": 3}]}])
    assert "$[0].expected_tool_use[0].tool_input" in text and "an object" in text
    assert "a list of turns" in message({"query": "q"})


def test_a_bad_session_file_is_named(tmp_path: Path) -> None:
    session = tmp_path / "initial.session.json"
    session.write_text(json.dumps({"app_name": "a", "state": [1]}), encoding="utf-8")
    with pytest.raises(InputError) as info:
        adk_legacy.load_with_session(LEGACY, session)
    assert str(session) in str(info.value) and "$.state" in str(info.value)


def test_what_the_legacy_format_cannot_hold_is_refused() -> None:
    scenario = EvalSet(id="s", cases=[EvalCase(id="c", scenario=Scenario(task="t"))])
    with pytest.raises(InputError, match="scenario"):
        adk_legacy.dump(scenario)
    response = Step(tool_response=ToolResponse(name="t", response={}))
    turn = Turn(user_input=UserInput(text="q"), steps=[response])
    with pytest.raises(InputError, match="tool_response"):
        adk_legacy.dump(EvalSet(id="s", cases=[EvalCase(id="c", reference=[turn])]))
