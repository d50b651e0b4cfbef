"""MLflow traces in (`--from mlflow-trace`): production traces rebuilt as conversations.

Reads what MLflow users have at hand:

- a trace as `Trace.to_json()` writes it (`{"info": {...}, "data": {"spans": [...]}}`),
  a JSON list of them, or one per line;
- the rows of `mlflow.search_traces()` saved with pandas (`df.to_json(orient="records",
  lines=True)`, or `to_csv`/JSON list): each row's `trace` column (the trace as JSON) or
  its `spans` column, with `trace_id`, `trace_metadata`, `request_time` and `assessments`;
- in memory (`assay.evaluate(data=...)`): the DataFrame `mlflow.search_traces()` returns,
  or its `return_type="list"` list of `Trace` objects.

Each trace is one turn. Span types (`mlflow.spanType`) say what a span is: the root span
holds the turn (its inputs give the user message, its outputs the final response);
`TOOL` spans are tool calls with their responses, in start order; `RETRIEVER` spans are
retrieval steps (their documents become chunks, for the groundedness metrics); `LLM` /
`CHAT_MODEL` spans give token usage (`mlflow.chat.tokenUsage`, or an OpenAI-style
`usage` in the outputs). Traces of one session (`mlflow.trace.session` in the trace
metadata, or the metadata / tag key `--map case_id=KEY` names) become one case, turns
in request order (`--map case_id=trace_id`: every trace its own case); other traces are
one case each, named by trace id. Expectations logged on a trace
(`mlflow.log_expectation`: `expected_response`, `expected_facts`, `guidelines`) become
the case's: an expected response is compared for single-trace cases (a warning says
when a session's are left unused). A trace state of ERROR is the turn's error.

A trace that cannot be rebuilt (no spans, a span naming a parent that is not in the
trace, no user input) is skipped with a `TraceSkipped` warning naming it and why; a line
that is not JSON likewise. The other traces load.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.core.cases import EvalCase, EvalSet, Turn
from assay.errors import InputError, warn
from assay.formats._build import eval_set
from assay.formats._common import read_text
from assay.formats._mlflow_trace_turns import (
    MlflowTrace,
    decoded,
    is_doc,
    is_row,
    plain,
    read_trace,
    turn_of,
)
from assay.formats.otel import TraceSkipped, json_documents

NAME = "mlflow-trace"

_SESSION_KEYS = ("mlflow.trace.session", "session_id", "mlflow.trace.user")
_MAP_KEYS = {
    "case_id": (
        "the trace metadata or tag key whose value names a trace's conversation"
        " (default mlflow.trace.session; trace_id: each trace its own case)"
    ),
}


def detect(path: Path | None, data: object) -> bool:
    docs = data if isinstance(data, list) else [data]
    return bool(docs) and all(is_doc(d) or is_row(d) for d in docs[:5])


def _skip(file: str | None, message: str) -> None:
    warnings.warn(TraceSkipped(f"{file or 'traces'}: {message}"), stacklevel=3)


def _expectations(trace: MlflowTrace) -> dict[str, object]:
    """`expected_response` / `expected_facts` / `guidelines` logged on the trace."""
    found: dict[str, Any] = {}
    for raw in trace.assessments:
        item = plain(raw)
        if not isinstance(item, Mapping):
            continue
        name = item.get("assessment_name") or item.get("name")
        expectation = item.get("expectation")
        if not name or not isinstance(expectation, Mapping) or item.get("valid") is False:
            continue  # feedback, or an expectation overridden by a later one
        if "value" in expectation:
            found[str(name)] = decoded(expectation["value"])
        elif isinstance(expectation.get("serialized_value"), Mapping):
            # Lists and objects are stored JSON-encoded (serialization_format JSON_FORMAT).
            found[str(name)] = decoded(expectation["serialized_value"].get("value"))
    return found


def _check_mapping(mapping: Mapping[str, str] | None, file: str | None) -> str | None:
    unknown = sorted(set(mapping or {}) - set(_MAP_KEYS))
    if unknown:
        keys = "; ".join(f"{k}=...: {v}" for k, v in _MAP_KEYS.items())
        raise InputError(
            f"--map {unknown[0]}=... is not an MLflow trace option", file=file, expected=keys
        )
    return (mapping or {}).get("case_id")


def load_file(path: Path, mapping: Mapping[str, str] | None = None) -> EvalSet:
    """Load a file of MLflow traces (JSON, a JSON list, or JSON lines)."""
    case_key = _check_mapping(mapping, str(path))
    if path.suffix.lower() == ".csv":
        from assay.formats._common import parse_csv

        items: Any = parse_csv(read_text(path), str(path))
    else:
        items = json_documents(read_text(path), str(path))
    return _build(items, str(path), case_key)


def load_data(data: object, *, file: str | None, mapping: Mapping[str, str] | None) -> EvalSet:
    """Load traces already in memory: documents, `search_traces` rows or `Trace` objects."""
    case_key = _check_mapping(mapping, file)
    return _build(data if isinstance(data, list) else [data], file, case_key)


def _build(items: Any, file: str | None, case_key: str | None) -> EvalSet:
    conversations: dict[str, list[tuple[Any, Turn, dict[str, Any]]]] = {}
    seen = 0
    for index, item in enumerate(items, start=1):
        seen += 1
        trace = read_trace(item, f"item {index}")
        if isinstance(trace, str):
            _skip(file, trace)
            continue
        turn, why = turn_of(trace)
        if turn is None:
            _skip(file, f"trace {trace.trace_id}: {why}: trace skipped")
            continue
        session = None
        if case_key and case_key != "trace_id":
            session = trace.meta(case_key)
        elif case_key is None:
            session = next((trace.meta(k) for k in _SESSION_KEYS if trace.meta(k)), None)
        key = str(session) if session is not None else trace.trace_id
        order = trace.info.get("request_time") or turn.created_at or 0
        conversations.setdefault(key, []).append((order, turn, _expectations(trace)))
    if not seen:
        raise InputError("no traces found", file=file, expected="MLflow traces (Trace.to_json())")
    if not conversations:
        raise InputError(
            "no trace could be rebuilt as a conversation (see the warnings)", file=file
        )
    cases = [_case(key, turns, file) for key, turns in conversations.items()]
    return eval_set(Path(file).stem.split(".")[0] if file else "mlflow-traces", cases)


def _case(
    key: str, turns: list[tuple[object, Turn, dict[str, object]]], file: str | None
) -> EvalCase:
    ordered = sorted(turns, key=lambda t: str(t[0]) if not isinstance(t[0], int | float) else t[0])
    actual = [t for _, t, _ in ordered]
    expected = [e for _, _, e in ordered]
    if len(actual) > 1 and any("expected_response" in e for e in expected):
        # A reference turn holding only a response would also claim "no tool calls
        # expected" and fail every trajectory metric: say so instead of guessing.
        warn(
            f"{file or 'traces'}: session {key}: expected_response on traces of a"
            f" {len(actual)}-turn conversation"
            " is not used (a reference response is compared for single-trace cases; pass"
            " --map case_id=trace_id to score each trace on its own)",
        )
    facts = [str(f) for e in expected for f in _list(e.get("expected_facts"))]
    guidelines = [str(g) for e in expected for g in _list(e.get("guidelines"))]
    return EvalCase(
        id=key,
        actual=actual,
        expected_response=_str(expected[0].get("expected_response")) if len(actual) == 1 else None,
        expected_facts=facts or None,
        guidelines=guidelines or None,
    )


def _str(value: object) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _list(value: object) -> list[object]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


__all__ = ["NAME", "detect", "load_data", "load_file"]
