"""Editing eval set files in place: the real-world files of every format keep the text
of the cases not edited, add-then-remove gives back the bytes, an update keeps what
assay does not know, and hostile input is refused with the file or field named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cases import add_from_trace, list_cases, new_file, remove_case
from assay.cases.api import add_cases
from assay.cases.edit import plan_add, save
from assay.cases.golden import golden_case
from assay.cases.jsonedit import ArrayText
from assay.cases.sources import Played
from assay.cases.target import read_target
from assay.cli import app
from assay.core.cases import AgentTransfer, Step, ToolCall, ToolResponse, Turn, UserInput
from assay.errors import InputError
from assay.formats import load

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "data" / "realworld"
TRACE = REPO / "examples" / "traces" / "openinference.otlp.json"
EDITABLE = [
    "adk/camelcase_founder_validation/founder_validation_agent_eval.evalset.json",
    "adk/conversation_scenario/conversation_scenario.test.json",
    "adk/crypto_payroll/crypto_payroll_eval_set.evalset.json",
    "adk/elicitation_agent/elicitation_flow.test.json",
    "adk/home_automation/simple_test.test.json",
    "adk/live_non_blocking_tool_agent/live_non_blocking_tool_agent.evalset.json",
    "adk/long_horizon_harness/plot_artifact_journey.evalset.json",
    "adk/trip_planner/trip_inquiry_multi_turn.test.json",
    "adk/trpc_agent_go/math-basic.evalset.json",
    "ces/bella_notte/evaluations/Off-the-Rails_-_Repeated_Off-Topic.json",
    "vertex/customer_support_eval.json",
    "vertex/eval_dataset.json",
    "vertex/fx-dataset.json",
    "vertex/smoke-dataset.json",
]


def played(case_id: str = "paris_rome", *, turns: int = 1) -> Played:
    turn = Turn(
        user_input=UserInput(text="Find me a flight from Paris to Rome"),
        steps=[
            Step(tool_call=ToolCall(id="call-1", name="find_flights", args={"origin": "Paris"})),
            Step(
                tool_response=ToolResponse(
                    name="find_flights", response={"id": "PR-1"}, latency_s=0.2
                )
            ),
        ],
        final_response="Flight PR-1 goes to Rome.",
        latency_s=1.5,
    )
    return Played(case_id, [turn] * turns, "test")


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize("name", EDITABLE)
def test_real_files_keep_their_other_cases_byte_identical(tmp_path: Path, name: str) -> None:
    source = REAL / name
    copy = tmp_path / source.name
    shutil.copy(source, copy)
    original = copy.read_text(encoding="utf-8")
    before = read_target(copy)
    old = []
    if not before.bare_evaluation:
        old = [before.elements().element(i) for i in range(len(before.elements().spans))]
    _fmt, listed = list_cases(copy)
    assert copy.read_text(encoding="utf-8") == original  # listing writes nothing

    edit = add_cases(copy, [played()])
    assert edit.added == ["paris_rome"] and edit.validated_with
    after = read_target(copy)
    elements = after.elements()
    if before.bare_evaluation:  # one CES Evaluation became a list of two
        assert json.loads(elements.element(0)) == json.loads(original)
    else:
        assert [elements.element(i) for i in range(len(old))] == old
    assert [c.id for c in load(copy).cases][-1] == "paris_rome"
    assert len(load(copy).cases) == len(listed) + 1

    remove_case(copy, ["paris_rome"])
    if before.bare_evaluation:
        assert json.loads(copy.read_text(encoding="utf-8")) == {
            "evaluations": [json.loads(original)]
        }
    else:
        assert copy.read_text(encoding="utf-8") == original


def test_update_replaces_expectations_and_keeps_unknown_fields_and_key_order(
    tmp_path: Path,
) -> None:
    target = tmp_path / "set.evalset.json"
    new_file(target)
    add_cases(target, [played()])
    data = json.loads(target.read_text())
    case = data["eval_cases"][0]
    # a reviewer's own field and a reordered case: both survive an update
    reordered = {"reviewer_note": "keep me", **{k: case[k] for k in reversed(list(case))}}
    data["eval_cases"][0] = reordered
    target.write_text(json.dumps(data, indent=4) + "\n")
    changed = played()
    changed.turns[0].final_response = "PR-1 it is."
    edit = add_cases(target, [changed], update=True)
    assert edit.updated == ["paris_rome"]
    written = json.loads(target.read_text())["eval_cases"][0]
    assert list(written) == list(reordered)
    assert written["reviewer_note"] == "keep me"
    assert written["conversation"][0]["final_response"]["parts"][0]["text"] == "PR-1 it is."
    # four-space indentation of the file is kept
    assert '\n            "eval_id": "paris_rome"' in target.read_text()
    # blessing the same again changes nothing, and says so
    again = add_cases(target, [changed], update=True)
    assert again.unchanged == ["paris_rome"] and not again.changed


def test_golden_turns_leave_out_what_was_measured(tmp_path: Path) -> None:
    target = tmp_path / "set.evalset.json"
    new_file(target)
    add_cases(target, [played()])
    (turn,) = load(target).cases[0].reference or []
    assert turn.latency_s is None
    assert [s.tool_call.id for s in turn.steps if s.tool_call] == [None]
    assert [s.tool_response.latency_s for s in turn.steps if s.tool_response] == [None]
    mocks = [e.mock_tool_response for e in turn.expectations]
    assert mocks == [ToolResponse(name="find_flights", response={"id": "PR-1"})]


@pytest.mark.parametrize(
    "fmt,suffix", [("adk", ".json"), ("ces", ".json"), ("vertex", ".json"), ("vertex", ".jsonl")]
)
def test_new_add_rm_in_every_format(tmp_path: Path, fmt: str, suffix: str) -> None:
    target = tmp_path / f"cases{suffix}"
    code, out = cli("cases", "new", str(target), "--format", fmt)
    assert code == 0, out
    empty = target.read_bytes()
    add_from_trace(target, TRACE)
    add_cases(target, [played("second")])
    assert list_cases(target) == (fmt, list_cases(target)[1])
    assert [c.id for c in load(target).cases] == ["paris_rome", "second"]
    remove_case(target, ["second"])
    remove_case(target, ["paris_rome"])
    assert target.read_bytes() == empty


def test_compact_and_tab_indented_files_keep_their_layout(tmp_path: Path) -> None:
    compact = tmp_path / "compact.evalset.json"
    compact.write_text('{"eval_set_id": "c", "eval_cases": []}')
    add_cases(compact, [played()])
    text = compact.read_text()
    assert "\n" not in text and json.loads(text)["eval_cases"][0]["eval_id"] == "paris_rome"
    tabs = tmp_path / "tabs.evalset.json"
    tabs.write_text('{\n\t"eval_set_id": "t",\n\t"eval_cases": []\n}\n')
    add_cases(tabs, [played()])
    assert '\n\t\t{\n\t\t\t"eval_id": "paris_rome",' in tabs.read_text()
    remove_case(tabs, ["paris_rome"])
    assert tabs.read_text() == '{\n\t"eval_set_id": "t",\n\t"eval_cases": []\n}\n'


def test_array_text_spans_survive_strings_with_brackets() -> None:
    text = '{"a": "]}[", "eval_cases": [ {"x": "],"} , {"y": [1, 2]} ]}'
    arr = ArrayText.find(text, ["eval_cases"], "f")
    assert [arr.element(i) for i in range(2)] == ['{"x": "],"}', '{"y": [1, 2]}']
    assert arr.remove(0) == '{"a": "]}[", "eval_cases": [ {"y": [1, 2]} ]}'
    assert arr.remove(1) == '{"a": "]}[", "eval_cases": [ {"x": "],"} ]}'


def test_a_file_changed_since_the_edit_was_planned_is_not_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "set.evalset.json"
    new_file(target)
    edit = plan_add(target, [golden_case("paris_rome", played().turns)])
    target.write_text(target.read_text().replace('"set"', '"renamed"'))
    with pytest.raises(InputError, match="changed on disk"):
        save(edit)
    assert "paris_rome" not in target.read_text()


def test_hostile_input_exits_2_naming_the_problem(tmp_path: Path) -> None:
    broken = tmp_path / "broken.evalset.json"
    broken.write_text('{"eval_set_id": "b", "eval_cases": [')
    code, out = cli("cases", "list", str(broken))
    assert code == 2 and "broken.evalset.json" in out and "not valid JSON" in out

    yaml_file = tmp_path / "set.yaml"
    yaml_file.write_text("evaluations: []\n")
    code, out = cli("cases", "add", str(yaml_file), "--from-trace", str(TRACE))
    assert code == 2 and ".yaml files are not edited" in out

    target = tmp_path / "set.evalset.json"
    new_file(target)
    code, out = cli("cases", "add", str(target), "--from-trace", str(TRACE), "--from-run", "latest")
    assert code == 2 and "exactly one of" in out
    code, out = cli("cases", "add", str(target), "--from-trace", str(TRACE), "--session", "nope")
    assert code == 2 and "no session of" in out and "'nope'" in out
    code, out = cli("cases", "rm", str(target), "ghost")
    assert code == 2 and "has no case 'ghost'" in out
    code, out = cli(
        "cases", "add", str(target), "--from-trace", str(REAL / "vertex" / "fx-dataset.json")
    )
    assert code == 2 and "not traces" in out
    code, out = cli("cases", "new", str(tmp_path / "x.json"), "--format", "mlflow")
    assert code == 2 and "unknown format 'mlflow'" in out
    not_conversation = tmp_path / "conv.json"
    not_conversation.write_text('{"turns": [{"bogus": 1}]}')
    code, out = cli("cases", "add", str(target), "--from-ces", str(not_conversation))
    assert code == 2 and "is not a CES Conversation" in out
    assert json.loads(target.read_text()) == {"eval_set_id": "set", "eval_cases": []}
    assert "Traceback" not in out


def test_a_multi_turn_case_is_a_vertex_row_with_history(tmp_path: Path) -> None:
    target = tmp_path / "rows.jsonl"
    new_file(target, "vertex")
    add_cases(target, [played(turns=2)])
    (case,) = load(target).cases
    turns = case.reference or []
    assert [t.user_input.text for t in turns] == ["Find me a flight from Paris to Rome"] * 2
    assert turns[-1].final_response == "Flight PR-1 goes to Rome."


def test_what_a_format_cannot_hold_is_refused_and_nothing_written(tmp_path: Path) -> None:
    target = tmp_path / "rows.jsonl"
    new_file(target, "vertex")
    transfer = played()
    transfer.turns[0].steps.append(Step(agent_transfer=AgentTransfer(target_agent="billing")))
    with pytest.raises(InputError) as refused:
        add_cases(target, [transfer])
    assert "case 'paris_rome'" in str(refused.value)
    assert "agent_transfer step has no Vertex trajectory form" in str(refused.value)
    assert target.read_text() == ""


def test_an_adk_file_google_adk_refuses_as_it_was_is_still_edited_and_says_so(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "camel.evalset.json"
    shutil.copy(REAL / EDITABLE[0], copy)
    edit = add_cases(copy, [played()])
    assert edit.validated_with == [
        "assay's adk reader",
        "not google-adk EvalSet: it refuses the file as it was",
    ]


def test_a_case_from_a_ces_conversation(tmp_path: Path) -> None:
    from google.cloud import ces_v1beta as ces
    from google.protobuf import struct_pb2

    args = struct_pb2.Struct()
    args.update({"city": "Paris"})
    answer = struct_pb2.Struct()
    answer.update({"temperature_c": 21})
    conversation = ces.Conversation(
        name="projects/p/locations/l/apps/a/conversations/weather-1",
        turns=[
            ces.Conversation.Turn(
                messages=[
                    ces.Message(role="user", chunks=[ces.Chunk(text="Weather in Paris?")]),
                    ces.Message(
                        role="agent",
                        chunks=[
                            ces.Chunk(tool_call=ces.ToolCall(tool="get_weather", args=args)),
                            ces.Chunk(
                                tool_response=ces.ToolResponse(tool="get_weather", response=answer)
                            ),
                            ces.Chunk(text="It is 21 degrees in Paris."),
                        ],
                    ),
                ]
            )
        ],
    )
    source = tmp_path / "conversation.json"
    source.write_text(ces.Conversation.to_json(conversation))
    target = tmp_path / "evaluations.json"
    new_file(target, "ces")
    code, out = cli("cases", "add", str(target), "--from-ces", str(source))
    assert code == 0, out
    assert "added weather-1" in out and "google-cloud-ces Evaluation" in out
    (case,) = load(target).cases
    (turn,) = case.reference or []
    assert turn.user_input.text == "Weather in Paris?"
    kinds = [
        (e.tool_call.name if e.tool_call else None, e.agent_response, e.mock_tool_response)
        for e in turn.expectations
    ]
    assert kinds == [
        ("get_weather", None, None),
        (None, "It is 21 degrees in Paris.", None),
        (None, None, ToolResponse(name="get_weather", response={"temperature_c": 21})),
    ]
    assert turn.expectations[0].tool_call == ToolCall(name="get_weather", args={"city": "Paris"})


@pytest.mark.parametrize("fmt", ["adk", "ces"])
def test_write_cases_writes_scenarios_too(tmp_path: Path, fmt: str) -> None:
    from assay.cases import write_cases
    from assay.core.cases import EvalCase, Scenario

    target = tmp_path / f"scenarios.{fmt}.json"
    new_file(target, fmt)
    plan = "Insist on 12 people; stop when told to call the events team."
    if fmt == "adk":  # ADK's conversation_scenario: an opening message and a plan
        scenario = Scenario(starting_prompt="A table for 12, please.", conversation_plan=plan)
    else:  # a CES scenario: the user's task
        scenario = Scenario(task=plan, max_turns=5)
    written = write_cases(target, [EvalCase(id="large_party", scenario=scenario)])
    assert written.added == ["large_party"] and len(written.validated_with) == 2
    (case,) = load(target).cases
    assert case.scenario is not None
    assert plan in (case.scenario.conversation_plan, case.scenario.task)


def test_blessing_the_one_evaluation_of_a_ces_file_keeps_it_one_evaluation(tmp_path: Path) -> None:
    copy = tmp_path / "off_rails.json"
    shutil.copy(REAL / "ces/bella_notte/evaluations/Off-the-Rails_-_Repeated_Off-Topic.json", copy)
    original = json.loads(copy.read_text(encoding="utf-8"))
    (case,) = load(copy).cases
    turn = Turn(user_input=UserInput(text="Hi there"), final_response="Welcome to Bella Notte!")
    edit = add_cases(copy, [Played(case.id, [turn], "test")], update=True)
    assert edit.updated == [case.id]
    written = json.loads(copy.read_text(encoding="utf-8"))
    assert "evaluations" not in written and written["name"] == original["name"]
    # what the evaluation says beside its turns is kept: names, tags, datasets, rubric refs
    for key in ("displayName", "description", "tags", "evaluationDatasets"):
        assert written[key] == original[key]
    assert (
        written["golden"]["evaluationExpectations"] == original["golden"]["evaluationExpectations"]
    )
    assert list(written) == list(original)
    (blessed,) = load(copy).cases
    assert [t.user_input.text for t in blessed.reference or []] == ["Hi there"]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_one_write_updates_some_cases_and_adds_others(tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"rows{suffix}"
    new_file(target, "vertex")
    add_cases(target, [played("a"), played("b"), played("c")])
    untouched = read_target(target).elements().element(1)
    changed_a, changed_c = played("a"), played("c")
    changed_a.turns[0].final_response = "A changed."
    changed_c.turns[0].final_response = "C changed."
    edit = add_cases(target, [changed_c, played("d"), changed_a, played("e")], update=True)
    assert edit.updated == ["c", "a"] and edit.added == ["d", "e"]
    cases = load(target).cases
    assert [c.id for c in cases] == ["a", "b", "c", "d", "e"]
    finals = [(c.reference or [])[-1].final_response for c in cases]
    assert finals == [
        "A changed.",
        *["Flight PR-1 goes to Rome."] * 1,
        "C changed.",
        *["Flight PR-1 goes to Rome."] * 2,
    ]
    assert read_target(target).elements().element(1) == untouched


def test_blessing_a_ces_case_that_refers_to_rubrics_of_its_file(tmp_path: Path) -> None:
    from assay.cases.golden import for_format
    from assay.core.cases import EvalCase, EvalSet, Rubric
    from assay.formats import dump

    golden = (for_format(golden_case("x", played().turns), "ces").reference or [])[0]
    rubric = Rubric(id="Polite", text="The agent is polite.")
    evalset = EvalSet(id="set", cases=[
        EvalCase(id="polite_case", reference=[golden], rubrics=[rubric]),
        EvalCase(id="other", reference=[golden]),
    ])  # fmt: skip
    target = tmp_path / "evaluations.json"
    target.write_text(json.dumps(dump(evalset, "ces"), indent=2) + "\n", encoding="utf-8")
    assert json.loads(target.read_text())["evaluationExpectations"]  # the rubric resource
    changed = played("polite_case")
    changed.turns[0].final_response = "Certainly! Flight PR-1 goes to Rome."
    edit = add_cases(target, [changed], update=True)
    assert edit.updated == ["polite_case"]
    cases = {c.id: c for c in load(target).cases}
    assert [r.id for r in cases["polite_case"].rubrics] == ["Polite"]
    said = [e.agent_response for e in (cases["polite_case"].reference or [])[0].expectations]
    assert "Certainly! Flight PR-1 goes to Rome." in said


def test_blessing_a_scenario_run_makes_the_case_a_golden_conversation(tmp_path: Path) -> None:
    copy = tmp_path / "scenario.test.json"
    shutil.copy(REAL / "adk/conversation_scenario/conversation_scenario.test.json", copy)
    (case,) = load(copy).cases
    assert case.scenario is not None and case.reference is None
    edit = add_cases(copy, [played(case.id, turns=2)], update=True)
    assert edit.updated == [case.id]
    (blessed,) = load(copy).cases
    assert blessed.scenario is None and len(blessed.reference or []) == 2
    written = json.loads(copy.read_text(encoding="utf-8"))["eval_cases"][0]
    assert "conversation_scenario" not in written and len(written["conversation"]) == 2
    assert blessed.session_input == case.session_input


def test_a_ces_conversation_without_the_ces_extra_says_which_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    import google.cloud

    monkeypatch.setitem(sys.modules, "google.cloud.ces_v1beta", None)
    monkeypatch.delattr(google.cloud, "ces_v1beta", raising=False)
    source = tmp_path / "conversation.json"
    source.write_text('{"name": "c"}')
    target = tmp_path / "set.evalset.json"
    new_file(target)
    code, out = cli("cases", "add", str(target), "--from-ces", str(source))
    assert code == 2 and "pip install -e '.[ces]'" in out
