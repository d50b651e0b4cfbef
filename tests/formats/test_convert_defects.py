"""The conversion defects of issue #19 (and #10's dropped reference answer), each on the
real files in tests/data/realworld, checked with the target's own tools where one exists
(google-adk's `EvalSet` and eval-sets manager, google-cloud-ces's `Evaluation`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.local_eval_sets_manager import LocalEvalSetsManager
from google.cloud import ces_v1beta
from typer.testing import CliRunner

from assay.cli import app
from assay.errors import InputError
from assay.formats import adk, ces, detect_format, load
from assay.formats._common import read_structured
from assay.formats.convert import convert_file, fit

REALWORLD = Path(__file__).resolve().parents[1] / "data" / "realworld"
BELLA = REALWORLD / "ces" / "bella_notte" / "evaluations"
OFF_RAILS = BELLA / "Off-the-Rails_-_Repeated_Off-Topic.json"
ADK_SETS = sorted(
    p.relative_to(REALWORLD).as_posix()
    for p in (REALWORLD / "adk").rglob("*.json")
    if "config" not in p.name and "initial.session" not in p.name
)
runner = CliRunner()


def _copy(rel: str | Path, tmp_path: Path) -> Path:
    """A copy of a real file (tests never write beside the originals)."""
    src = REALWORLD / rel if isinstance(rel, str) else rel
    dst = tmp_path / "in" / src.name
    dst.parent.mkdir(exist_ok=True)
    shutil.copy(src, dst)
    if src.name == "trip_inquiry.test.json":  # its initial session is read beside it
        shutil.copy(src.parent / "initial.session.json", dst.parent / "initial.session.json")
    return dst


def test_every_real_adk_set_is_exercised() -> None:
    assert len(ADK_SETS) == 11  # ten ADK eval sets and one legacy test file


def test_ces_to_adk_keeps_the_golden_expectations(tmp_path: Path) -> None:
    source = _copy(OFF_RAILS, tmp_path)
    target = tmp_path / "agent" / "off_rails.evalset.json"
    target.parent.mkdir()
    convert_file(source, target, "adk")
    data = json.loads(target.read_text(encoding="utf-8"))
    adk_set = AdkEvalSet.model_validate(data)
    # google-adk itself now sees the expected end_session call in the last turn.
    last = adk_set.eval_cases[0].conversation[-1]  # type: ignore[index]
    uses = last.intermediate_data.tool_uses  # type: ignore[union-attr]
    assert [(u.name, u.args) for u in uses] == [
        ("end_session", {"reason": "retry_exhausted", "session_escalated": True})
    ]
    loaded = LocalEvalSetsManager(str(tmp_path)).get_eval_set("agent", "off_rails")
    assert (
        loaded is not None
        and loaded.eval_cases[0].conversation == adk_set.eval_cases[0].conversation
    )
    # ... and assay reads back every expectation with its note.
    back = load(target).cases[0].reference or []
    assert [e.note for e in back[3].expectations] == [
        "Check_Escalated",
        "Check_End_Session_Called",
    ]


def test_ces_reply_expectations_become_adk_final_responses(tmp_path: Path) -> None:
    source = _copy(BELLA / "Event_Prefill_-_Party_Size_Skipped.json", tmp_path)
    target = tmp_path / "prefill.evalset.json"
    convert_file(source, target, "adk")
    adk_set = AdkEvalSet.model_validate(json.loads(target.read_text(encoding="utf-8")))
    case = adk_set.eval_cases[0]
    finals = [inv.final_response.parts[0].text for inv in case.conversation]  # type: ignore[union-attr, index]
    assert finals == ["welcome", "date"]
    # The first turn's session variables are ADK's session state.
    assert case.session_input is not None
    assert case.session_input.state == {"event_data": {"party_size": 4}}


@pytest.mark.parametrize("rel", ADK_SETS)
def test_adk_to_ces_to_adk_keeps_tool_calls_and_final_responses(rel: str, tmp_path: Path) -> None:
    source = _copy(rel, tmp_path)
    original = load(source)
    middle = tmp_path / "middle.json"
    done = convert_file(source, middle, "ces", lossy=True)
    assert detect_format(read_structured(middle), middle) == "ces"
    back_file = tmp_path / "back.evalset.json"
    if all(c.scenario is not None for c in original.cases):
        # CES scenarios have no ADK starting prompt: nothing to write, and it says so.
        with pytest.raises(InputError, match="can be written as an ADK eval set"):
            convert_file(middle, back_file, "adk", lossy=True)
        return
    again_done = convert_file(middle, back_file, "adk", lossy=True)
    back = {c.id: c for c in load(back_file).cases}
    # Only scenarios do not come back: CES scenarios have no ADK starting prompt.
    assert {c.id for c in done.evalset.cases} - set(back) == {
        c.id for c in original.cases if c.scenario is not None
    }
    assert all(loss.field.startswith("the case") for loss in again_done.dropped)
    for case in original.cases:
        if case.id not in back:
            continue
        again = back[case.id]
        turns = case.reference or []
        got = again.reference or []
        assert [t.tool_calls() for t in turns] == [t.tool_calls() for t in got]
        assert [t.final_response for t in turns] == [t.final_response for t in got]
        assert [t.user_input.text for t in turns] == [t.user_input.text for t in got]
        state = case.session_input.state if case.session_input else {}
        assert (again.session_input.state if again.session_input else {}) == state


@pytest.mark.parametrize("rel", ADK_SETS)
def test_ces_output_is_a_valid_ces_resource(rel: str, tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    convert_file(_copy(rel, tmp_path), target, "ces", lossy=True)
    text = target.read_text(encoding="utf-8")
    assert "adk_unmapped" not in text and '"assay"' not in text
    data = json.loads(text)
    if "evaluations" in data:
        # Several evaluations: the shape of CES's ListEvaluationsResponse.
        resources = data.pop("evaluationExpectations", [])
        ces_v1beta.ListEvaluationsResponse.from_json(json.dumps(data), ignore_unknown_fields=False)
        for item in resources:
            ces_v1beta.EvaluationExpectation.from_json(
                json.dumps(item), ignore_unknown_fields=False
            )
    else:
        ces_v1beta.Evaluation.from_json(text, ignore_unknown_fields=False)


def test_adk_state_becomes_ces_session_variables(tmp_path: Path) -> None:
    rel = "adk/trip_planner/trip_inquiry_multi_turn.test.json"
    state = load(REALWORLD / rel).cases[0].session_input.state  # type: ignore[union-attr]
    assert state
    target = tmp_path / "trip.json"
    convert_file(_copy(rel, tmp_path), target, "ces", lossy=True)
    first = json.loads(target.read_text(encoding="utf-8"))["golden"]["turns"][0]["steps"][0]
    assert first == {"userInput": {"variables": state}}


def test_adk_reference_answer_becomes_a_ces_agent_response(tmp_path: Path) -> None:
    rel = "adk/home_automation/simple_test.test.json"
    target = tmp_path / "home.json"
    convert_file(_copy(rel, tmp_path), target, "ces", lossy=True)
    steps = json.loads(target.read_text(encoding="utf-8"))["golden"]["turns"][0]["steps"]
    replies = [
        s["expectation"]["agentResponse"]
        for s in steps
        if "agentResponse" in s.get("expectation", {})
    ]
    assert replies == [
        {"role": "agent", "chunks": [{"text": "I have set the device_2 status to off."}]}
    ]


@pytest.mark.parametrize(
    "rel",
    [
        "adk/conversation_scenario/conversation_scenario.test.json",
        "adk/live_non_blocking_tool_agent/live_non_blocking_tool_agent.evalset.json",
        "adk/samples_user_simulation/conversation_scenarios.json",
    ],
)
def test_ces_files_written_from_adk_scenarios_read_back(rel: str, tmp_path: Path) -> None:
    target = tmp_path / "scenarios.json"
    done = convert_file(_copy(rel, tmp_path), target, "ces", lossy=True)
    assert detect_format(read_structured(target), target) == "ces"
    assert load(target).cases == done.evalset.cases


def test_convert_refuses_a_lossy_conversion_naming_case_and_field(tmp_path: Path) -> None:
    source = _copy("adk/home_automation/simple_test.test.json", tmp_path)
    target = tmp_path / "home.json"
    result = runner.invoke(app, ["convert", str(source), str(target), "--to", "ces"])
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "case 'tests/integration/fixture/home_automation_agent/simple_test.test.json'" in message
    assert "reference[].id" in message and "--lossy" in message
    assert "Traceback" not in result.output
    assert not target.exists()
    lossy = runner.invoke(app, ["convert", str(source), str(target), "--to", "ces", "--lossy"])
    assert lossy.exit_code == 0, lossy.output
    assert "reference[].id: 1 (in 1 case)" in lossy.output
    assert "created_at: 1 (in 1 case)" in lossy.output
    assert "the set's created_at: 1\n" in lossy.output
    assert target.exists()


def test_a_lossless_conversion_prints_no_drops(tmp_path: Path) -> None:
    source = _copy(OFF_RAILS, tmp_path)
    target = tmp_path / "off.evalset.json"
    result = runner.invoke(app, ["convert", str(source), str(target), "--to", "adk"])
    assert result.exit_code == 0, result.output
    assert "dropped" not in result.output
    again = tmp_path / "again.json"
    back = runner.invoke(app, ["convert", str(target), str(again), "--to", "ces"])
    assert back.exit_code == 0, back.output
    assert load(again).cases == ces.fit(load(source))[0].cases


def test_fit_is_what_the_writers_write() -> None:
    evalset = load(OFF_RAILS)
    fitted, losses = fit(evalset, "adk")
    assert losses == [] and adk.fit(fitted) == (fitted, [])
