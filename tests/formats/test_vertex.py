"""Vertex AI rows and Gen AI `eval_cases` datasets: loading, writing, errors."""

from __future__ import annotations

import gc
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from assay.core.cases import EvalCase, EvalSet, Rubric, RubricType, Scenario, Turn, UserInput
from assay.errors import InputError
from assay.formats import load, load_rows, vertex
from assay.formats import mapping as m

REALWORLD = Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld" / "vertex"


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_name": name, "tool_input": args}


def _load(rows: Any, mapping: dict[str, str] | None = None, file: str | None = "d.json") -> EvalSet:
    return vertex.load_data(rows, file=file, mapping=mapping)


FULL_ROW = {
    "prompt": "Turn off the bedroom light",
    "response": "Done.",
    "reference": "The light is off.",
    "predicted_trajectory": [_call("set_device", device="bedroom", on=False)],
    "reference_trajectory": [_call("lookup"), _call("set_device", device="bedroom", on=False)],
}


# ----------------------------------------------------------------------------- rows


def test_a_row_becomes_a_reference_and_an_actual_turn() -> None:
    case = _load([FULL_ROW]).cases[0]
    assert case.id == "row-0"
    assert case.reference is not None and case.actual is not None
    ref, act = case.reference[0], case.actual[0]
    assert ref.user_input.text == act.user_input.text == "Turn off the bedroom light"
    assert [c.name for c in ref.tool_calls()] == ["lookup", "set_device"]
    assert ref.tool_calls()[0].args == {}
    assert act.tool_calls()[0].args == {"device": "bedroom", "on": False}
    assert (ref.final_response, act.final_response) == ("The light is off.", "Done.")


def test_fast_built_cases_equal_validated_ones() -> None:
    case = _load([FULL_ROW]).cases[0]
    rebuilt = EvalCase.model_validate(case.model_dump())
    assert rebuilt == case
    assert case.model_fields_set == set(EvalCase.model_fields)
    other = _load([FULL_ROW]).cases[0]
    case.actual[0].final_response = "changed"  # type: ignore[index]
    case.tags.append("mine")
    assert other.actual[0].final_response == "Done." and other.tags == []  # type: ignore[index]
    assert other.actual[0].model_fields_set == set(Turn.model_fields)  # type: ignore[index]


def test_ids_come_from_id_columns_else_row_index() -> None:
    rows = [
        {"id": "a", "prompt": "p"},
        {"eval_case_id": "b", "prompt": "p"},
        {"eval_id": 7, "prompt": "p"},
        {"prompt": "p"},
    ]
    assert [c.id for c in _load(rows).cases] == ["a", "b", "7", "row-3"]


def test_prompt_only_rows_drive_an_agent_and_response_only_rows_are_recorded() -> None:
    prompt_only, recorded = _load([{"prompt": "hi"}, {"prompt": "hi", "response": "yo"}]).cases
    assert prompt_only.actual is None
    assert prompt_only.reference == [Turn(user_input=UserInput(text="hi"))]
    assert recorded.reference is None
    assert recorded.actual is not None and recorded.actual[0].final_response == "yo"


def test_unknown_columns_go_to_metadata_and_are_written_back() -> None:
    row = {**FULL_ROW, "difficulty": "easy", "extra": {"k": [1, 2]}}
    evalset = _load([row])
    assert evalset.cases[0].metadata == {"difficulty": "easy", "extra": {"k": [1, 2]}}
    written = vertex.dump(evalset)[0]
    assert written["difficulty"] == "easy" and written["extra"] == {"k": [1, 2]}
    assert _load(vertex.dump(evalset)) == evalset


def test_latency_and_failure_fill_the_actual_turn() -> None:
    ok, failed = _load(
        [
            {"prompt": "p", "response": "r", "latency_in_seconds": 1.5, "failure": 0},
            {"prompt": "p", "latency_in_seconds": "0.25", "failure": "1"},
        ]
    ).cases
    assert ok.actual is not None and ok.actual[0].latency_s == 1.5
    assert ok.actual[0].error is None
    assert failed.actual is not None and failed.actual[0].error
    assert failed.actual[0].latency_s == 0.25
    assert vertex.dump(_load([{"prompt": "p", "failure": 1}]))[0]["failure"] == 1


def test_expected_trajectory_outputs_and_step_fields_survive_a_round_trip() -> None:
    row = {
        "input": "order status?",
        "expected_final_response": "processing",
        "expected_trajectory": [
            {
                "step_number": 1,
                "tool_name": "status",
                "tool_input": {"id": 1},
                "tool_output": None,
                "reasoning": "look it up",
            },
            {"step_number": 2, "tool_name": "answer", "tool_input": {}, "tool_output": "ok"},
        ],
    }
    evalset = _load([row])
    ref = evalset.cases[0].reference[0]  # type: ignore[index]
    assert ref.user_input.text == "order status?" and ref.final_response == "processing"
    assert [s.kind for s in ref.steps] == ["tool_call", "tool_call", "tool_response"]
    assert ref.tool_responses()[0].response == "ok"
    written = vertex.dump(evalset)[0]
    assert written["expected_trajectory"][0]["reasoning"] == "look it up"
    assert written["expected_trajectory"][1]["tool_output"] == "ok"
    assert _load([written]) == evalset


def test_both_alias_columns_keep_the_second_as_metadata() -> None:
    case = _load([{"prompt": "a", "input": "b"}]).cases[0]
    assert case.reference[0].user_input.text == "a"  # type: ignore[index]
    assert case.metadata == {"input": "b"}


def test_case_field_columns_load_and_write_back() -> None:
    row = {
        "prompt": "p",
        "tags": ["x"],
        "description": "d",
        "expected_response": "e",
        "expected_facts": ["f"],
        "guidelines": {"tone": ["polite"]},
        "expected_retrieved_context": [{"doc_uri": "u"}],
        "session_input": {"app_name": "a", "state": {"k": 1}},
        "final_session_state": {"k": 2},
    }
    evalset = _load([row])
    case = evalset.cases[0]
    assert case.tags == ["x"] and case.guidelines == {"tone": ["polite"]}
    assert case.session_input is not None and case.session_input.state == {"k": 1}
    assert case.expected_retrieved_context is not None
    assert case.expected_retrieved_context[0].doc_uri == "u"
    written = vertex.dump(evalset)
    # The one-turn answer is written where EvalTask reads it (`reference`); to assay's
    # metrics it is the same reference answer (docs/convert.md).
    assert written[0]["reference"] == "e" and "expected_response" not in written[0]
    fitted, losses = vertex.fit(evalset)
    assert losses == [] and fitted.cases[0].reference[0].final_response == "e"  # type: ignore[index]
    assert _load(written) == fitted


# ----------------------------------------------------------------------------- inputs


def test_csv_rows_with_json_string_trajectories(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    vertex.write(
        _load([FULL_ROW, {"prompt": "q", "response": "r", "latency_in_seconds": 2.0}]), path
    )
    text = path.read_text(encoding="utf-8")
    assert '""tool_name"": ""set_device""' in text  # trajectories written as JSON strings
    evalset = load(path)
    assert [c.name for c in evalset.cases[0].reference[0].tool_calls()] == [  # type: ignore[index]
        "lookup",
        "set_device",
    ]
    assert evalset.cases[1].actual[0].latency_s == 2.0  # type: ignore[index]
    assert evalset.cases[1].reference is None  # the empty CSV cells are absent
    path2 = tmp_path / "again.csv"
    vertex.write(evalset, path2)
    assert load(path2).cases == evalset.cases


def test_hand_written_csv(tmp_path: Path) -> None:
    path = tmp_path / "hand.csv"
    traj = json.dumps([_call("search", q="x")]).replace('"', '""')
    path.write_text(f'prompt,predicted_trajectory,note\nfind x,"{traj}",\n', encoding="utf-8")
    case = load(path, "vertex").cases[0]
    assert case.actual[0].tool_calls()[0].args == {"q": "x"}  # type: ignore[index]
    assert case.metadata == {}


def test_dataframe_rows_treat_nan_as_absent() -> None:
    frame = pd.DataFrame(
        {
            "prompt": ["a", "b"],
            "response": ["ra", math.nan],
            "reference_trajectory": [[_call("t")], [_call("u", n=1)]],
        }
    )
    evalset = load_rows(frame)
    assert evalset.id == "dataset"
    first, second = evalset.cases
    assert first.actual is not None and first.actual[0].final_response == "ra"
    assert second.actual is None
    assert second.reference[0].tool_calls()[0].args == {"n": 1}  # type: ignore[index]


def test_a_dict_of_columns_is_rows() -> None:
    data = {"prompt": ["a", "b"], "response": ["x", "y"]}
    assert vertex.detect(None, data)
    evalset = _load(data)
    assert [c.actual[0].final_response for c in evalset.cases] == ["x", "y"]  # type: ignore[index]
    with pytest.raises(InputError, match="different lengths"):
        _load({"prompt": ["a", "b"], "response": ["x"]})


def test_jsonl_write_and_load(tmp_path: Path) -> None:
    evalset = _load([FULL_ROW, {"id": "two", "prompt": "p"}])
    path = tmp_path / "d.jsonl"
    vertex.write(evalset, path)
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2
    assert load(path) == evalset


def test_jsonl_round_trip_keeps_unicode_line_separators(tmp_path: Path) -> None:
    # JSON writes U+2028 / U+0085 unescaped (ensure_ascii=False); they are not line ends.
    evalset = _load([{"prompt": "one\u2028two", "response": "a\x85b\u2029c"}])
    path = tmp_path / "d.jsonl"
    vertex.write(evalset, path)
    assert "\u2028" in path.read_text(encoding="utf-8")
    assert load(path) == evalset


# ----------------------------------------------------------------------------- eval_cases


def test_gen_ai_eval_cases_with_content_prompts_candidates_and_rubrics() -> None:
    data = {
        "description": "set",
        "owner": "me",
        "eval_cases": [
            {
                "eval_case_id": "c1",
                "prompt": {"role": "user", "parts": [{"text": "Hello "}, {"text": "there"}]},
                "responses": [{"response": {"parts": [{"text": "Hi!"}]}}],
                "reference": {"response": {"role": "model", "parts": [{"text": "Hello!"}]}},
                "rubric_groups": {
                    "quality": {
                        "group_id": "quality",
                        "rubrics": [
                            {
                                "rubric_id": "r1",
                                "content": {"property": {"description": "Kind"}},
                                "type": "FINAL_RESPONSE_QUALITY",
                            },
                            {
                                "rubric_id": "r2",
                                "content": {"property": {"description": "Short"}},
                                "type": "LENGTH",
                                "importance": "HIGH",
                            },
                        ],
                    }
                },
            }
        ],
    }
    evalset = _load(data)
    assert evalset.description == "set" and evalset.metadata == {"owner": "me"}
    case = evalset.cases[0]
    assert case.reference[0].user_input.text == "Hello there"  # type: ignore[index]
    assert case.reference[0].final_response == "Hello!"  # type: ignore[index]
    assert case.actual[0].final_response == "Hi!"  # type: ignore[index]
    assert case.rubrics == [
        Rubric(id="r1", text="Kind", type=RubricType.FINAL_RESPONSE_QUALITY),
        Rubric(id="r2", text="Short"),
    ]
    written = vertex.dump(evalset)
    rubric = written["eval_cases"][0]["rubric_groups"]["quality"]["rubrics"][1]
    assert rubric == {
        "rubric_id": "r2",
        "content": {"property": {"description": "Short"}},
        "type": "LENGTH",
        "importance": "HIGH",
    }
    assert _load(written) == evalset


def test_rubrics_from_another_source_get_a_group() -> None:
    evalset = EvalSet(
        id="s",
        cases=[
            EvalCase(
                id="c",
                reference=[Turn(user_input=UserInput(text="p"))],
                rubrics=[Rubric(id="r", text="t")],
            )
        ],
    )
    row = vertex.dump(evalset)[0]
    assert row["rubric_groups"] == {
        "rubrics": {"rubrics": [{"rubric_id": "r", "content": {"property": {"description": "t"}}}]}
    }
    assert _load([row]).cases == evalset.cases


# ----------------------------------------------------------------------------- mapping


def test_column_mapping_renames_before_interpretation() -> None:
    rows = [{"question": "q", "answer": "a", "calls": [_call("t")]}]
    mapping = {"question": "prompt", "answer": "reference", "calls": "reference_trajectory"}
    ref = _load(rows, mapping).cases[0].reference[0]  # type: ignore[index]
    assert (ref.user_input.text, ref.final_response) == ("q", "a")
    assert ref.tool_calls()[0].name == "t"


def test_column_mapping_swaps_and_reports_bad_sources() -> None:
    swapped = _load(
        [{"prompt": "x", "response": "y"}], {"prompt": "response", "response": "prompt"}
    )
    assert swapped.cases[0].actual[0].final_response == "x"  # type: ignore[index]
    with pytest.raises(InputError) as info:
        _load([{"question": "q"}], {"query": "prompt"})
    assert "'query' is not a column" in str(info.value) and "question" in str(info.value)
    with pytest.raises(InputError, match="did you mean question=prompt"):
        _load([{"question": "q"}], {"prompt": "question"})
    with pytest.raises(InputError, match="overwrite the existing column 'prompt'"):
        _load([{"question": "q", "prompt": "p"}], {"question": "prompt"})


# ----------------------------------------------------------------------------- errors


def test_a_trajectory_that_is_not_a_list_names_row_and_path() -> None:
    with pytest.raises(InputError) as info:
        _load([FULL_ROW, {"id": "bad", "predicted_trajectory": {"tool_name": "x"}}])
    err = info.value
    assert err.case_id == "bad" and err.path == "$[1].predicted_trajectory"
    assert "list of {tool_name, tool_input}" in str(err) and "d.json" in str(err)


def test_a_tool_input_that_is_not_an_object() -> None:
    row = {"predicted_trajectory": [_call("a"), {"tool_name": "b", "tool_input": "x=1"}]}
    with pytest.raises(InputError) as info:
        _load([row])
    assert info.value.path == "$[0].predicted_trajectory[1].tool_input"
    assert info.value.case_id == "row-0" and "an object" in str(info.value)


def test_a_json_string_trajectory_must_be_valid() -> None:
    with pytest.raises(InputError, match="not valid JSON"):
        _load([{"reference_trajectory": "[{'tool_name': 'x'}]"}])
    with pytest.raises(InputError, match="tool_name"):
        _load([{"reference_trajectory": [{"tool_input": {}}]}])


def test_a_bad_session_input_is_located_inside_the_cell() -> None:
    with pytest.raises(InputError) as info:
        _load([{"id": "s", "prompt": "p", "session_input": '{"state": 5}'}])
    err = info.value
    assert err.case_id == "s" and err.path == "$[0].session_input.state"
    assert err.expected == "{app_name, user_id, state}"


def test_rows_without_vertex_columns_suggest_a_mapping() -> None:
    with pytest.raises(InputError) as info:
        _load([{"question": "q", "answer": "a"}])
    assert "question, answer" in str(info.value) and "--map" in str(info.value)


def test_duplicate_ids_and_bad_values_are_errors() -> None:
    with pytest.raises(InputError, match="duplicate case id"):
        _load([{"id": "a", "prompt": "p"}, {"id": "a", "prompt": "q"}])
    with pytest.raises(InputError, match="0 or 1"):
        _load([{"prompt": "p", "failure": 2}])
    with pytest.raises(InputError, match="a string or a Content"):
        _load([{"prompt": 12}])
    with pytest.raises(InputError, match="duplicate rubric id"):
        rubric = {"rubric_id": "r", "content": {"property": {"description": "t"}}}
        _load(
            [
                {
                    "prompt": "p",
                    "rubric_groups": {"a": {"rubrics": [rubric]}, "b": {"rubrics": [rubric]}},
                }
            ]
        )


def test_unwritable_cases_are_refused_by_name() -> None:
    two_turns = EvalCase(id="multi", reference=[Turn(), Turn()])
    with pytest.raises(InputError) as info:
        vertex.dump(EvalSet(id="s", cases=[two_turns]))
    # Several turns are a row's history (below); one without a text prompt has no form.
    assert info.value.case_id == "multi" and "turn 1 of 2 has no plain text" in str(info.value)
    differ = EvalCase(
        id="differ",
        reference=[Turn(user_input=UserInput(text="a")), Turn(user_input=UserInput(text="b"))],
        actual=[Turn(user_input=UserInput(text="x")), Turn(user_input=UserInput(text="b"))],
    )
    with pytest.raises(InputError, match="earlier turns differ"):
        vertex.dump(EvalSet(id="s", cases=[differ]))
    with pytest.raises(InputError, match="scenario"):
        vertex.dump(EvalSet(id="s", cases=[EvalCase(id="sc", scenario=Scenario(task="t"))]))


# ----------------------------------------------------------------------------- detection


def test_detection_claims_vertex_rows_only() -> None:
    assert vertex.detect(None, [FULL_ROW])
    assert vertex.detect(None, {"eval_cases": [{"eval_case_id": "x", "prompt": "p"}]})
    assert not vertex.detect(None, [{"request": "r", "response": "x"}])  # mlflow
    assert not vertex.detect(None, [{"query": "q", "expected_tool_use": [], "reference": "r"}])
    assert not vertex.detect(None, [{"id": "a", "turns": [{"user_input": {"text": "x"}}]}])
    assert not vertex.detect(
        None, {"eval_set_id": "s", "eval_cases": [{"eval_id": "e", "conversation": []}]}
    )
    assert not vertex.detect(None, {"golden": {"turns": []}})


def test_file_data_is_consumed_but_in_memory_rows_are_not() -> None:
    rows = [dict(FULL_ROW), {"prompt": "p"}]
    vertex.load_data(rows, file=None, mapping=None)
    assert rows[0] == FULL_ROW and rows[1] == {"prompt": "p"}
    vertex.load_data(rows, file="d.jsonl", mapping=None)
    assert rows == [None, None]  # released while converting, to save memory


def test_gc_pause_restores_the_collector() -> None:
    assert gc.isenabled()
    with m.gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), m.gc_paused():
        raise ValueError
    assert gc.isenabled()
    gc.disable()
    try:
        with m.gc_paused():
            pass
        assert not gc.isenabled()  # a collector switched off stays off
    finally:
        gc.enable()


def test_large_load_leaves_the_collector_as_it_was(tmp_path: Path) -> None:
    # Loading must not change process-wide GC state; 12,000 rows is above the size at
    # which loading once froze its objects (gc.freeze).
    path = tmp_path / "big.jsonl"
    path.write_text(
        "".join(json.dumps({**FULL_ROW, "id": f"r{i}"}) + "\n" for i in range(12_000)),
        encoding="utf-8",
    )
    frozen = gc.get_freeze_count()
    assert len(load(path).cases) == 12_000
    assert gc.isenabled()
    # Nothing newly frozen. (The count may drop: objects an earlier in-process `assay
    # eval` froze can be freed meanwhile, which takes them out of the frozen set.)
    assert gc.get_freeze_count() <= frozen


# ----------------------------------------------------------------------------- real files

REAL = {
    "customer_support_eval.json": 3,
    "eval_dataset.json": 10,
    "fx-dataset.json": 6,
    "smoke-dataset.json": 1,
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_files_round_trip(name: str, tmp_path: Path) -> None:
    original = load(REALWORLD / name)
    assert len(original.cases) == REAL[name]
    out = tmp_path / name
    vertex.write(original, out)
    assert load(out, "vertex") == original


def test_real_hybrid_dataset_keeps_custom_keys() -> None:
    evalset = load(REALWORLD / "eval_dataset.json")
    assert evalset.id == "founder_validation_agent_eval"
    case = evalset.cases[2]
    assert case.id == "challenge_feature_first"
    assert case.reference is not None and case.reference[0].steps == []
    assert case.metadata["expected_response_not_contains"] == ["great idea", "sounds good"]
