"""Recorded traces: finished conversations in assay's own Turn model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.core.cases import (
    EvalCase,
    EvalSet,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    Usage,
    UserInput,
)
from assay.errors import InputError
from assay.formats import detect_format, load, traces, vertex
from assay.formats._common import read_structured

TURN = {
    "user_input": {"text": "Weather in Oslo?"},
    "steps": [
        {"tool_call": {"id": "c1", "name": "get_weather", "args": {"city": "Oslo"}}},
        {"tool_response": {"id": "c1", "name": "get_weather", "response": {"output": "rain"}}},
    ],
    "final_response": "Rainy.",
    "latency_s": 0.8,
    "usage": {"input_tokens": 12, "output_tokens": 3},
}
ROW = {
    "id": "t1",
    "turns": [TURN],
    "reference": [{"user_input": {"text": "Weather in Oslo?"}, "final_response": "Rain"}],
    "tags": ["smoke"],
    "expected_facts": ["rain"],
}


def _write(tmp_path: Path, rows: list[Any], name: str = "run.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_trace_rows_load_as_recorded_turns(tmp_path: Path) -> None:
    path = _write(tmp_path, [ROW, {"id": "t2", "turns": [{"user_input": {"text": "hi"}}]}])
    assert detect_format(read_structured(path), path) == "trace"
    evalset = load(path)
    assert evalset.id == "run" and [c.id for c in evalset.cases] == ["t1", "t2"]
    case = evalset.cases[0]
    assert case.actual == [
        Turn(
            user_input=UserInput(text="Weather in Oslo?"),
            steps=[
                Step(tool_call=ToolCall(id="c1", name="get_weather", args={"city": "Oslo"})),
                Step(
                    tool_response=ToolResponse(
                        id="c1", name="get_weather", response={"output": "rain"}
                    )
                ),
            ],
            final_response="Rainy.",
            latency_s=0.8,
            usage=Usage(input_tokens=12, output_tokens=3),
        )
    ]
    assert case.reference is not None and case.reference[0].final_response == "Rain"
    assert case.tags == ["smoke"] and case.expected_facts == ["rain"]


@pytest.mark.parametrize("name", ["out.jsonl", "out.json"])
def test_round_trip(tmp_path: Path, name: str) -> None:
    evalset = load(_write(tmp_path, [ROW]))
    out = tmp_path / name
    traces.write(evalset, out)
    again = load(out)
    assert again.cases == evalset.cases
    assert traces.dump(evalset)[0]["turns"][0]["steps"][0] == TURN["steps"][0]  # type: ignore[index]


def test_recorded_vertex_rows_convert_to_traces(tmp_path: Path) -> None:
    rows = [
        {
            "prompt": "p",
            "response": "r",
            "reference": "x",
            "predicted_trajectory": [{"tool_name": "t", "tool_input": {"a": 1}}],
        }
    ]
    evalset = vertex.load_data(rows, file=None, mapping=None)
    out = tmp_path / "rows.jsonl"
    traces.write(evalset, out)
    assert load(out).cases == evalset.cases


def test_detection_is_precise() -> None:
    assert traces.detect(None, [ROW])
    assert not traces.detect(None, [{"id": "x", "turns": []}])
    assert not traces.detect(None, [{"id": "x", "turns": [{"user": "hi", "agent": "yo"}]}])
    assert not traces.detect(None, [{"prompt": "p", "response": "r"}])
    assert not traces.detect(
        None, {"conversations": [{"conversation": "c", "turns": [{"user": "hi"}]}]}
    )


@pytest.mark.parametrize(
    ("row", "path", "fragment"),
    [
        ({"turns": [TURN]}, "$[1].id", "missing or non-string id"),
        ({"id": "b", "turns": {"user_input": {}}}, "$[1].turns", "a list of turns"),
        (
            {
                "id": "b",
                "turns": [
                    {"steps": [{"tool_call": {"name": "t"}, "agent_message": {"text": "x"}}]}
                ],
            },
            "$[1].turns[0].steps[0]",
            "exactly one of",
        ),
        (
            {"id": "b", "turns": [{"user_input": {"text": 3}}]},
            "$[1].turns[0].user_input.text",
            "valid string",
        ),
        ({"id": "b", "turns": [TURN], "colour": "red"}, "$[1].colour", "Extra inputs"),
        ({"id": "b", "turns": [TURN], "actual": [TURN]}, "$[1].actual", "under 'turns'"),
    ],
)
def test_errors_are_located(row: dict[str, Any], path: str, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        traces.load_data([ROW, row], file="run.jsonl", mapping=None)
    err = info.value
    assert err.path == path and fragment in str(err) and err.file == "run.jsonl"
    if "id" in row:
        assert err.case_id == "b"


def test_other_errors() -> None:
    with pytest.raises(InputError, match="duplicate case id"):
        traces.load_data([ROW, ROW], file=None, mapping=None)
    with pytest.raises(InputError, match="no column mapping"):
        traces.load_data([ROW], file=None, mapping={"a": "b"})
    with pytest.raises(InputError, match="no recorded turns"):
        traces.dump(EvalSet(id="s", cases=[EvalCase(id="plan", reference=[Turn()])]))
