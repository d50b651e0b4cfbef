"""What an ADK invocation's events say about cost: model calls and token usage.

ADK 2.13 eval sets keep `intermediate_data.invocation_events[]`, each event with the
model's `usage_metadata` (`prompt_token_count`, `tool_use_prompt_token_count`,
`cached_content_token_count`, `candidates_token_count`, `thoughts_token_count`) and
`model_version` when it came from a model call. ADK's efficiency metrics count an event
as a model call when it has either, and sum the token counts per type (a count no event
reported stays None). Keys in snake_case or camelCase.
"""

from __future__ import annotations

from collections.abc import Mapping

from assay.core.cases import Usage
from assay.formats._adk_content import get_field
from assay.formats._common import Loc, type_name

_COUNTS = {
    "prompt_tokens": "prompt_token_count",
    "tool_use_tokens": "tool_use_prompt_token_count",
    "cached_tokens": "cached_content_token_count",
    "candidates_tokens": "candidates_token_count",
    "reasoning_tokens": "thoughts_token_count",
}


def events_cost(intermediate: object, loc: Loc) -> tuple[int | None, Usage | None]:
    """(model calls, token usage) of `intermediate_data`; (None, None) without events."""
    if not isinstance(intermediate, Mapping):
        return None, None
    events, at = get_field(intermediate, loc, "invocation_events")
    if not isinstance(events, list):
        return None, None
    calls = 0
    sums: dict[str, int | None] = dict.fromkeys(_COUNTS)
    for el, event in at.items(events, "invocation_events: a list of events"):
        if not isinstance(event, Mapping):
            continue  # the steps reader reports malformed events
        usage, ul = get_field(event, el, "usage_metadata")
        version, _ = get_field(event, el, "model_version")
        if usage is None and version is None:
            continue
        calls += 1
        if usage is None:
            continue
        usage = ul.expect_dict(usage, "usage_metadata: an object of token counts")
        for field, key in _COUNTS.items():
            count, cl = get_field(usage, ul, key)
            if count is None:
                continue
            if isinstance(count, bool) or not isinstance(count, int):
                raise cl.error(f"got {type_name(count)}", expected=f"{key}: an integer")
            sums[field] = (sums[field] or 0) + count
    if not any(v is not None for v in sums.values()):
        return calls, None
    inputs = (sums["prompt_tokens"] or 0) + (sums["tool_use_tokens"] or 0)
    outputs = (sums["candidates_tokens"] or 0) + (sums["reasoning_tokens"] or 0)
    return calls, Usage(input_tokens=inputs, output_tokens=outputs, **sums)
