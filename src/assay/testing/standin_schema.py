"""Default replies of the stand-in judge: a JSON instance of the schema a request asks for.

assay's judged metrics send the JSON schema of the reply they expect; a stand-in run
without a script (`python -m assay.testing.judge_server`) answers each such request
with the smallest instance of that schema, so every metric gets a reply it can parse:
enums take their first value (an array of objects whose key is an enum takes a
different value per item, so a reply covers each rubric id once), numbers their lower
bound, strings a fixed word. Requests without a schema get the fixed `--text`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from assay.testing.judge_dialects import StandinReply, StandinRequest

FILLER = "stand-in"


def instance_of(schema: Mapping[str, Any], position: int = 0) -> Any:
    """The smallest value valid against `schema` (the subset assay's judges use).

    `position` picks the enum value of an array item, so that the items of an array
    whose items hold an enum key (rubric ids) are all different.
    """
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[position % len(enum)]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        # Only the object's first enum (its key, e.g. a rubric id) varies by position:
        # its other enums (verdicts) keep their first, positive value.
        keyed = next((name for name, sub in properties.items() if "enum" in sub), None)
        return {
            name: instance_of(sub, position if name == keyed else 0)
            for name, sub in properties.items()
        }
    if kind == "array":
        items = schema.get("items", {})
        count = max(int(schema.get("minItems", 1)), 1)
        return [instance_of(items, i) for i in range(count)]
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1.0))
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return FILLER


def schema_script(text: str, delay: float = 0.0) -> Any:
    """A stand-in script: the schema's instance when a request has one, else `text`;
    every reply after `delay` seconds."""

    def reply(request: StandinRequest) -> StandinReply:
        if request.json_schema:
            body = json.dumps(instance_of(request.json_schema))
            return StandinReply(text=body, delay=delay)
        return StandinReply(text=text, delay=delay)

    return reply
