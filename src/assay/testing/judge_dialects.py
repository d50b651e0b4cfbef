"""The three API dialects the judge stand-in speaks: requests in, replies out.

`parse_request` turns an OpenAI chat-completions, Gemini generateContent or Anthropic
messages body into one `StandinRequest`; `reply_body` and `error_body` build the
dialect's own success and error shapes from a `StandinReply`. Shapes follow the public
API references closely enough for the official SDKs to parse them. Tool calling (tool
declarations, calls and results in requests; scripted calls in replies) is in
`assay.testing.standin_tools`.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from assay.testing.standin_tools import (
    BadRequest,
    StandinToolCall,
    ToolCallSpec,
    anthropic_blocks,
    anthropic_tools,
    anthropic_traffic,
    call_words,
    gemini_parts,
    gemini_tool_result_text,
    gemini_tools,
    gemini_traffic,
    is_anthropic_tool_result,
    is_gemini_tool_result,
    openai_message,
    openai_tools,
    openai_traffic,
    tool_calls_of,
)

__all__ = ["BadRequest", "StandinReply", "StandinRequest", "StandinToolCall"]

Dialect = Literal["openai", "gemini", "anthropic"]

_GEMINI_PATH = re.compile(r"/models/(?P<model>[^/:]+):generateContent$")


@dataclass(frozen=True)
class StandinRequest:
    """One request as the stand-in understood it, whatever the dialect."""

    dialect: Dialect
    path: str
    model: str
    #: the JSON body exactly as sent
    body: Mapping[str, Any]
    #: request headers, lower-cased names
    headers: Mapping[str, str]
    #: the conversation as {"role": "system" | "user" | "assistant" | "tool", "content":
    #: text}; "tool" holds tool results (their text, or their JSON for Gemini)
    messages: tuple[Mapping[str, str], ...]
    #: the JSON schema the client asked the reply to follow, if any
    json_schema: Mapping[str, Any] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    #: 0-based arrival order among well-formed requests
    index: int = 0
    #: the tools declared, as {"name", "description", "parameters"}
    tools: tuple[Mapping[str, Any], ...] = ()
    #: the tool calls earlier in the conversation, as {"id", "name", "arguments"}
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    #: the tool results sent back, as {"id", "name", "content"}
    tool_results: tuple[Mapping[str, Any], ...] = ()

    @property
    def prompt(self) -> str:
        """All message texts joined by newlines (handy for matching in scripts)."""
        return "\n".join(m["content"] for m in self.messages)

    @property
    def system(self) -> str:
        """The system instructions ("" when there are none)."""
        return "\n".join(m["content"] for m in self.messages if m["role"] == "system")

    @property
    def user(self) -> str:
        """The last user message ("" when there is none)."""
        users = [m["content"] for m in self.messages if m["role"] == "user"]
        return users[-1] if users else ""


@dataclass(frozen=True)
class StandinReply:
    """What the stand-in answers to one request.

    A status below 400 answers `text` in the dialect's reply shape; 400 and above answer
    the dialect's error shape with `text` (or a stock phrase) as the message.
    `raw_body` replaces the body verbatim (garbage replies). `tool_calls` makes the
    reply call tools (``StandinToolCall``s or ``{"name", "arguments", "id"}`` dicts),
    after `text` if there is any, with the dialect's tool-call stop reason. Token counts
    default to whitespace word counts of the prompt and of `text` and the calls. After
    `delay`, a reply with
    `hold` waits until that event is set, so a test can keep calls in flight exactly as
    long as it needs (stopping the server releases them too, without a reply).
    """

    text: str = ""
    status: int = 200
    delay: float = 0.0
    raw_body: str | bytes | None = None
    retry_after: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: input tokens reported as read from the prompt cache (OpenAI's
    #: ``prompt_tokens_details.cached_tokens``, Anthropic's ``cache_read_input_tokens``)
    cached_tokens: int | None = None
    hold: threading.Event | None = None
    tool_calls: Sequence[ToolCallSpec] = ()

    def __post_init__(self) -> None:
        # A malformed call is the script author's mistake: say so where it is written.
        tool_calls_of(self.tool_calls)

    @property
    def calls(self) -> tuple[StandinToolCall, ...]:
        """`tool_calls` as `StandinToolCall`s."""
        return tool_calls_of(self.tool_calls)

    @classmethod
    def rate_limited(cls, retry_after: float | None = 1.0, message: str = "") -> StandinReply:
        """A 429 with a Retry-After header (none when `retry_after` is None)."""
        return cls(text=message or "rate limit exceeded", status=429, retry_after=retry_after)

    @classmethod
    def server_error(cls, status: int = 500, message: str = "") -> StandinReply:
        """A 5xx in the dialect's error shape."""
        return cls(text=message or "internal server error", status=status)

    @classmethod
    def garbage(cls, body: str = "<html>upstream hiccup") -> StandinReply:
        """A 200 whose body is not the JSON the client expects (still labelled JSON)."""
        return cls(raw_body=body)


ScriptItem = StandinReply | str
Script = Callable[[StandinRequest], ScriptItem] | Sequence[ScriptItem] | ScriptItem


def route(path: str) -> tuple[Dialect | None, str]:
    """The dialect a request path speaks, and the model named in the path (Gemini)."""
    if path.endswith("/chat/completions"):
        return "openai", ""
    match = _GEMINI_PATH.search(path)
    if match:
        return "gemini", match.group("model")
    if path.endswith("/messages"):
        return "anthropic", ""
    return None, ""


def _pick(m: Mapping[str, object], *names: str) -> Any:
    """The first of `names` present in `m` (the SDKs differ in snake/camel case)."""
    for name in names:
        if name in m:
            return m[name]
    return None


def _text(content: object) -> str:
    """Text of a message content: a string, or a list of text parts/blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _number(value: object, name: str) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise BadRequest(f"{name} must be a number, got {value!r}")
    return value


def _parse_openai(
    path: str, _model: str, body: dict[str, object], headers: Mapping[str, str]
) -> StandinRequest:
    model, raw_messages = body.get("model"), body.get("messages")
    if not isinstance(model, str) or not isinstance(raw_messages, list) or not raw_messages:
        raise BadRequest("'model' (string) and 'messages' (non-empty list) are required")
    messages = tuple(
        {"role": str(m.get("role", "")), "content": _text(m.get("content"))}
        for m in raw_messages
        if isinstance(m, Mapping)
    )
    calls, results = openai_traffic(raw_messages)
    schema = None
    fmt = body.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema")
        if not isinstance(spec, Mapping) or not isinstance(spec.get("schema"), Mapping):
            raise BadRequest("response_format.json_schema.schema must be an object")
        schema = spec["schema"]
    return StandinRequest(
        dialect="openai",
        path=path,
        model=model,
        body=body,
        headers=headers,
        messages=messages,
        json_schema=schema,
        temperature=_number(body.get("temperature"), "temperature"),
        max_tokens=_number(_pick(body, "max_completion_tokens", "max_tokens"), "max_tokens"),
        tools=openai_tools(body),
        tool_calls=calls,
        tool_results=results,
    )


def _parse_gemini(
    path: str, model: str, body: dict[str, object], headers: Mapping[str, str]
) -> StandinRequest:
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise BadRequest("'contents' (non-empty list) is required")
    messages: list[Mapping[str, str]] = []
    system = _pick(body, "systemInstruction", "system_instruction")
    if isinstance(system, Mapping):
        messages.append({"role": "system", "content": _text(system.get("parts"))})
    for content in contents:
        if not isinstance(content, Mapping):
            continue
        if is_gemini_tool_result(content):
            messages.append({"role": "tool", "content": gemini_tool_result_text(content)})
        else:
            role = "assistant" if content.get("role") == "model" else "user"
            messages.append({"role": role, "content": _text(content.get("parts"))})
    calls, results = gemini_traffic(contents)
    config = _pick(body, "generationConfig", "generation_config") or {}
    schema = _pick(config, "responseJsonSchema", "response_json_schema")
    if schema is None:
        schema = _pick(config, "responseSchema", "response_schema")
    return StandinRequest(
        dialect="gemini",
        path=path,
        model=model,
        body=body,
        headers=headers,
        messages=tuple(messages),
        json_schema=schema if isinstance(schema, Mapping) else None,
        temperature=_number(config.get("temperature"), "temperature"),
        max_tokens=_number(_pick(config, "maxOutputTokens", "max_output_tokens"), "max tokens"),
        tools=gemini_tools(body),
        tool_calls=calls,
        tool_results=results,
    )


def _parse_anthropic(
    path: str, _model: str, body: dict[str, Any], headers: Mapping[str, str]
) -> StandinRequest:
    model, raw_messages = body.get("model"), body.get("messages")
    if not isinstance(model, str) or not isinstance(raw_messages, list) or not raw_messages:
        raise BadRequest("'model' (string) and 'messages' (non-empty list) are required")
    if not isinstance(body.get("max_tokens"), int):
        raise BadRequest("'max_tokens' (integer) is required")
    messages: list[Mapping[str, str]] = []
    if body.get("system") is not None:
        messages.append({"role": "system", "content": _text(body["system"])})
    for m in raw_messages:
        if not isinstance(m, Mapping):
            continue
        if is_anthropic_tool_result(m):
            text = "\n".join(_text(block.get("content")) for block in m["content"])
            messages.append({"role": "tool", "content": text})
        else:
            messages.append({"role": str(m.get("role", "")), "content": _text(m.get("content"))})
    calls, results = anthropic_traffic(raw_messages)
    schema = None
    output = body.get("output_config")
    if isinstance(output, Mapping) and isinstance(output.get("format"), Mapping):
        schema = output["format"].get("schema")
    return StandinRequest(
        dialect="anthropic",
        path=path,
        model=model,
        body=body,
        headers=headers,
        messages=tuple(messages),
        json_schema=schema if isinstance(schema, Mapping) else None,
        temperature=_number(body.get("temperature"), "temperature"),
        max_tokens=body["max_tokens"],
        tools=anthropic_tools(body),
        tool_calls=calls,
        tool_results=results,
    )


_PARSERS: dict[Dialect, Callable[[str, str, dict[str, Any], Mapping[str, str]], StandinRequest]] = {
    "openai": _parse_openai,
    "gemini": _parse_gemini,
    "anthropic": _parse_anthropic,
}


def parse_request(
    dialect: Dialect, path: str, path_model: str, body: object, headers: Mapping[str, str]
) -> StandinRequest:
    """The request a JSON `body` sent to `path` stands for; BadRequest if malformed."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    return _PARSERS[dialect](path, path_model, body, headers)


def reply_body(request: StandinRequest, reply: StandinReply) -> dict[str, object]:
    """The dialect's success body carrying `reply.text`, tool calls and token usage.

    Raises `BadScript` (a ValueError) when the scripted calls cannot be written in the
    request's dialect.
    """
    text, calls = reply.text, reply.calls
    tokens_in = reply.input_tokens
    if tokens_in is None:
        tokens_in = len(request.prompt.split())
    tokens_out = reply.output_tokens
    if tokens_out is None:
        tokens_out = len(text.split()) + call_words(calls)
    reply_id = f"standin-{request.index}"
    if request.dialect == "openai":
        n = request.body.get("n")
        choices = n if isinstance(n, int) and n > 0 else 1
        message, finish_reason = openai_message(text, calls, request.index)
        return {
            "id": f"chatcmpl-{reply_id}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.model,
            "choices": [
                {
                    "index": i,
                    "message": message,
                    "finish_reason": finish_reason,
                    "logprobs": None,
                }
                for i in range(choices)
            ],
            "usage": {
                "prompt_tokens": tokens_in,
                "completion_tokens": tokens_out,
                "total_tokens": tokens_in + tokens_out,
                **(
                    {"prompt_tokens_details": {"cached_tokens": reply.cached_tokens}}
                    if reply.cached_tokens is not None
                    else {}
                ),
            },
        }
    if request.dialect == "gemini":
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": gemini_parts(text, calls)},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": tokens_in,
                "candidatesTokenCount": tokens_out,
                "totalTokenCount": tokens_in + tokens_out,
            },
            "modelVersion": request.model,
            "responseId": reply_id,
        }
    blocks, stop_reason = anthropic_blocks(text, calls, request.index)
    return {
        "id": f"msg_{reply_id}",
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            **(
                {"cache_read_input_tokens": reply.cached_tokens}
                if reply.cached_tokens is not None
                else {}
            ),
        },
    }


_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_ANTHROPIC_TYPE = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(dialect: Dialect, status: int, message: str) -> dict[str, object]:
    """The dialect's error body for an HTTP error `status`."""
    if dialect == "openai":
        kind = "rate_limit_exceeded" if status == 429 else "invalid_request_error"
        if status >= 500:
            kind = "server_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
    if dialect == "gemini":
        name = _GEMINI_STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
        return {"error": {"code": status, "message": message, "status": name}}
    kind = _ANTHROPIC_TYPE.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}
