"""Tool (function) calling in the stand-in's dialects: what requests carry, what replies call.

Requests: each dialect declares tools and sends earlier tool calls and tool results in
its own shape (OpenAI ``tools`` + assistant ``tool_calls`` + ``tool`` messages; Gemini
``functionDeclarations`` + ``functionCall`` / ``functionResponse`` parts; Anthropic
``tools`` + ``tool_use`` / ``tool_result`` blocks). The readers here turn them into one
neutral shape so a script or a test can look at them the same way whatever the client:
declarations as ``{"name", "description", "parameters"}``, calls as ``{"id", "name",
"arguments"}`` and results as ``{"id", "name", "content"}``.

Replies: a `StandinToolCall` (or a ``{"name", "arguments", "id"}`` dict) in
`StandinReply.tool_calls` becomes the dialect's call shape, built by the writers here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class BadRequest(Exception):
    """The request body is not what the dialect requires (answered with 400)."""


class BadScript(ValueError):
    """A scripted reply cannot be written in the request's dialect (answered with 500)."""


@dataclass(frozen=True)
class StandinToolCall:
    """A tool call the stand-in model makes.

    `arguments` is an object, or a string sent verbatim as OpenAI's JSON-encoded
    arguments (so a test can send arguments that are not valid JSON; the other
    dialects carry arguments as objects and need the string to be a JSON object).
    `id` defaults to ``call_<request index>_<n>`` (OpenAI), ``toolu_...`` (Anthropic),
    and to none for Gemini, whose API leaves call ids to the client.
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"a scripted tool call needs a non-empty name, got {self.name!r}")
        if not isinstance(self.arguments, Mapping | str):
            raise TypeError(
                f"arguments of scripted tool call {self.name!r} must be an object or a "
                f"JSON string, got {type(self.arguments).__name__}"
            )

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments))

    def arguments_object(self) -> dict[str, Any]:
        if not isinstance(self.arguments, str):
            return dict(self.arguments)
        try:
            value = json.loads(self.arguments)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise BadScript(
                f"arguments of scripted tool call {self.name!r} must be a JSON object in "
                f"this dialect, got {self.arguments!r}"
            )
        return value


ToolCallSpec = StandinToolCall | Mapping[str, Any]


def tool_calls_of(items: Sequence[ToolCallSpec]) -> tuple[StandinToolCall, ...]:
    """`StandinToolCall`s from calls or ``{"name", "arguments" | "args", "id"}`` dicts."""
    if isinstance(items, str | Mapping):
        raise TypeError("tool_calls must be a list of calls, not a single call")
    calls = []
    for item in items:
        if isinstance(item, StandinToolCall):
            calls.append(item)
            continue
        if not isinstance(item, Mapping):
            raise TypeError(f"a scripted tool call must be a dict or StandinToolCall: {item!r}")
        unknown = set(item) - {"name", "arguments", "args", "id"}
        if unknown:
            raise TypeError(
                f"scripted tool call has unknown keys {sorted(unknown)}; use name, arguments, id"
            )
        arguments = item.get("arguments", item.get("args", {}))
        calls.append(StandinToolCall(item.get("name", ""), arguments, item.get("id")))
    return tuple(calls)


# -- requests ------------------------------------------------------------------------------

#: (calls, results) of a conversation, in the neutral shape
Traffic = tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...]]
#: reads one message (a Mapping) into the calls and results found so far
_Reader = Callable[[Mapping[str, Any], list[dict[str, Any]], list[dict[str, Any]]], None]


def _traffic(messages: Sequence[object], read: _Reader) -> Traffic:
    """The calls and results `read` finds in each message (non-objects are skipped)."""
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, Mapping):
            read(message, calls, results)
    return tuple(calls), tuple(results)


def _result(calls: Sequence[dict[str, Any]], call_id: object, content: object) -> dict[str, Any]:
    """A result named after the call with its id (None when no call has it)."""
    name = next((c["name"] for c in calls if c["id"] == call_id), None)
    return {"id": call_id, "name": name, "content": content}


def _decoded(arguments: object) -> Any:
    """OpenAI's JSON-encoded arguments as an object (kept as sent when not JSON)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _declaration(
    name: object, description: object, parameters: object, where: str
) -> dict[str, Any]:
    if not isinstance(name, str) or not name:
        raise BadRequest(f"{where} needs a 'name' (string)")
    return {"name": name, "description": description or "", "parameters": parameters or {}}


def _list(value: object, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRequest(f"'{where}' must be a list")
    return value


def openai_tools(body: Mapping[str, object]) -> tuple[dict[str, Any], ...]:
    declared = []
    for i, tool in enumerate(_list(body.get("tools"), "tools")):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping):
            raise BadRequest(f"tools[{i}] needs a 'function' object")
        declared.append(
            _declaration(
                function.get("name"),
                function.get("description"),
                function.get("parameters"),
                f"tools[{i}].function",
            )
        )
    return tuple(declared)


def openai_traffic(messages: Sequence[object]) -> Traffic:
    """The tool calls and tool results in an OpenAI conversation."""
    return _traffic(messages, _read_openai)


def _read_openai(
    m: Mapping[str, Any], calls: list[dict[str, Any]], results: list[dict[str, Any]]
) -> None:
    for call in m.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            calls.append(
                {
                    "id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": _decoded(function.get("arguments")),
                }
            )
    if m.get("role") == "tool":
        results.append(_result(calls, m.get("tool_call_id"), m.get("content")))


def gemini_tools(body: Mapping[str, object]) -> tuple[dict[str, Any], ...]:
    declared = []
    for i, tool in enumerate(_list(body.get("tools"), "tools")):
        if not isinstance(tool, Mapping):
            raise BadRequest(f"tools[{i}] must be an object")
        functions = tool.get("functionDeclarations", tool.get("function_declarations"))
        for j, fn in enumerate(_list(functions, f"tools[{i}].functionDeclarations")):
            if not isinstance(fn, Mapping):
                raise BadRequest(f"tools[{i}].functionDeclarations[{j}] must be an object")
            parameters = next(
                (
                    fn[key]
                    for key in (
                        "parametersJsonSchema",
                        "parameters_json_schema",
                        "parameters",
                    )
                    if fn.get(key) is not None
                ),
                None,
            )
            declared.append(
                _declaration(
                    fn.get("name"),
                    fn.get("description"),
                    parameters,
                    f"tools[{i}].functionDeclarations[{j}]",
                )
            )
    return tuple(declared)


def _gemini_parts(content: Mapping[str, Any], *keys: str) -> Iterator[Mapping[str, Any]]:
    for part in content.get("parts") or ():
        if isinstance(part, Mapping):
            for key in keys:
                inner = part.get(key)
                if isinstance(inner, Mapping):
                    yield inner


def gemini_traffic(contents: Sequence[object]) -> Traffic:
    """The function calls and function responses in Gemini contents."""
    return _traffic(contents, _read_gemini)


def _read_gemini(
    content: Mapping[str, object], calls: list[dict[str, Any]], results: list[dict[str, Any]]
) -> None:
    for call in _gemini_parts(content, "functionCall", "function_call"):
        calls.append(
            {"id": call.get("id"), "name": call.get("name"), "arguments": call.get("args")}
        )
    for result in _gemini_parts(content, "functionResponse", "function_response"):
        results.append(
            {"id": result.get("id"), "name": result.get("name"), "content": result.get("response")}
        )


def is_gemini_tool_result(content: Mapping[str, Any]) -> bool:
    """A content made only of function responses (a tool turn, not the user's)."""
    parts = content.get("parts") or ()
    responses = list(_gemini_parts(content, "functionResponse", "function_response"))
    return bool(parts) and len(responses) == len(parts)


def gemini_tool_result_text(content: Mapping[str, object]) -> str:
    return "\n".join(
        json.dumps(r.get("response"), sort_keys=True)
        for r in _gemini_parts(content, "functionResponse", "function_response")
    )


def anthropic_tools(body: Mapping[str, object]) -> tuple[dict[str, Any], ...]:
    declared = []
    for i, tool in enumerate(_list(body.get("tools"), "tools")):
        if not isinstance(tool, Mapping):
            raise BadRequest(f"tools[{i}] must be an object")
        declared.append(
            _declaration(
                tool.get("name"), tool.get("description"), tool.get("input_schema"), f"tools[{i}]"
            )
        )
    return tuple(declared)


def _blocks(message: Mapping[str, object], kind: str) -> Iterator[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, list):
        yield from (b for b in content if isinstance(b, Mapping) and b.get("type") == kind)


def anthropic_traffic(messages: Sequence[object]) -> Traffic:
    """The tool_use and tool_result blocks in an Anthropic conversation."""
    return _traffic(messages, _read_anthropic)


def _read_anthropic(
    m: Mapping[str, object], calls: list[dict[str, Any]], results: list[dict[str, Any]]
) -> None:
    for block in _blocks(m, "tool_use"):
        calls.append(
            {"id": block.get("id"), "name": block.get("name"), "arguments": block.get("input")}
        )
    for block in _blocks(m, "tool_result"):
        results.append(_result(calls, block.get("tool_use_id"), block.get("content")))


def is_anthropic_tool_result(message: Mapping[str, object]) -> bool:
    content = message.get("content")
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content)
    )


# -- replies -------------------------------------------------------------------------------


def openai_message(
    text: str, calls: Sequence[StandinToolCall], index: int
) -> tuple[dict[str, Any], str]:
    """The assistant message and finish reason of an OpenAI reply."""
    if not calls:
        return {"role": "assistant", "content": text}, "stop"
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {
                "id": call.id or f"call_{index}_{n}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
            }
            for n, call in enumerate(calls)
        ],
    }
    return message, "tool_calls"


def gemini_parts(text: str, calls: Sequence[StandinToolCall]) -> list[dict[str, Any]]:
    """The candidate parts of a Gemini reply: text (if any), then function calls."""
    parts: list[dict[str, Any]] = [{"text": text}] if text or not calls else []
    for call in calls:
        function_call: dict[str, Any] = {"name": call.name, "args": call.arguments_object()}
        if call.id:
            function_call["id"] = call.id
        parts.append({"functionCall": function_call})
    return parts


def anthropic_blocks(
    text: str, calls: Sequence[StandinToolCall], index: int
) -> tuple[list[dict[str, Any]], str]:
    """The content blocks and stop reason of an Anthropic reply."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text or not calls else []
    blocks += [
        {
            "type": "tool_use",
            "id": call.id or f"toolu_{index}_{n}",
            "name": call.name,
            "input": call.arguments_object(),
        }
        for n, call in enumerate(calls)
    ]
    return blocks, "tool_use" if calls else "end_turn"


def call_words(calls: Sequence[StandinToolCall]) -> int:
    """Whitespace words of the calls' names and arguments (default output token count)."""
    return sum(len(f"{c.name} {c.arguments_json()}".split()) for c in calls)
