"""Tolerant parsing of judge replies.

Judges are asked for one JSON object (backends that support it constrain the reply to
a JSON schema). Replies from backends that do not are parsed tolerantly: code fences,
prose around the object, single trailing commas. A reply that still yields nothing is
"unparseable" (None) and is left out of the vote, never guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _objects(text: str) -> list[str]:
    """Balanced top-level `{...}` spans of `text`, in order (strings respected)."""
    spans: list[str] = []
    depth = 0
    start = -1
    in_string = False
    escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = depth > 0
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def parse_json_object(text: str | None) -> dict[str, Any] | None:
    """The first JSON object found in a judge reply, or None."""
    if not text:
        return None
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        for span in _objects(candidate):
            for attempt in (span, _TRAILING_COMMA.sub(r"\1", span)):
                try:
                    value = json.loads(attempt)
                except json.JSONDecodeError:
                    continue
                if isinstance(value, dict):
                    return value
    return None


def field(obj: Mapping[str, object] | None, *names: str) -> Any:
    """The first of `names` present in `obj` (case-insensitive keys), else None."""
    if obj is None:
        return None
    lowered = {k.lower(): v for k, v in obj.items() if isinstance(k, str)}
    for name in names:
        if name.lower() in lowered:
            return lowered[name.lower()]
    return None


def parse_choice(value: object, choices: Sequence[str]) -> str | None:
    """Normalise a label: case, surrounding space and punctuation ignored."""
    if isinstance(value, bool):
        value = "yes" if value else "no"
    if not isinstance(value, str):
        return None
    norm = value.strip().strip(".!\"'").strip().lower().replace("-", "_").replace(" ", "_")
    for choice in choices:
        if norm == choice.lower():
            return choice
    return None


def parse_yes_no(value: object) -> bool | None:
    """yes/no (also true/false, pass/fail, valid/invalid) → bool; anything else None."""
    label = parse_choice(value, ("yes", "no", "true", "false", "pass", "fail", "valid", "invalid"))
    if label is None:
        return None
    return label in ("yes", "true", "pass", "valid")


def parse_int_in(value: object, low: int, high: int) -> int | None:
    """An integer in [low, high] given as a number or a numeric string, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            return None
    if isinstance(value, int) and low <= value <= high:
        return value
    return None


def labelled_value(text: str | None, *keys: str) -> Any:
    """The value of the first of `keys` in a judge reply: from its JSON object, else
    from a `"key": value` line of a reply that is almost JSON (ADK's prompts ask for
    `"is_the_agent_response_valid": [valid or invalid]`, which judges often copy with
    the brackets and no quotes)."""
    found = field(parse_json_object(text), *keys)
    if found is not None or not text:
        return found
    for key in keys:
        value = r'\s*:\s*\[*\s*"?([A-Za-z_ ]+?)"?\s*\]*\s*[,\n}]'
        match = re.search(f'"{re.escape(key)}"' + value, text)
        if match:
            return match.group(1).strip()
    return None
