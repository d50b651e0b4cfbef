"""What a scored plain row (`session.lean_rows.LeanRow`) writes: the store's row, the
report's ADK-shaped case and its report row, from the row's cells and results at once.

Each function writes the bytes the ordinary path writes from a `CaseResult` —
`store.encode_case` (document format 2), `report.json_report.case_to_adk` and
`engine.aggregate.case_rows`, each encoded by orjson — for a case of one recorded and
one reference turn. The documents' fixed layout (their keys, in the order the ordinary
path writes them, and the values every plain row has) is spelt out here as JSON text;
each value of the row — ids, texts, each tool call — is encoded by orjson as orjson
encodes it inside a document; the metric entries come encoded from the ordinary path's
own helpers (`EncodedMetric`). Assembled as text, with each call encoded once for both
documents, the three cost ~7 us a row less than built as dicts and encoded
(bench/README.md). The tests in tests/session/test_lean_rows.py compare the two paths
byte for byte.
"""

from __future__ import annotations

from typing import Any

import orjson

from assay.report.json_stream import csv_fields
from assay.session.lean_rows import EncodedMetric, LeanCall, LeanRow
from assay.store import EncodedCase
from assay.store._document import FORMAT

_COMPLETED = "COMPLETED"
_J = orjson.dumps  # one string, number or call, as orjson writes it inside a document
_FORMAT = b'{"format":' + _J(FORMAT) + b',"case_id":'
_NO_TEXT = _J("")


def _calls(calls: list[LeanCall]) -> list[bytes]:
    # `{"name": ..., "args": ...}`: a call as both the store's steps and the report's
    # tool uses hold it (the arguments as the row gave them, in their order).
    return [_J({"name": c.name, "args": c.args}) for c in calls]


def _stored_turn(prompt: bytes | None, calls: list[bytes], final: str | None) -> bytes:
    # `Turn.model_dump(exclude_none=True)` of a row's turn: fields in declaration order.
    return b"".join((
        b'{"user_input":{',
        b"" if prompt is None else b'"text":' + prompt + b",",
        b'"blobs":[],"tool_responses":[]},"steps":[',
        b",".join([b'{"tool_call":' + c + b"}" for c in calls]),
        b"]",
        b"" if final is None else b',"final_response":' + _J(final),
        b',"expectations":[],"rubrics":[]}',
    ))  # fmt: skip


def store_row(
    lean: LeanRow, eval_set_id: str, calls: tuple[list[bytes], list[bytes]] | None = None
) -> EncodedCase:
    """`store.encode_case` of the row's result; `calls`: the row's predicted and
    reference calls already encoded (`encoded_calls`)."""
    predicted, expected = calls if calls is not None else encoded_calls(lean)
    return (
        eval_set_id,
        lean.case_id,
        0,
        lean.status._value_,
        _COMPLETED,
        None,
        None,
        _store_document(lean, eval_set_id, predicted, expected),
    )


def _store_document(
    lean: LeanRow, eval_set_id: str, predicted: list[bytes], expected: list[bytes]
) -> bytes:
    prompt = None if lean.prompt is None else _J(lean.prompt)
    metrics = lean.metrics
    return b"".join((
        _FORMAT, _J(lean.case_id),
        b',"status":', _J(lean.status._value_),
        b',"metrics":[' + b",".join([m.stored for m in metrics]) + b"]" if metrics else b"",
        b',"invocations":[{"actual":', _stored_turn(prompt, predicted, lean.response),
        b',"expected":', _stored_turn(prompt, expected, lean.reference),
        b'}],"eval_set_id":', _J(eval_set_id), b"}",
    ))  # fmt: skip


def _invocation(
    invocation_id: bytes, prompt: bytes, calls: list[bytes], final: str | None
) -> bytes:
    # `turn_to_invocation` of a row's turn: no blobs, tool responses, messages or timing.
    return b"".join((
        b'{"invocation_id":', invocation_id,
        b',"user_content":{"role":"user","parts":[{"text":', prompt,
        b'}]},"final_response":',
        b"null" if final is None else b'{"role":"model","parts":[{"text":' + _J(final) + b"}]}",
        b',"intermediate_data":{"tool_uses":[', b",".join(calls),
        b'],"tool_responses":[],"intermediate_responses":[]},"creation_timestamp":0.0}',
    ))  # fmt: skip


def report_case(
    lean: LeanRow,
    eval_set_id: str,
    run_id: str | None,
    eval_set_file: str | None,
    calls: tuple[list[bytes], list[bytes]] | None = None,
) -> bytes:
    """`case_to_adk` of the row's result, encoded as the report writes it; `calls`: the
    row's predicted and reference calls already encoded (`encoded_calls`)."""
    predicted, expected = calls if calls is not None else encoded_calls(lean)
    metrics = lean.metrics
    fallback = _J(f"{lean.case_id}-1")
    prompt = _NO_TEXT if lean.prompt is None else _J(lean.prompt)
    explained = [m.explanation_entry for m in metrics if m.explanation_entry is not None]
    return b"".join((
        b'{"eval_set_id":', _J(eval_set_id),
        b',"eval_id":', _J(lean.case_id),
        b',"run_index":0,"final_eval_status":', b"%d" % lean.status.adk_code,
        b',"status":', _J(lean.status._value_),
        b',"overall_eval_metric_results":[', b",".join([m.overall for m in metrics]),
        b'],"eval_metric_result_per_invocation":[{"actual_invocation":',
        _invocation(fallback, prompt, predicted, lean.response),
        b',"expected_invocation":', _invocation(fallback, prompt, expected, lean.reference),
        b',"eval_metric_results":[', b",".join([m.invocation for m in metrics]),
        b']}],"session_id":', _J(f"{run_id or 'assay'}:{eval_set_id}:{lean.case_id}:0"),
        b',"latency_s":null,"failure":false,"error":null,"error_type":null,"explanations":{',
        b",".join(explained),
        b"}" if eval_set_file is None else b'},"eval_set_file":' + _J(eval_set_file),
        b"}",
    ))  # fmt: skip


def encoded_calls(lean: LeanRow) -> tuple[list[bytes], list[bytes]]:
    """The row's predicted and reference calls, each encoded once for both documents."""
    return _calls(lean.predicted), _calls(lean.reference_calls)


_HEAD = ("eval_set_id", "case_id", "run", "invocation_id", "prompt", "response")
_SHAPES: dict[tuple[int, ...], tuple[str, ...]] = {}
"""Each row shape by its key (`report_row`): a row's columns are its head's and its
metrics', so rows of a run have a handful of shapes, built once each."""


def report_row(lean: LeanRow, eval_set_id: str) -> tuple[tuple[str, ...], bytes]:
    """`case_rows` of the row's result (its one row): its columns and its JSON line."""
    metrics = lean.metrics
    reference = lean.reference
    key = (reference is None, *[m.columns_id for m in metrics])
    shape = _SHAPES.get(key)
    if shape is None:
        shape = row_shape(key, metrics)
    line = b"".join((
        b'{"eval_set_id":', _J(eval_set_id),
        b',"case_id":', _J(lean.case_id),
        b',"run":0,"invocation_id":null,"prompt":', _J(lean.prompt),
        b',"response":', _J(lean.response),
        b"" if reference is None else b',"reference":' + _J(reference),
        *[m.columns_json for m in metrics],
        b"}\n",
    ))  # fmt: skip
    return shape, line


def row_shape(key: tuple[Any, ...], metrics: list[EncodedMetric]) -> tuple[str, ...]:
    """The columns of a report row of `key` (whether it has no reference, then its
    metrics' column lists' numbers), kept in `_SHAPES`: the row's head, its reference,
    its metrics' columns."""
    if len(_SHAPES) > 10_000:
        _SHAPES.clear()
    names = list(_HEAD) if key[0] else [*_HEAD, "reference"]
    for m in metrics:
        names.extend(m.columns)
    shape = _SHAPES[key] = tuple(names)
    return shape


def report_csv_line(lean: LeanRow, eval_set_id: str) -> bytes:
    """The CSV line of `report_row` (under a header of that row's columns)."""
    head = [eval_set_id, lean.case_id, 0, None, lean.prompt, lean.response]
    if lean.reference is not None:
        head.append(lean.reference)
    parts = [csv_fields(head)]
    parts.extend([m.csv for m in lean.metrics])
    return (",".join(parts) + "\r\n").encode("utf-8")
