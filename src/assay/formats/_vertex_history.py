"""A conversation's earlier turns as Vertex's `history` column (see `assay.formats.vertex`).

The Gen AI evaluation SDK (`vertexai.Client().evals`) holds a multi-turn case as the
last user message (`prompt`), the reply to it (`response` / `reference`) and the
messages before it: `conversation_history` (its `EvalCase` field, a list of
`Message{content}`), given in a dataset as the `conversation_history` or `history`
column of genai `Content` objects (`{role, parts}`). assay writes a case of several
turns that way:

| turn | `history` messages |
|---|---|
| user text | `{role: user, parts: [{text}]}` |
| tool call step | `{role: model, parts: [{function_call: {name, args}}]}` |
| tool response step (an object) | `{role: user, parts: [{function_response: {name, response}}]}` |
| final response | `{role: model, parts: [{text}]}` |

and reads it back as the turns before the row's own. A message may hold several
parts, and a `{role, content: TEXT}` message is text; a user text part opens a turn, a
model text part is its answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from assay.core.cases import Step, ToolCall, ToolResponse, Turn, UserInput
from assay.errors import InputError

HISTORY_COLUMNS = ("history", "conversation_history")


def dump_history(turns: list[Turn], fail: Callable[[str], InputError]) -> list[dict[str, object]]:
    """The `history` messages of `turns` (the turns before a row's own)."""
    out: list[dict[str, Any]] = []
    for number, t in enumerate(turns, 1):
        ui = t.user_input
        if ui.text is None or ui.dtmf or ui.blobs or ui.event or ui.variables or ui.tool_responses:
            raise fail(f"its turn {number} of {len(turns) + 1} has no plain text user input")
        if t.expectations or t.rubrics:
            raise fail(f"its turn {number} of {len(turns) + 1} has expectations or rubrics")
        out.append({"role": "user", "parts": [{"text": ui.text}]})
        for step in t.steps:
            out.append(_step_message(step, number, len(turns) + 1, fail))
        if t.final_response is not None:
            out.append({"role": "model", "parts": [{"text": t.final_response}]})
    return out


def _step_message(
    step: Step, number: int, total: int, fail: Callable[[str], InputError]
) -> dict[str, object]:
    if step.tool_call is not None:
        call = {"name": step.tool_call.name, "args": step.tool_call.args}
        return {"role": "model", "parts": [{"function_call": call}]}
    reply = step.tool_response
    if reply is not None and isinstance(reply.response, dict):
        answer = {"name": reply.name, "response": reply.response}
        return {"role": "user", "parts": [{"function_response": answer}]}
    what = "a tool response that is not an object" if reply is not None else f"a {step.kind} step"
    raise fail(f"its turn {number} of {total} has {what} (no genai Content form)")


def parse_history(raw: object, file: str | None, case_id: str, where: str) -> list[Turn]:
    """The turns a `history` cell holds (a list of messages, or its JSON text in CSV)."""

    def error(message: str, path: str = where) -> InputError:
        return InputError(
            message,
            file=file,
            case_id=case_id,
            path=path,
            expected="a list of genai Content messages ({role, parts}), the first one "
            "the user's text",
        )

    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise error(f"not a JSON list ({exc.msg})") from None
        except RecursionError:
            raise error("nested too deeply to read") from None
    if not isinstance(raw, list):
        raise error(f"got {type(raw).__name__}")
    turns: list[Turn] = []
    for i, message in enumerate(raw):
        at = f"{where}[{i}]"
        for j, part in enumerate(_parts(message, error, at)):
            _add_part(turns, message.get("role"), part, error, f"{at}.parts[{j}]")
    return turns


def _parts(
    message: object, error: Callable[[str, str], InputError], at: str
) -> list[Mapping[str, object]]:
    if not isinstance(message, Mapping):
        raise error(f"got {type(message).__name__}", at)
    content = message.get("content")
    if isinstance(content, Mapping):  # a Message{content: Content}
        message = content
    elif isinstance(content, str):
        return [{"text": content}]
    parts = message.get("parts")
    if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
        raise error("the message has no list of parts", at)
    return parts


def _add_part(
    turns: list[Turn],
    role: object,
    part: Mapping[str, object],
    error: Callable[[str, str], InputError],
    at: str,
) -> None:
    text = part.get("text")
    call = part.get("function_call", part.get("functionCall"))
    reply = part.get("function_response", part.get("functionResponse"))
    if isinstance(text, str) and role == "user":
        turns.append(Turn(user_input=UserInput(text=text)))
        return
    if not turns:
        raise error("the history does not start with the user's text", at)
    current = turns[-1]
    if current.final_response is not None:
        raise error("a message after the turn's answer and before the next user text", at)
    if isinstance(text, str):
        current.final_response = text
    elif isinstance(call, Mapping) and isinstance(call.get("name"), str):
        args = call.get("args") or {}
        if not isinstance(args, Mapping):
            raise error("function_call.args is not an object", at)
        current.steps.append(Step(tool_call=ToolCall(name=call["name"], args=dict(args))))
    elif isinstance(reply, Mapping) and isinstance(reply.get("name"), str):
        answer = ToolResponse(name=reply["name"], response=reply.get("response"))
        current.steps.append(Step(tool_response=answer))
    else:
        raise error(
            f"a part assay does not read (keys: {', '.join(map(str, part))}); "
            "text, function_call and function_response are read",
            at,
        )
