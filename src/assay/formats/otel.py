"""OpenTelemetry traces in (`--from otel`): OTLP JSON exports rebuilt as conversations.

Reads what the OpenTelemetry Collector's file exporter writes — one OTLP JSON document
(`{"resourceSpans": [...]}`) per line — or one JSON document / list of them. Spans are
recognised by two conventions:

- **GenAI semantic conventions** (what ADK writes): `gen_ai.operation.name` is
  `invoke_agent` / `invoke_workflow` (an agent turn), `execute_tool` (a tool call:
  `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.call.arguments` / `.result`,
  or ADK's `gcp.vertex.agent.tool_call_args` / `.tool_response`), or a model call
  (`chat`, `generate_content`, `text_completion`: `gen_ai.input.messages` /
  `gen_ai.output.messages`, `gen_ai.usage.input_tokens` / `output_tokens`);
- **OpenInference** (Phoenix, Arize): `openinference.span.kind` AGENT / CHAIN / LLM /
  TOOL, with `input.value` / `output.value`, `tool.name`, `tool.parameters`,
  `llm.token_count.prompt` / `completion`.

Each trace is one turn (a user input, the tool calls and responses in start order, the
final response, latency, token usage); the traces of one conversation
(`gen_ai.conversation.id`, `session.id`, or ADK's `gcp.vertex.agent.session_id`) become
one case, turns in time order, its recorded `actual` turns — scored without running an
agent. Unknown attributes are ignored. A trace that cannot be rebuilt — a span naming
a parent that is not in the file, no agent/model/tool span, no user input — is skipped
with a `TraceSkipped` warning naming it and why; so is a line that is not JSON (a
truncated last line, say). The other traces load.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from assay.core.cases import EvalCase, EvalSet, Turn
from assay.errors import InputError
from assay.formats._build import eval_set
from assay.formats._common import read_text
from assay.formats._otel_turns import Span, conversation_key, turn_of

NAME = "otel"


class TraceSkipped(UserWarning):
    """A trace (or a line) of an OTLP file that could not be rebuilt; the rest loaded."""


@dataclass(slots=True)
class _Trace:
    trace_id: str
    spans: list[Span] = field(default_factory=list)


def detect(path: Path | None, data: object) -> bool:
    docs = data if isinstance(data, list) else [data]
    return bool(docs) and all(
        isinstance(d, Mapping) and ("resourceSpans" in d or "resource_spans" in d) for d in docs[:5]
    )


def _skip(file: str | None, message: str) -> None:
    warnings.warn(TraceSkipped(f"{file or 'traces'}: {message}"), stacklevel=3)


def json_documents(text: str, file: str | None) -> Iterator[object]:
    """Each document of a trace file: one JSON value (a list: its items), or one per
    line; a line that is not JSON (a truncated last line) is skipped with a warning."""
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if whole is not None:
        yield from whole if isinstance(whole, list) else [whole]
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as exc:
            _skip(file, f"line {number} is not JSON ({exc.msg}; truncated?): skipped")


def _any_value(value: object) -> object:
    """An OTLP `AnyValue` as a plain Python value."""
    if not isinstance(value, Mapping):
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return _attributes((value["kvlistValue"] or {}).get("values", []))
    return None


def _attributes(items: object) -> dict[str, object]:
    if not isinstance(items, list):
        return {}
    return {
        str(a["key"]): _any_value(a.get("value"))
        for a in items
        if isinstance(a, Mapping) and "key" in a
    }


def _spans(doc: object, file: str | None, where: str) -> Iterator[Span]:
    if not isinstance(doc, Mapping):
        _skip(file, f"{where} is not an OTLP object: skipped")
        return
    for resource in doc.get("resourceSpans") or doc.get("resource_spans") or []:
        scopes = resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []
        for scope in scopes:
            for raw in scope.get("spans") or []:
                try:
                    status = raw.get("status") or {}
                    error = (
                        status.get("message")
                        if status.get("code") in (2, "STATUS_CODE_ERROR")
                        else None
                    )
                    yield Span(
                        trace_id=str(raw["traceId"]),
                        span_id=str(raw["spanId"]),
                        parent_id=str(raw["parentSpanId"]) if raw.get("parentSpanId") else None,
                        name=str(raw.get("name", "")),
                        start=int(raw.get("startTimeUnixNano") or 0),
                        end=int(raw.get("endTimeUnixNano") or 0),
                        attributes=_attributes(raw.get("attributes")),
                        status_error=error or None,
                    )
                except (KeyError, TypeError, ValueError, AttributeError) as exc:
                    _skip(file, f"{where}: a span without {exc} (traceId/spanId): skipped")


_MAP_KEYS = {
    "case_id": "the span attribute whose value names a trace's conversation (case id)",
    "reference": "an eval set file whose cases (joined by case id) hold the references",
}


def _check_mapping(mapping: Mapping[str, str] | None, file: str | None) -> dict[str, str]:
    unknown = sorted(set(mapping or {}) - set(_MAP_KEYS))
    if unknown:
        keys = "; ".join(f"{k}=...: {v}" for k, v in _MAP_KEYS.items())
        raise InputError(f"--map {unknown[0]}=... is not an OTLP option", file=file, expected=keys)
    return dict(mapping or {})


def load_file(path: Path, mapping: Mapping[str, str] | None = None) -> EvalSet:
    """Load an OTLP JSON file (or JSON lines) into an `EvalSet` of recorded conversations.

    `mapping`: `case_id` names the attribute that keys conversations (default the
    conversation / session id, else the trace id); `reference` an eval set file whose
    cases, joined by case id, give the references.
    """
    options = _check_mapping(mapping, str(path))
    return load_text(read_text(path), file=str(path), **options)


def load_text(
    text: str, *, file: str | None = None, case_id: str | None = None, reference: str | None = None
) -> EvalSet:
    traces: dict[str, _Trace] = {}
    for index, doc in enumerate(json_documents(text, file), start=1):
        for span in _spans(doc, file, f"document {index}"):
            traces.setdefault(span.trace_id, _Trace(span.trace_id)).spans.append(span)
    return _joined(_build(traces, file, case_id), reference)


def load_data(data: object, *, file: str | None, mapping: Mapping[str, str] | None) -> EvalSet:
    options = _check_mapping(mapping, file)
    traces: dict[str, _Trace] = {}
    docs = data if isinstance(data, list) else [data]
    for index, doc in enumerate(docs, start=1):
        for span in _spans(doc, file, f"document {index}"):
            traces.setdefault(span.trace_id, _Trace(span.trace_id)).spans.append(span)
    return _joined(_build(traces, file, options.get("case_id")), options.get("reference"))


def _joined(evalset: EvalSet, reference: str | None) -> EvalSet:
    """Each case with the reference turns of the reference set's case of the same id."""
    if reference is None:
        return evalset
    from assay import formats

    references = {c.id: c for c in formats.load(reference).cases}
    cases = []
    for case in evalset.cases:
        ref = references.get(case.id)
        if ref is None:
            cases.append(case)
            continue
        cases.append(
            case.model_copy(
                update={
                    "reference": ref.reference,
                    "rubrics": case.rubrics or ref.rubrics,
                    "tags": case.tags or ref.tags,
                }
            )
        )
    return evalset.model_copy(update={"cases": cases})


def _build(traces: Mapping[str, _Trace], file: str | None, case_attr: str | None) -> EvalSet:
    if not traces:
        raise InputError(
            "no spans found", file=file, expected='OTLP JSON: {"resourceSpans": [...]} per line'
        )
    conversations: dict[str, list[tuple[int, Turn]]] = {}
    for trace in traces.values():
        known = {s.span_id for s in trace.spans}
        orphan = next((s for s in trace.spans if s.parent_id and s.parent_id not in known), None)
        if orphan is not None:
            _skip(
                file,
                f"trace {trace.trace_id}: span {orphan.name!r} ({orphan.span_id}) names parent"
                f" {orphan.parent_id}, which is not in the file: trace skipped",
            )
            continue
        turn, why = turn_of(trace.spans)
        if turn is None:
            _skip(file, f"trace {trace.trace_id}: {why}: trace skipped")
            continue
        key = conversation_key(trace.spans, case_attr) or trace.trace_id
        start = min(s.start for s in trace.spans)
        conversations.setdefault(key, []).append((start, turn))
    cases = []
    for key, turns in conversations.items():
        ordered = [t for _, t in sorted(turns, key=lambda pair: pair[0])]
        cases.append(EvalCase(id=key, actual=ordered))
    if not cases:
        raise InputError(
            "no trace could be rebuilt as a conversation (see the warnings)", file=file
        )
    return eval_set(Path(file).stem.split(".")[0] if file else "traces", cases)


__all__ = [
    "NAME",
    "Span",
    "TraceSkipped",
    "detect",
    "json_documents",
    "load_data",
    "load_file",
    "load_text",
]
