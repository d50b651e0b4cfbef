"""The grounding metadata of an ADK invocation's events.

ADK 2.13 events may carry `grounding_metadata` (the search queries, sources and
supports of a grounded answer, from a model's built-in tools). ADK's
`rubric_based_final_response_quality_v1` and `hallucinations_v1` show it to their judge
beside the tool calls, each entry with the event's index and author; assay keeps it on
the turn (`Turn.grounding`) for its judges to see too. Keys in snake_case or camelCase;
stored in snake_case.
"""

from __future__ import annotations

from collections.abc import Mapping

from assay.core.cases import Grounding
from assay.formats._adk_content import get_field, get_str, read_events, snake_struct
from assay.formats._common import Loc


def events_grounding(intermediate: object, loc: Loc) -> list[Grounding] | None:
    """The grounding metadata of `intermediate_data`'s events, in order; None when no
    event has any (or the invocation has no events)."""
    if not isinstance(intermediate, Mapping):
        return None
    events, at = get_field(intermediate, loc, "invocation_events")
    if not isinstance(events, list):
        return None
    found: list[Grounding] = []
    for index, (el, event) in enumerate(at.items(events, "invocation_events: a list of events")):
        if not isinstance(event, Mapping):
            continue  # the steps reader reports malformed events
        metadata, ml = get_field(event, el, "grounding_metadata")
        if metadata is None:
            continue
        # An empty object counts: ADK shows it to the judge as `{}`.
        metadata = ml.expect_dict(metadata, "grounding_metadata: an object")
        author = get_str(event, el, "author")
        before = len(read_events(events[:index], at))
        found.append(
            Grounding(step=index, author=author, metadata=snake_struct(metadata), first_step=before)
        )
    return found or None
