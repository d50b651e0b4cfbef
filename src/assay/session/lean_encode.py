"""What a scored plain row (`session.lean_rows.LeanRow`) writes: the store's row, the
report's ADK-shaped case and its report row, from the row's cells and results at once.

Each function builds the plain value the ordinary path builds from a `CaseResult` —
`store.encode_case` (document format 2), `report.json_report.case_to_adk` and
`engine.aggregate.case_rows` — for a case of one recorded and one reference turn, and
encodes it with the same encoder, so the bytes are the same. The metric entries go
through the ordinary path's own helpers (`store._document.metric_entry`, the report's
metric entries, `Metric.row_columns`); only the turns' fixed layout is spelt out here.
The tests in tests/session/test_lean_rows.py compare the two paths byte for byte.
"""

from __future__ import annotations

from typing import Any

import orjson

from assay.report.json_stream import csv_fields, dumps
from assay.session.lean_rows import LeanCall, LeanRow
from assay.store import EncodedCase
from assay.store._document import FORMAT
from assay.store._json import dumps_bytes

_COMPLETED = "COMPLETED"


def _joined(entries: list[bytes]) -> orjson.Fragment:
    """A JSON array of entries already encoded, put into a document as it is."""
    return orjson.Fragment(b"[" + b",".join(entries) + b"]")


def _stored_turn(prompt: str | None, calls: list[LeanCall], final: str | None) -> dict[str, Any]:
    # `Turn.model_dump(exclude_none=True)` of a row's turn: fields in declaration order.
    user_input: dict[str, Any] = {} if prompt is None else {"text": prompt}
    user_input["blobs"] = []
    user_input["tool_responses"] = []
    turn: dict[str, Any] = {
        "user_input": user_input,
        "steps": [{"tool_call": {"name": c.name, "args": c.args}} for c in calls],
    }
    if final is not None:
        turn["final_response"] = final
    turn["expectations"] = []
    turn["rubrics"] = []
    return turn


def store_row(lean: LeanRow, eval_set_id: str) -> EncodedCase:
    """`store.encode_case` of the row's result."""
    doc: dict[str, Any] = {
        "format": FORMAT,
        "case_id": lean.case_id,
        "status": lean.status._value_,
    }
    if lean.metrics:
        doc["metrics"] = _joined([m.stored for m in lean.metrics])
    doc["invocations"] = [
        {
            "actual": _stored_turn(lean.prompt, lean.predicted, lean.response),
            "expected": _stored_turn(lean.prompt, lean.reference_calls, lean.reference),
        }
    ]
    doc["eval_set_id"] = eval_set_id
    return (
        eval_set_id,
        lean.case_id,
        0,
        lean.status._value_,
        _COMPLETED,
        None,
        None,
        dumps_bytes(doc),
    )


def _invocation(
    invocation_id: str, prompt: str | None, calls: list[LeanCall], final: str | None
) -> dict[str, Any]:
    # `turn_to_invocation` of a row's turn: no blobs, tool responses, messages or timing.
    return {
        "invocation_id": invocation_id,
        "user_content": {"role": "user", "parts": [{"text": prompt if prompt is not None else ""}]},
        "final_response": (
            {"role": "model", "parts": [{"text": final}]} if final is not None else None
        ),
        "intermediate_data": {
            "tool_uses": [{"name": c.name, "args": c.args} for c in calls],
            "tool_responses": [],
            "intermediate_responses": [],
        },
        "creation_timestamp": 0.0,
    }


def report_case(
    lean: LeanRow, eval_set_id: str, run_id: str | None, eval_set_file: str | None
) -> bytes:
    """`case_to_adk` of the row's result, encoded as the report writes it."""
    metrics = lean.metrics
    fallback = f"{lean.case_id}-1"
    doc: dict[str, Any] = {
        "eval_set_id": eval_set_id,
        "eval_id": lean.case_id,
        "run_index": 0,
        "final_eval_status": lean.status.adk_code,
        "status": lean.status._value_,
        "overall_eval_metric_results": _joined([m.overall for m in metrics]),
        "eval_metric_result_per_invocation": [
            {
                "actual_invocation": _invocation(
                    fallback, lean.prompt, lean.predicted, lean.response
                ),
                "expected_invocation": _invocation(
                    fallback, lean.prompt, lean.reference_calls, lean.reference
                ),
                "eval_metric_results": _joined([m.invocation for m in metrics]),
            }
        ],
        "session_id": f"{run_id or 'assay'}:{eval_set_id}:{lean.case_id}:0",
        "latency_s": None,
        "failure": False,
        "error": None,
        "error_type": None,
        "explanations": {
            m.result.name: m.result.explanation for m in metrics if m.result.explanation is not None
        },
    }
    if eval_set_file is not None:
        doc["eval_set_file"] = eval_set_file
    return dumps(doc)


def report_row(lean: LeanRow, eval_set_id: str) -> dict[str, Any]:
    """`case_rows` of the row's result: its one row."""
    row: dict[str, Any] = {
        "eval_set_id": eval_set_id,
        "case_id": lean.case_id,
        "run": 0,
        "invocation_id": None,
        "prompt": lean.prompt,
        "response": lean.response,
    }
    if lean.reference is not None:
        row["reference"] = lean.reference
    for m in lean.metrics:
        row.update(m.columns)
    return row


def report_csv_line(lean: LeanRow, eval_set_id: str) -> bytes:
    """The CSV line of `report_row` (under a header of that row's columns)."""
    head = [eval_set_id, lean.case_id, 0, None, lean.prompt, lean.response]
    if lean.reference is not None:
        head.append(lean.reference)
    parts = [csv_fields(head)]
    parts.extend(m.csv for m in lean.metrics)
    return (",".join(parts) + "\r\n").encode("utf-8")
