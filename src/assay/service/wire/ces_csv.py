"""Golden evaluations from CSV (`ImportEvaluationsRequest.csv_content`).

The layout is CES's batch upload: a header row with the required columns
`display_name`, `turn_index` and `action_type`; an evaluation row (a new
`display_name`, optionally `description` and `tags`) opens an evaluation, and each
following row with an empty `display_name` is one step of the turn `turn_index`.
assay reads these action types (case and spaces/underscores do not matter):

- `user_input` — the user's `text`;
- `agent_response` — the agent reply expected, `text`;
- `tool_call` — a tool call expected: `tool`, and `args` as a JSON object.

Anything else is INVALID_ARGUMENT naming the line and the column, and so is a cell
longer than `max_csv_cell_chars` or `args` nested deeper than `max_depth`
(`ServiceLimits`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

from assay.formats._common import read_any_csv_cell
from assay.service.documents import load_json
from assay.service.errors import InvalidArgument
from assay.service.settings import DEFAULT_LIMITS, ServiceLimits

REQUIRED = ("display_name", "turn_index", "action_type")
ACTIONS = ("user_input", "agent_response", "tool_call")


def _bad(field: str, line: int, message: str) -> InvalidArgument:
    return InvalidArgument.field(field, f"line {line}: {message}")


def _step(row: dict[str, str], line: int, field: str, limits: ServiceLimits) -> dict[str, Any]:
    action = "_".join((row.get("action_type") or "").lower().replace("_", " ").split())
    text = row.get("text") or ""
    if action == "user_input":
        return {"userInput": {"text": text}}
    if action == "agent_response":
        return {"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": text}]}}}
    if action == "tool_call":
        tool = (row.get("tool") or "").strip()
        if not tool:
            raise _bad(field, line, "a tool_call row needs the tool's name in column 'tool'")
        try:
            args = load_json(row.get("args") or "{}", "args", limits)
        except InvalidArgument as exc:
            raise _bad(field, line, f"column {exc.message}") from None
        if not isinstance(args, dict):
            raise _bad(field, line, "column 'args' must be a JSON object")
        return {"expectation": {"toolCall": {"tool": tool, "args": args}}}
    raise _bad(
        field,
        line,
        f"action_type {row.get('action_type')!r} is not one of {', '.join(ACTIONS)}",
    )


def _check_cells(row: dict[str, Any], line: int, field: str, limit: int) -> None:
    for column, value in row.items():  # cells past the header's columns are skipped
        if isinstance(value, str) and len(value) > limit:
            raise _bad(
                field,
                line,
                f"the cell of column {column!r} holds {len(value)} characters; the limit "
                f"is {limit} (max_csv_cell_chars)",
            )


def _rows(reader: csv.DictReader[str], field: str) -> Iterator[dict[str, Any]]:
    try:
        yield from reader
    except csv.Error as exc:
        raise _bad(field, reader.line_num, f"not valid CSV ({exc})") from None


def evaluations(
    content: bytes, field: str, limits: ServiceLimits = DEFAULT_LIMITS
) -> list[tuple[str, dict[str, Any]]]:
    """(label, evaluation body) of each evaluation in the CSV."""
    if len(content) > limits.max_document_bytes:
        raise InvalidArgument.field(
            field,
            f"the CSV is larger than the limit of {limits.max_document_bytes} bytes "
            "(max_document_bytes)",
        )
    read_any_csv_cell()  # the limit is the service's, checked per cell with its line
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidArgument.field(field, "the CSV must be UTF-8 text") from None
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise _bad(field, 1, f"not valid CSV ({exc})") from None
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise _bad(field, 1, f"the header lacks the column(s) {', '.join(missing)}")
    found: list[tuple[str, dict[str, Any]]] = []
    turns: dict[int, list[dict[str, Any]]] = {}
    for row in _rows(reader, field):
        line = reader.line_num
        _check_cells(row, line, field, limits.max_csv_cell_chars)
        name = (row.get("display_name") or "").strip()
        if name:
            turns = {}
            body: dict[str, Any] = {"displayName": name, "golden": {"turns": []}}
            if row.get("description"):
                body["description"] = row["description"]
            tags = [t.strip() for t in (row.get("tags") or "").replace(";", ",").split(",")]
            if any(tags):
                body["tags"] = [t for t in tags if t]
            found.append((f"csv line {line} ({name})", body))
            if not (row.get("action_type") or "").strip():
                continue
        if not found:
            raise _bad(field, line, "the first row after the header must name an evaluation")
        index = (row.get("turn_index") or "").strip()
        if not index.isdigit():
            raise _bad(field, line, f"turn_index must be a whole number, got {index!r}")
        steps = turns.setdefault(int(index), [])
        steps.append(_step(row, line, field, limits))
        found[-1][1]["golden"]["turns"] = [{"steps": turns[k]} for k in sorted(turns)]
    if not found:
        raise InvalidArgument.field(field, "the CSV holds no evaluation")
    return found
