"""One trace's spans → one assay `Turn` (see `assay.formats.otel` for the conventions read)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from assay.core.cases import Step, ToolCall, ToolResponse, Turn, Usage, UserInput

_AGENT_OPS = frozenset({"invoke_agent", "invoke_workflow", "create_agent"})
_MODEL_OPS = frozenset({"chat", "generate_content", "text_completion", "embeddings"})
_CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id", "gcp.vertex.agent.session_id")


@dataclass(slots=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    end: int
    attributes: dict[str, Any]
    status_error: str | None = None

    @property
    def kind(self) -> str | None:
        """agent, model or tool (None: a span neither convention names)."""
        op = self.attributes.get("gen_ai.operation.name")
        if op in _AGENT_OPS:
            return "agent"
        if op == "execute_tool":
            return "tool"
        if op in _MODEL_OPS:
            return "model"
        oi = str(self.attributes.get("openinference.span.kind", "")).upper()
        return {"AGENT": "agent", "CHAIN": "agent", "LLM": "model", "TOOL": "tool"}.get(oi)


def conversation_key(spans: Sequence[Span], attribute: str | None = None) -> str | None:
    """The conversation a trace belongs to: `attribute`'s value, else a session id."""
    for key in (attribute,) if attribute else _CONVERSATION_KEYS:
        for span in spans:
            value = span.attributes.get(key)
            if value:
                return str(value)
    return None


def decoded_json(value: object) -> object:
    """A JSON-encoded attribute decoded (plain strings stay strings)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _message_texts(messages: object, role: str) -> list[str]:
    """Texts of the GenAI-semconv messages with `role` (parts of type text)."""
    texts = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("role") != role:
            continue
        parts = message.get("parts")
        if isinstance(parts, list):
            joined = "\n".join(
                str(p.get("content"))
                for p in parts
                if isinstance(p, dict) and p.get("type") == "text" and p.get("content")
            )
            if joined:
                texts.append(joined)
        elif isinstance(message.get("content"), str):
            texts.append(message["content"])
    return texts


def _openinference_messages(attrs: dict[str, object], prefix: str, role: str) -> list[str]:
    """`llm.input_messages.{i}.message.role/content` flattened attributes, by role."""
    out = []
    index = 0
    while f"{prefix}.{index}.message.role" in attrs:
        if attrs[f"{prefix}.{index}.message.role"] == role:
            content = attrs.get(f"{prefix}.{index}.message.content")
            if content:
                out.append(str(content))
        index += 1
    return out


def _user_text(agent: Span | None, models: Sequence[Span]) -> str | None:
    if agent is not None and agent.attributes.get("input.value") is not None:
        value = decoded_json(agent.attributes["input.value"])
        if isinstance(value, dict):
            for key in ("input", "query", "question", "message", "text"):
                if isinstance(value.get(key), str):
                    return str(value[key])
        return str(agent.attributes["input.value"])
    for model in models:
        attrs = model.attributes
        users = _message_texts(decoded_json(attrs.get("gen_ai.input.messages")), "user")
        users = users or _openinference_messages(attrs, "llm.input_messages", "user")
        if users:
            return users[-1]
    return None


def _final_response(agent: Span | None, models: Sequence[Span]) -> str | None:
    if agent is not None and agent.attributes.get("output.value") is not None:
        return str(agent.attributes["output.value"])
    for model in reversed(models):
        attrs = model.attributes
        texts = _message_texts(decoded_json(attrs.get("gen_ai.output.messages")), "assistant")
        texts = texts or _openinference_messages(attrs, "llm.output_messages", "assistant")
        if texts:
            return texts[-1]
        if attrs.get("output.value") is not None and model.attributes.get(
            "openinference.span.kind"
        ):
            return str(attrs["output.value"])
    return None


def _tool_steps(tool: Span) -> list[Step]:
    attrs = tool.attributes
    name = attrs.get("gen_ai.tool.name") or attrs.get("tool.name") or tool.name
    raw_args = (
        attrs.get("gen_ai.tool.call.arguments")
        or attrs.get("gcp.vertex.agent.tool_call_args")
        or attrs.get("tool.parameters")
        or (attrs.get("input.value") if attrs.get("openinference.span.kind") else None)
    )
    args = decoded_json(raw_args) if raw_args is not None else {}
    call_id = attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id")
    steps = [
        Step(
            tool_call=ToolCall(
                id=str(call_id) if call_id else None,
                name=str(name),
                args=args if isinstance(args, dict) else {"input": args},
            )
        )
    ]
    raw_result = (
        attrs.get("gen_ai.tool.call.result")
        or attrs.get("gcp.vertex.agent.tool_response")
        or (attrs.get("output.value") if attrs.get("openinference.span.kind") else None)
    )
    if raw_result is not None or tool.status_error:
        response: Any = {"error": tool.status_error}
        if raw_result is not None:
            response = decoded_json(raw_result)
        steps.append(
            Step(
                tool_response=ToolResponse(
                    id=str(call_id) if call_id else None,
                    name=str(name),
                    response=response,
                    latency_s=(tool.end - tool.start) / 1e9 if tool.end > tool.start else None,
                )
            )
        )
    return steps


def _usage(models: Sequence[Span]) -> Usage | None:
    inputs = outputs = 0
    seen = False
    for model in models:
        attrs = model.attributes
        i = attrs.get("gen_ai.usage.input_tokens", attrs.get("llm.token_count.prompt"))
        o = attrs.get("gen_ai.usage.output_tokens", attrs.get("llm.token_count.completion"))
        if i is not None or o is not None:
            seen = True
            inputs += int(i or 0)
            outputs += int(o or 0)
    return Usage(input_tokens=inputs, output_tokens=outputs) if seen else None


def turn_of(spans: Sequence[Span]) -> tuple[Turn | None, str]:
    """The turn a trace records, or None and why it cannot be rebuilt."""
    ordered = sorted(spans, key=lambda s: (s.start, s.end))
    agents = [s for s in ordered if s.kind == "agent"]
    models = [s for s in ordered if s.kind == "model"]
    tools = [s for s in ordered if s.kind == "tool"]
    if not (agents or models or tools):
        return None, "no agent, model or tool span (GenAI or OpenInference attributes)"
    # The outermost agent span holds the turn (ADK: invoke_workflow, then invoke_agent).
    agent = agents[0] if agents else None
    user = _user_text(agent, models)
    if user is None:
        return None, "no user input (no input.value or gen_ai.input.messages with a user text)"
    steps: list[Step] = []
    for tool in tools:
        steps += _tool_steps(tool)
    root = min(ordered, key=lambda s: s.start)
    end = max(s.end for s in ordered)
    errors = [s.status_error for s in ordered if s.status_error]
    return (
        Turn(
            id=root.attributes.get("gcp.vertex.agent.invocation_id") or root.trace_id,
            user_input=UserInput(text=user),
            steps=steps,
            final_response=_final_response(agent, models),
            latency_s=(end - root.start) / 1e9 if end > root.start else None,
            usage=_usage(models),
            error=errors[0] if errors else None,
            created_at=root.start / 1e9 if root.start else None,
        ),
        "",
    )
