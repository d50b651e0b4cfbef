"""Vertex AI's tool-call metrics: `tool_call_valid`, `tool_name_match`,
`tool_parameter_key_match`, `tool_parameter_kv_match` (SPEC §4.5).

Vertex scores a prediction against a reference, each a JSON string
`{"content": "...", "tool_calls": [{"name": "...", "arguments": {...}}]}`;
`parse_tool_message` reads that form (arguments as an object or as a JSON string of
one, as OpenAI-style tools write them) into assay's `ToolCall`s, and the `*_score`
functions compute each metric on two lists of calls, so the `evaluateInstances`
translation and the metrics below share one definition. On assay's model the
prediction is the invocation's tool calls and the reference the reference turn's.

Semantics (Vertex documents the outputs, not the pairing; assay pairs calls by
position, the order in which the model emitted them):

- `tool_call_valid`: 1 if the prediction holds at least one tool call and every call
  has a name and a JSON-object `arguments`. When the case declares its tools (ADK
  `app_details`, recorded by the ADK and OpenAI-tools adapters), every call must also
  name a declared tool and its arguments must be valid against that tool's parameter
  schema. Needs no reference.
- `tool_name_match`: 1 if the prediction has as many calls as the reference and each
  has the reference call's name; two empty lists match.
- `tool_parameter_key_match`: for each position, the calls' argument names compared
  as sets (shared ÷ union; 1 when both have none), 0 for a position whose names
  differ or whose call is missing; the sum ÷ the longer list's length. 1 means same
  calls with the same argument names; an extra or missing argument lowers it.
- `tool_parameter_kv_match`: the same with an argument counted as shared only when
  its value matches too: with `use_strict_string_match` values must be equal JSON;
  without it (the default, as in Vertex) scalars are compared as trimmed,
  case-folded text, so `23` matches `"23"` and `"London"` matches `"london "`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.core.cases import ToolCall
from assay.core.jsonvalue import json_equal


class ToolCallFormatError(ValueError):
    """A prediction or reference that is not Vertex's tool-call message form."""


@dataclass(frozen=True)
class ToolMessage:
    """One side of a Vertex tool-call instance: its text and its tool calls."""

    content: str
    tool_calls: list[ToolCall]


def _arguments(raw: object, where: str) -> dict[str, object]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolCallFormatError(f"{where}.arguments is not JSON: {exc.msg}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ToolCallFormatError(
            f"{where}.arguments must be a JSON object, got {type(raw).__name__}"
        )
    return raw


def parse_tool_message(text: str | Mapping[str, object]) -> ToolMessage:
    """Read Vertex's `{"content", "tool_calls": [{"name", "arguments"}]}` form.

    Raises ToolCallFormatError saying what is wrong (not JSON, no `tool_calls` list, a
    call without a name, arguments that are not an object).
    """
    data: Any = text
    if isinstance(text, str):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ToolCallFormatError(f"not JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(data, Mapping):
        raise ToolCallFormatError(
            f'expected an object {{"content": ..., "tool_calls": [...]}}, got {type(data).__name__}'
        )
    content = data.get("content")
    if content is not None and not isinstance(content, str):
        raise ToolCallFormatError("content must be a string")
    raw_calls = data.get("tool_calls", [])
    if isinstance(raw_calls, str):  # Vertex's docs also show the list serialised again
        try:
            raw_calls = json.loads(raw_calls)
        except json.JSONDecodeError as exc:
            raise ToolCallFormatError(f"tool_calls is not JSON: {exc.msg}") from None
    if not isinstance(raw_calls, list):
        raise ToolCallFormatError("tool_calls must be a list")
    calls: list[ToolCall] = []
    for i, raw in enumerate(raw_calls):
        where = f"tool_calls[{i}]"
        if not isinstance(raw, Mapping):
            raise ToolCallFormatError(f"{where} must be an object with name and arguments")
        name = raw.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ToolCallFormatError(f"{where} has no name")
        calls.append(ToolCall(name=name, args=_arguments(raw.get("arguments"), where)))
    return ToolMessage(content or "", calls)


# -- the four metrics on lists of calls --------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    score: float
    explanation: str


def tool_name_score(predicted: Sequence[ToolCall], reference: Sequence[ToolCall]) -> Verdict:
    names = [c.name for c in predicted]
    want = [c.name for c in reference]
    if names == want:
        return Verdict(1.0, f"tool names match: {want}" if want else "no tool call, as expected")
    return Verdict(0.0, f"tool names {names} differ from the reference {want}")


def _loose(value: object) -> object:
    """A value as the non-strict comparison sees it."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float | str):
        text = value if isinstance(value, str) else json.dumps(value)
        if isinstance(value, float) and value.is_integer():
            text = str(int(value))  # 23.0 and "23" compare equal
        return text.strip().casefold()
    if isinstance(value, list):
        return [_loose(v) for v in value]
    if isinstance(value, dict):
        return {k: _loose(v) for k, v in value.items()}
    return value


def values_match(predicted: object, reference: object, *, strict: bool) -> bool:
    if strict:
        return json_equal(predicted, reference)  # 1 equals 1.0; true is not 1
    return bool(_loose(predicted) == _loose(reference))


def _pair_score(pred: ToolCall, ref: ToolCall, *, values: bool, strict: bool) -> float:
    keys = set(pred.args) | set(ref.args)
    if not keys:
        return 1.0
    shared = set(pred.args) & set(ref.args)
    if values:
        shared = {k for k in shared if values_match(pred.args[k], ref.args[k], strict=strict)}
    return len(shared) / len(keys)


def parameter_score(
    predicted: Sequence[ToolCall],
    reference: Sequence[ToolCall],
    *,
    values: bool,
    strict: bool = False,
) -> Verdict:
    """`tool_parameter_key_match` (values=False) or `tool_parameter_kv_match` (True)."""
    longest = max(len(predicted), len(reference))
    if longest == 0:
        return Verdict(1.0, "no tool call, as expected")
    what = "argument names and values" if values else "argument names"
    total = 0.0
    notes: list[str] = []
    for i in range(longest):
        if i >= len(predicted):
            notes.append(f"call {i + 1} ({reference[i].name}) is missing")
            continue
        if i >= len(reference):
            notes.append(f"call {i + 1} ({predicted[i].name}) is not in the reference")
            continue
        pred, ref = predicted[i], reference[i]
        if pred.name != ref.name:
            notes.append(f"call {i + 1} is {pred.name}, the reference calls {ref.name}")
            continue
        share = _pair_score(pred, ref, values=values, strict=strict)
        total += share
        if share < 1:
            notes.append(f"call {i + 1} ({ref.name}): {_arg_diff(pred, ref, values, strict)}")
    score = total / longest
    if not notes:
        return Verdict(score, f"every call's {what} match the reference")
    return Verdict(score, "; ".join(notes))


def _arg_diff(pred: ToolCall, ref: ToolCall, values: bool, strict: bool) -> str:
    parts: list[str] = []
    missing = sorted(set(ref.args) - set(pred.args))
    extra = sorted(set(pred.args) - set(ref.args))
    if missing:
        parts.append(f"missing {', '.join(missing)}")
    if extra:
        parts.append(f"unexpected {', '.join(extra)}")
    if values:
        wrong = sorted(
            k
            for k in set(pred.args) & set(ref.args)
            if not values_match(pred.args[k], ref.args[k], strict=strict)
        )
        for key in wrong:
            parts.append(
                f"{key}={json.dumps(pred.args[key], ensure_ascii=False)} "
                f"(reference {json.dumps(ref.args[key], ensure_ascii=False)})"
            )
    return ", ".join(parts)
