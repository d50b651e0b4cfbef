"""The format dispatcher: choosing a format, reading files, located errors, in-memory rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from assay.core.cases import EvalSet
from assay.errors import InputError, UnknownFormatError
from assay.formats import (
    EVAL_SET_FORMATS,
    FORMAT_MODULES,
    READ_ONLY_FORMATS,
    detect_format,
    dump,
    format_module,
    load,
    load_many,
    load_rows,
    save,
)
from assay.formats._common import read_structured

REALWORLD = Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld"
ADK = REALWORLD / "adk"
ADK_SET = ADK / "trpc_agent_go" / "math-basic.evalset.json"
LEGACY = ADK / "legacy_trip_planner" / "trip_inquiry.test.json"
CONFIG = ADK / "new_hire_onboarding" / "eval_config.json"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _adk_case(case_id: str, user_content: Any = None) -> dict[str, Any]:
    content = user_content or {"role": "user", "parts": [{"text": f"question {case_id}"}]}
    return {
        "eval_id": case_id,
        "conversation": [{"invocation_id": f"{case_id}-1", "user_content": content}],
    }


# ----------------------------------------------------------------------------- format names


def test_format_names_are_the_specs() -> None:
    assert set(FORMAT_MODULES) == {
        "adk",
        "adk-legacy",
        "adk-config",
        "vertex",
        "mlflow",
        "ces",
        "trace",
        "otel",
        "mlflow-trace",
    }
    assert "adk-config" not in EVAL_SET_FORMATS
    assert set(EVAL_SET_FORMATS) == set(FORMAT_MODULES) - {"adk-config"}


@pytest.mark.parametrize("name", sorted(FORMAT_MODULES))
def test_every_format_module_follows_the_contract(name: str) -> None:
    module = format_module(name)
    assert name == module.NAME
    writes = () if name in READ_ONLY_FORMATS else ("dump", "write")
    for function in ("detect", "load_data", *writes):
        assert callable(getattr(module, function)), f"{name}.{function}"


def test_unknown_format_lists_valid_formats() -> None:
    with pytest.raises(UnknownFormatError) as info:
        format_module("langsmith")
    message = str(info.value)
    assert "unknown format 'langsmith'" in message
    for name in FORMAT_MODULES:
        assert name in message


def test_unknown_from_is_reported_before_reading_the_file(tmp_path: Path) -> None:
    # Even for a missing file, the bad format name is the first thing to fix.
    with pytest.raises(UnknownFormatError, match=r"unknown format 'adk2'.*adk-legacy"):
        load(tmp_path / "missing.json", fmt="adk2")


# ----------------------------------------------------------------------------- detection


def test_detects_real_adk_and_legacy_files() -> None:
    assert detect_format(read_structured(ADK_SET), ADK_SET) == "adk"
    assert detect_format(read_structured(LEGACY), LEGACY) == "adk-legacy"
    assert load(ADK_SET).cases == load(ADK_SET, fmt="adk").cases


def test_undetectable_data_suggests_from(tmp_path: Path) -> None:
    path = _write(tmp_path, "mystery.json", '{"questions": ["a", "b"], "version": 3}')
    with pytest.raises(UnknownFormatError) as info:
        load(path)
    message = str(info.value)
    assert str(path) in message
    assert "cannot tell the format" in message
    assert "--from" in message
    assert info.value.file == str(path)


@pytest.mark.parametrize("data", [42, "text", None, [], [1, 2]])
def test_scalars_and_empty_data_are_undetectable(data: Any) -> None:
    with pytest.raises(UnknownFormatError, match="--from"):
        detect_format(data)


def test_a_config_given_as_data_points_at_config_option() -> None:
    assert detect_format(read_structured(CONFIG), CONFIG) == "adk-config"
    with pytest.raises(UnknownFormatError) as info:
        load(CONFIG)
    assert "--config" in str(info.value)
    assert str(CONFIG) in str(info.value)
    with pytest.raises(UnknownFormatError, match="--config"):
        load(ADK_SET, fmt="adk-config")


# ----------------------------------------------------------------------------- file errors


def test_folder_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load(tmp_path)
    assert "is a folder" in str(info.value)
    assert info.value.file == str(tmp_path)
    with pytest.raises(InputError, match="is a folder"):
        load(ADK / "trpc_agent_go", fmt="adk")


def test_missing_file_names_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.evalset.json"
    with pytest.raises(InputError) as info:
        load(missing)
    assert str(info.value) == f"file {missing}: file not found"


def test_invalid_json_names_file_and_line(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "broken.evalset.json", '{\n  "eval_set_id": "s",\n  "eval_cases": [,]\n}'
    )
    with pytest.raises(InputError) as info:
        load(path)
    message = str(info.value)
    assert message.startswith(f"file {path}: not valid JSON")
    assert "line 3" in message


def test_invalid_jsonl_line_names_file_and_line(tmp_path: Path) -> None:
    good = json.dumps({"prompt": "p", "reference": "r"})
    path = _write(tmp_path, "rows.jsonl", f"{good}\n\n{good}\n{{prompt: 1}}\n{good}\n")
    with pytest.raises(InputError) as info:
        load(path, fmt="vertex")
    assert info.value.file == str(path)
    assert info.value.path == "line 4"
    assert "not valid JSON" in str(info.value)


def test_invalid_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "eval.yaml", "displayName: x\ngolden:\n  turns: [1, 2\n  tags: 3\n")
    with pytest.raises(InputError) as info:
        load(path, fmt="vertex")
    message = str(info.value)
    assert message.startswith(f"file {path}: not valid YAML")
    assert "line 4" in message
    assert "\n" not in message


def test_csv_without_header(tmp_path: Path) -> None:
    path = _write(tmp_path, "rows.csv", "")
    with pytest.raises(InputError, match="no header row"):
        load(path, fmt="vertex")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('{"prompt": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8"):
        load(path, fmt="vertex")


def test_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.evalset.json"
    path.write_bytes(b"\xef\xbb\xbf" + ADK_SET.read_bytes())
    assert load(path, fmt="adk").cases == load(ADK_SET, fmt="adk").cases


# ----------------------------------------------------------------------------- nothing half-loaded


def test_bad_third_case_rejects_the_whole_adk_file(tmp_path: Path) -> None:
    cases = [_adk_case("a"), _adk_case("b"), _adk_case("c", user_content=5), _adk_case("d")]
    path = _write(tmp_path, "s.evalset.json", json.dumps({"eval_set_id": "s", "eval_cases": cases}))
    result: list[EvalSet] = []
    with pytest.raises(InputError) as info:
        result.append(load(path, fmt="adk"))
    assert result == []
    err = info.value
    assert err.file == str(path)
    assert err.case_id == "c"
    assert err.path is not None and err.path.startswith("$.eval_cases[2]")
    # The same file without the bad case loads completely.
    del cases[2]
    path.write_text(json.dumps({"eval_set_id": "s", "eval_cases": cases}), encoding="utf-8")
    assert [c.id for c in load(path, fmt="adk").cases] == ["a", "b", "d"]


def test_bad_third_row_rejects_the_whole_jsonl_file(tmp_path: Path) -> None:
    rows = [
        {"prompt": "a", "reference": "x"},
        {"prompt": "b", "reference": "y"},
        {"prompt": "c", "predicted_trajectory": 5},
        {"prompt": "d", "reference": "z"},
    ]
    path = _write(tmp_path, "rows.jsonl", "\n".join(json.dumps(r) for r in rows))
    with pytest.raises(InputError) as info:
        load(path, fmt="vertex")
    assert info.value.file == str(path)
    assert info.value.path == "$[2].predicted_trajectory"


def test_load_many_fails_on_any_bad_file(tmp_path: Path) -> None:
    bad = _write(tmp_path, "bad.evalset.json", '{"eval_set_id": 3, "eval_cases": []}')
    assert [s.id for s in load_many([ADK_SET, ADK_SET], fmt="adk")] == ["math-basic"] * 2
    with pytest.raises(InputError) as info:
        load_many([ADK_SET, bad], fmt="adk")
    assert info.value.file == str(bad)


# ----------------------------------------------------------------------------- in-memory rows


ROWS: list[dict[str, Any]] = [
    {
        "prompt": "What is 2 + 2?",
        "response": "4",
        "reference": "4",
        "predicted_trajectory": [{"tool_name": "add", "tool_input": {"a": 2, "b": 2}}],
        "reference_trajectory": [{"tool_name": "add", "tool_input": {"a": 2, "b": 2}}],
    },
    {"prompt": "Say hi", "response": "hi", "reference": "hello"},
]


def test_load_rows_from_dicts() -> None:
    evalset = load_rows(ROWS, name="arith")
    assert evalset.id == "arith"
    assert len(evalset.cases) == 2
    first = evalset.cases[0]
    assert first.actual is not None and first.reference is not None
    assert first.actual[0].final_response == "4"
    assert [c.name for c in first.actual[0].tool_calls()] == ["add"]
    assert first.reference[0].tool_calls()[0].args == {"a": 2, "b": 2}


def test_load_rows_from_dataframe_matches_dicts() -> None:
    # Row 2 has no trajectory columns: pandas fills them with NaN, which means "absent".
    frame = pd.DataFrame(ROWS)
    assert frame["predicted_trajectory"].isna().tolist() == [False, True]
    from_frame = load_rows(frame, name="arith")
    assert from_frame == load_rows(ROWS, name="arith")
    assert from_frame.cases[1].actual is not None
    assert from_frame.cases[1].actual[0].tool_calls() == []


def test_load_rows_with_column_mapping() -> None:
    renamed = [{"question": r["prompt"], "answer": r["reference"]} for r in ROWS]
    evalset = load_rows(renamed, mapping={"question": "prompt", "answer": "reference"})
    assert evalset.cases[1].reference is not None
    assert evalset.cases[1].reference[0].final_response == "hello"


def test_load_rows_mlflow() -> None:
    rows = [{"request": "What is MLflow?", "response": "A platform.", "expected_response": "x"}]
    evalset = load_rows(rows, fmt="mlflow")
    assert len(evalset.cases) == 1
    assert evalset.cases[0].expected_response == "x"


def test_load_rows_rejects_file_formats() -> None:
    with pytest.raises(UnknownFormatError, match="vertex, mlflow, trace or mlflow-trace"):
        load_rows(ROWS, fmt="adk")


def test_load_rows_bad_row_is_located() -> None:
    rows = [*ROWS, {"prompt": "x", "predicted_trajectory": 5}]
    with pytest.raises(InputError) as info:
        load_rows(rows)
    assert info.value.path == "$[2].predicted_trajectory"


# ----------------------------------------------------------------------------- writing back


def test_save_and_dump_round_trip_through_the_dispatcher(tmp_path: Path) -> None:
    evalset = load(ADK_SET)
    out = tmp_path / "copy.evalset.json"
    save(evalset, out, "adk")
    assert load(out) == load(out, fmt="adk")
    assert load(out).cases == evalset.cases
    assert dump(evalset, "adk") == json.loads(out.read_text(encoding="utf-8"))


def test_located_keeps_the_error_class() -> None:
    err = UnknownFormatError("cannot tell", expected="x").located(file="f.json", case_id="c")
    assert type(err) is UnknownFormatError
    assert (err.file, err.case_id, err.expected) == ("f.json", "c", "x")
    inner = InputError("bad", file="inner.json").located(file="outer.json")
    assert inner.file == "inner.json"
