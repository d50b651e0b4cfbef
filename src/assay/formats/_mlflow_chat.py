"""Chat requests and response objects of MLflow / Databricks rows.

See `assay.formats.mlflow` for how they map to turns.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from assay.core.cases import AgentMessage, EvalSet, Step, Turn, Usage
from assay.formats._build import turn
from assay.formats._columns import row_error
from assay.formats._common import type_name
from assay.formats._loss import Loss

_REQUEST = "a string, or {messages: [{role, content}]}"
SYSTEM = "mlflow:system"  # metadata: leading system messages of a chat
RAW_RESPONSE = "mlflow:response"  # metadata: a response object, written back
PROMPT_KEYS = ("request", "messages", "question", "query", "input", "prompt")


def conversation(
    request: object, file: str | None, case_id: str, path: str
) -> tuple[list[str], list[Turn], str]:
    """(system messages, earlier turns, prompt) of a request."""
    if isinstance(request, str):
        return [], [], request
    messages = request.get("messages") if isinstance(request, Mapping) else None
    if not isinstance(messages, list) or not messages:
        raise row_error(file, case_id, path, f"got {type_name(request)}", _REQUEST)
    system: list[str] = []
    turns: list[tuple[str, list[str]]] = []
    for i, msg in enumerate(messages):
        mpath = f"{path}.messages[{i}]"
        role = msg.get("role") if isinstance(msg, Mapping) else None
        content = msg.get("content") if isinstance(msg, Mapping) else None
        if not isinstance(content, str) or role not in ("system", "user", "assistant"):
            raise row_error(
                file,
                case_id,
                mpath,
                "not a chat message",
                "{role: system | user | assistant, content: string}",
            )
        if role == "system":
            if turns:
                raise row_error(
                    file,
                    case_id,
                    mpath,
                    "a system message after the first user message",
                    "system messages only at the start",
                )
            system.append(content)
        elif role == "user":
            turns.append((content, []))
        elif not turns:
            raise row_error(
                file,
                case_id,
                mpath,
                "an assistant message before any user message",
                "the conversation to start with the user",
            )
        else:
            turns[-1][1].append(content)
    if messages[-1].get("role") != "user":
        raise row_error(
            file,
            case_id,
            f"{path}.messages[{len(messages) - 1}]",
            "the last message is not the user's",
            "the prompt as the last message",
        )
    history = [
        turn(
            user,
            [Step(agent_message=AgentMessage(text=t)) for t in replies[:-1]],
            replies[-1] if replies else None,
        )
        for user, replies in turns[:-1]
    ]
    return system, history, turns[-1][0]


def response_of(
    value: Any, file: str | None, case_id: str, path: str
) -> tuple[str, Usage | None, dict[str, object] | None]:
    """(text, token usage, the object itself) of a response string or object."""
    if isinstance(value, str):
        return value, None, None
    text = _response_text(value) if isinstance(value, Mapping) else None
    if text is None:
        raise row_error(
            file,
            case_id,
            path,
            f"got {type_name(value)} without response text",
            "a string, or an object with response, content or choices[0].message.content",
        )
    usage = value.get("usage")
    parsed = None
    if isinstance(usage, Mapping):
        tokens = [usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)]
        if not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
            raise row_error(
                file,
                case_id,
                f"{path}.usage",
                "token counts are not integers",
                "{prompt_tokens: int, completion_tokens: int}",
            )
        parsed = Usage(input_tokens=tokens[0], output_tokens=tokens[1])
    return text, parsed, dict(value)


def _response_text(value: Mapping[str, object]) -> str | None:
    for key in ("response", "content"):
        if isinstance(value.get(key), str):
            return str(value[key])
    choices = value.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        message = choices[0].get("message")
        if isinstance(message, Mapping) and isinstance(message.get("content"), str):
            return str(message["content"])
    return None


def with_text(raw: dict[str, Any], text: str | None, usage: Usage | None) -> dict[str, object]:
    """A copy of the response object `raw` with its text and token counts replaced."""
    out = copy.deepcopy(raw)
    if text is not None:
        for key in ("response", "content"):
            if isinstance(out.get(key), str):
                out[key] = text
                break
        else:
            out["choices"][0]["message"]["content"] = text
    if usage is not None and isinstance(out.get("usage"), dict):
        out["usage"]["prompt_tokens"] = usage.input_tokens
        out["usage"]["completion_tokens"] = usage.output_tokens
    return out


def fit_answers(fitted: EvalSet) -> list[Loss]:
    """Hold earlier turns of agent messages without a final response as a chat can.

    A chat history has no mark for an agent message that is not the turn's answer: the
    last assistant message after a user message reads back as that turn's final
    response. So such a turn is held with its last message as the final response, and
    that is reported as a loss (the text is kept; its role changes).
    """
    losses = []
    for case in fitted.cases:
        where = "actual" if case.actual else "reference"
        for t in (case.actual or case.reference or [])[:-1]:
            message = t.steps[-1].agent_message if t.steps else None
            if t.final_response is None and message is not None:
                field = f"{where}[].steps[].agent_message (read back as the answer)"
                losses.append(Loss(case.id, field))
                t.steps.pop()
                t.final_response = message.text
    return losses


def prompt_key(inputs: Mapping[str, object]) -> str | None:
    for key in PROMPT_KEYS:
        if inputs.get(key) is not None:
            return key
    strings = [k for k, v in inputs.items() if isinstance(v, str)]
    return strings[0] if len(inputs) == 1 and strings else None
