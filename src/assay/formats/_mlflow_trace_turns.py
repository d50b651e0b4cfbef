"""One MLflow trace (`Trace.to_dict()` shape, or a `search_traces` row) → one assay `Turn`.

See `assay.formats.mlflow_traces` for what is read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.core.cases import (
    Chunk,
    Retrieval,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    Usage,
    UserInput,
)
from assay.formats._otel_turns import decoded_json as decoded

_USER_KEYS = ("input", "query", "question", "request", "prompt", "message", "text", "user_input")
_REPLY_KEYS = ("output", "response", "answer", "content", "text", "result", "final_response")


@dataclass(slots=True)
class MlflowSpan:
    span_id: str
    parent_id: str | None
    name: str
    start: int
    end: int
    kind: str
    inputs: Any
    outputs: Any
    attributes: dict[str, Any]
    error: str | None


@dataclass(slots=True)
class MlflowTrace:
    trace_id: str
    info: dict[str, Any]
    spans: list[MlflowSpan] = field(default_factory=list)
    assessments: list[Any] = field(default_factory=list)

    def meta(self, key: str) -> object:
        for where in ("trace_metadata", "request_metadata", "tags"):
            bag = self.info.get(where)
            if isinstance(bag, Mapping) and bag.get(key) not in (None, ""):
                return bag[key]
        return None


def is_doc(value: object) -> bool:
    data = value.get("data") if isinstance(value, Mapping) else None
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("info"), Mapping)
        and isinstance(data, Mapping)
        and isinstance(data.get("spans"), list)
    )


def is_row(value: object) -> bool:
    return (
        isinstance(value, Mapping)
        and "trace_id" in value
        and ("trace" in value or "spans" in value)
    )


def plain(value: object) -> Any:
    """A `Trace` object (or anything with `to_dict`) as plain data."""
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) and not isinstance(value, Mapping) else value


def _span(raw: Mapping[str, Any]) -> MlflowSpan:
    attrs = {str(k): decoded(v) for k, v in (raw.get("attributes") or {}).items()}
    status = raw.get("status") or {}
    code = status.get("code") if isinstance(status, Mapping) else status
    error = None
    if code in ("STATUS_CODE_ERROR", "ERROR", 2):
        error = (status.get("message") if isinstance(status, Mapping) else None) or "span error"
    start = raw.get("start_time_unix_nano", raw.get("start_time"))
    end = raw.get("end_time_unix_nano", raw.get("end_time"))
    parent = raw.get("parent_span_id", raw.get("parent_id"))
    span_id = raw.get("span_id") or (raw.get("context") or {}).get("span_id")
    if not span_id:
        raise KeyError("span_id")
    return MlflowSpan(
        span_id=str(span_id),
        parent_id=str(parent) if parent else None,
        name=str(raw.get("name", "")),
        start=int(start or 0),
        end=int(end or 0),
        kind=str(attrs.get("mlflow.spanType") or "UNKNOWN").upper(),
        inputs=attrs.get("mlflow.spanInputs"),
        outputs=attrs.get("mlflow.spanOutputs"),
        attributes=attrs,
        error=error,
    )


def read_trace(item: Any, where: str) -> MlflowTrace | str:
    """One trace from a `Trace.to_json()` document or a `search_traces` row, or why not."""
    item = plain(item)
    assessments: list[Any] = []
    if is_row(item):
        assessments = list(item.get("assessments") or [])
        inner = plain(item.get("trace"))
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except json.JSONDecodeError:
                inner = None
        if is_doc(inner):
            doc = inner
        else:
            info = {
                k: item.get(k)
                for k in ("trace_id", "trace_metadata", "tags", "request_time", "state")
            }
            doc = {"info": info, "data": {"spans": list(item.get("spans") or [])}}
    elif is_doc(item):
        doc = item
    else:
        return f"{where} is neither an MLflow trace nor a search_traces row: skipped"
    info = dict(doc["info"])
    trace_id = str(info.get("trace_id") or info.get("request_id") or "")
    assessments = assessments or list(info.get("assessments") or [])
    trace = MlflowTrace(trace_id=trace_id or where, info=info, assessments=assessments)
    for raw in doc["data"]["spans"]:
        try:
            trace.spans.append(_span(plain(raw)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            return f"trace {trace.trace_id}: a span without {exc}: trace skipped"
    return trace


def _content_text(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # parts: [{"type": "text", "text": ...}]
        texts = [
            str(p.get("text") or p.get("content"))
            for p in content
            if isinstance(p, Mapping) and (p.get("text") or p.get("content"))
        ]
        return "\n".join(texts) or None
    return None


def _last_message(messages: object, role: str) -> str | None:
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == role:
            text = _content_text(message.get("content"))
            if text:
                return text
    return None


def _text(value: object, keys: Sequence[str], role: str) -> str | None:
    """The user's (or the agent's) words in a span's inputs (or outputs)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        found = _last_message(value.get("messages"), role)
        if found:
            return found
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
            text = _content_text((choices[0].get("message") or {}).get("content"))
            if text:
                return text
        for key in keys:
            inner = value.get(key)
            text = _content_text(inner) if not isinstance(inner, Mapping) else None
            if text:
                return text
            if isinstance(inner, Mapping | list):
                nested = _text(inner, keys, role)
                if nested:
                    return nested
        strings = [v for v in value.values() if isinstance(v, str)]
        if len(value) == 1 and strings:
            return strings[0]
    if isinstance(value, list):
        found = _last_message(value, role)
        if found:
            return found
    return json.dumps(value, ensure_ascii=False, default=str)


def _tool_steps(span: MlflowSpan) -> list[Step]:
    args = span.inputs if isinstance(span.inputs, Mapping) else {}
    if span.inputs is not None and not isinstance(span.inputs, Mapping):
        args = {"input": span.inputs}
    steps = [Step(tool_call=ToolCall(name=span.name, args=dict(args)))]
    if span.outputs is not None or span.error:
        response = span.outputs if span.outputs is not None else {"error": span.error}
        steps.append(
            Step(
                tool_response=ToolResponse(
                    name=span.name,
                    response=response,
                    latency_s=(span.end - span.start) / 1e9 if span.end > span.start else None,
                )
            )
        )
    return steps


def _chunk(doc: object) -> Chunk:
    if isinstance(doc, Mapping):
        meta = doc.get("metadata")
        if not isinstance(meta, Mapping):
            meta = {}
        uri = meta.get("doc_uri") or meta.get("source") or doc.get("id")
        content = doc.get("page_content", doc.get("content"))
        return Chunk(
            doc_uri=str(uri) if uri is not None else None,
            content=str(content) if content is not None else None,
        )
    return Chunk(content=str(doc))


def _retrieval(span: MlflowSpan) -> Step:
    docs = span.outputs if isinstance(span.outputs, list) else []
    return Step(retrieval=Retrieval(chunks=[_chunk(d) for d in docs]))


def _usage(trace: MlflowTrace, models: Sequence[MlflowSpan]) -> Usage | None:
    total = decoded(trace.meta("mlflow.trace.tokenUsage"))
    if isinstance(total, Mapping) and ("input_tokens" in total or "output_tokens" in total):
        return Usage(
            input_tokens=int(total.get("input_tokens") or 0),
            output_tokens=int(total.get("output_tokens") or 0),
        )
    inputs = outputs = 0
    seen = False
    for span in models:
        usage = span.attributes.get("mlflow.chat.tokenUsage")
        if not isinstance(usage, Mapping) and isinstance(span.outputs, Mapping):
            usage = span.outputs.get("usage")
        if isinstance(usage, Mapping):
            seen = True
            inputs += int(usage.get("input_tokens", usage.get("prompt_tokens")) or 0)
            outputs += int(usage.get("output_tokens", usage.get("completion_tokens")) or 0)
    return Usage(input_tokens=inputs, output_tokens=outputs) if seen else None


def turn_of(trace: MlflowTrace) -> tuple[Turn | None, str]:
    if not trace.spans:
        return None, "no spans"
    known = {s.span_id for s in trace.spans}
    orphan = next((s for s in trace.spans if s.parent_id and s.parent_id not in known), None)
    if orphan is not None:
        return None, f"span {orphan.name!r} names parent {orphan.parent_id}, not in the trace"
    ordered = sorted(trace.spans, key=lambda s: (s.start, s.end))
    root = next((s for s in ordered if s.parent_id is None), ordered[0])
    inputs = root.inputs
    if inputs is None:
        inputs = decoded(trace.meta("mlflow.traceInputs") or trace.info.get("request_preview"))
    user = _text(inputs, _USER_KEYS, "user")
    if not user:
        return None, "no user input (the root span has no inputs)"
    outputs = root.outputs
    if outputs is None:
        outputs = decoded(trace.meta("mlflow.traceOutputs") or trace.info.get("response_preview"))
    steps: list[Step] = []
    for span in ordered:
        if span.kind == "TOOL" and span is not root:
            steps += _tool_steps(span)
        elif span.kind == "RETRIEVER" and span is not root:
            steps.append(_retrieval(span))
    duration = trace.info.get("execution_duration_ms") or trace.info.get("execution_duration")
    latency = float(duration) / 1000 if isinstance(duration, int | float) else None
    if latency is None and root.end > root.start:
        latency = (root.end - root.start) / 1e9
    error = root.error or next((s.error for s in ordered if s.error), None)
    if str(trace.info.get("state") or trace.info.get("status") or "").endswith("ERROR"):
        error = error or "the trace ended in state ERROR"
    models = [s for s in ordered if s.kind in ("LLM", "CHAT_MODEL")]
    return (
        Turn(
            id=trace.trace_id,
            user_input=UserInput(text=user),
            steps=steps,
            final_response=None if outputs is None else _text(outputs, _REPLY_KEYS, "assistant"),
            latency_s=latency,
            model_calls=len(models) or None,
            usage=_usage(trace, models),
            error=error,
            created_at=root.start / 1e9 if root.start else None,
        ),
        "",
    )


__all__ = ["MlflowTrace", "decoded", "is_doc", "is_row", "plain", "read_trace", "turn_of"]
