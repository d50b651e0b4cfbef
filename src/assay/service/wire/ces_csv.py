"""Golden evaluations from CSV (`ImportEvaluationsRequest.csv_content`).

The layout is CES's batch upload: a header row with the required columns
`display_name`, `turn_index` and `action_type`; an evaluation row (a new
`display_name`, optionally `description` and `tags`) opens an evaluation, and each
following row with an empty `display_name` is one step of the turn `turn_index`.
assay reads these action types (case and spaces/underscores do not matter):

- `user_input` — the user's `text`;
- `agent_response` — the agent reply expected, `text`;
- `tool_call` — a tool call expected: `tool`, and `args` as a JSON object.

Anything else is INVALID_ARGUMENT naming the line and the column.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from assay.service.errors import InvalidArgument

REQUIRED = ("display_name", "turn_index", "action_type")
ACTIONS = ("user_input", "agent_response", "tool_call")


def _bad(field: str, line: int, message: str) -> InvalidArgument:
    return InvalidArgument.field(field, f"line {line}: {message}")


def _step(row: dict[str, str], line: int, field: str) -> dict[str, Any]:
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
            args = json.loads(row.get("args") or "{}")
        except ValueError:
            raise _bad(field, line, "column 'args' must be a JSON object") from None
        if not isinstance(args, dict):
            raise _bad(field, line, "column 'args' must be a JSON object")
        return {"expectation": {"toolCall": {"tool": tool, "args": args}}}
    raise _bad(
        field,
        line,
        f"action_type {row.get('action_type')!r} is not one of {', '.join(ACTIONS)}",
    )


def evaluations(content: bytes, field: str) -> list[tuple[str, dict[str, Any]]]:
    """(label, evaluation body) of each evaluation in the CSV."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidArgument.field(field, "the CSV must be UTF-8 text") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise _bad(field, 1, f"the header lacks the column(s) {', '.join(missing)}")
    found: list[tuple[str, dict[str, Any]]] = []
    turns: dict[int, list[dict[str, Any]]] = {}
    for row in reader:
        line = reader.line_num
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
        steps.append(_step(row, line, field))
        found[-1][1]["golden"]["turns"] = [{"steps": turns[k]} for k in sorted(turns)]
    if not found:
        raise InvalidArgument.field(field, "the CSV holds no evaluation")
    return found
