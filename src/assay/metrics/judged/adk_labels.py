"""Verdict labels in the reply layouts of ADK 2.13's own judge prompts, read as ADK
reads them.

ADK's `final_response_match_v2` prompt asks for `"is_the_agent_response_valid": [valid
or invalid]` and its `per_turn_user_simulator_quality_v1` prompt for `"is_valid": True
or False`; judges copy those lines with or without quotes and brackets. ADK finds the
first such line in the raw reply (not as JSON) and maps its label:

| label | final_response_match_v2 | per_turn_user_simulator_quality_v1 |
|---|---|---|
| `valid`, `true` | valid | valid (any case) |
| `invalid`, `false`, `almost`, `partially_valid`, `partially` | invalid | invalid (any case) |
| `partially valid` | no verdict (the label stops at a blank) | invalid |
| anything else | no verdict | no verdict |

`final_response_match_v2` compares labels case-sensitively and stops a label at a blank,
a quote, `]` or `^`; a reply naming `"is_the_agent_response_invalid"` instead is read
the other way round (`true` / `invalid` there mean invalid, any other label valid).
The simulator metric's label runs to the next quote or `]`, and ADK drops commas and a
closing brace from it and compares it in lower case.

A reply without ADK's key gives None here, and the metric reads it in assay's own
layout (`{"verdict": ...}`).
"""

from __future__ import annotations

import re

_POSITIVE = frozenset({"valid", "true"})
_NEGATIVE = frozenset(
    {"invalid", "false", "almost", "partially_valid", "partially valid", "partially"}
)

# `"key": [ "label" ]` up to the comma, newline or brace closing the entry.
_TAIL = r'"*\s*\]*\s*[,\n}]'
_RESPONSE_VALID = re.compile(r'"is_the_agent_response_valid":\s*\[*\s*"*([^"\]\s^]*)' + _TAIL)
_RESPONSE_INVALID = re.compile(r'"is_the_agent_response_invalid":\s*\[*\s*"*([^"\]\s^]*)' + _TAIL)
_IS_VALID = re.compile(r'"is_valid":\s*\[*\s*"*([^"\]]*)' + _TAIL)


def _label(label: str) -> bool | None:
    return True if label in _POSITIVE else False if label in _NEGATIVE else None


def response_validity(reply: str) -> tuple[bool, bool | None]:
    """(whether the reply uses ADK's `final_response_match_v2` layout, its verdict)."""
    found = _RESPONSE_VALID.search(reply)
    if found is not None:
        return True, _label(found.group(1).strip().rstrip(",}"))
    found = _RESPONSE_INVALID.search(reply)
    if found is not None:
        return True, found.group(1).strip().rstrip(",}") not in ("true", "invalid")
    return False, None


def message_validity(reply: str) -> tuple[bool, bool | None]:
    """(whether the reply uses ADK's `per_turn_user_simulator_quality_v1` layout, its
    verdict)."""
    found = _IS_VALID.search(reply)
    if found is None:
        return False, None
    return True, _label(found.group(1).strip("}").replace(",", "").strip().lower())
