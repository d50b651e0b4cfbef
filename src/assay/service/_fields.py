"""The fields of each resource kind, and update masks over them.

CES splits a resource's fields into ones a client writes and output-only ones the
server sets; output-only fields are ignored on input (and in update masks).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assay.service.errors import InvalidArgument

_COMMON_OUTPUT = frozenset(
    {"name", "createTime", "updateTime", "etag", "createdBy", "lastUpdatedBy"}
)


@dataclass(frozen=True, slots=True)
class KindSpec:
    """One collection: its singular name, writable and output-only fields."""

    kind: str
    singular: str
    writable: frozenset[str]
    output_only: frozenset[str]
    required: tuple[str, ...]
    # Writable fields holding an object, where masks may name sub-fields.
    objects: frozenset[str] = frozenset()

    def describe_fields(self) -> str:
        return ", ".join(sorted(self.writable))


EVALUATIONS = KindSpec(
    kind="evaluations",
    singular="evaluation",
    writable=frozenset({"displayName", "description", "tags", "golden", "scenario"}),
    output_only=_COMMON_OUTPUT
    | {
        "evaluationDatasets",
        "evaluationRuns",
        "aggregatedMetrics",
        "lastCompletedResult",
        "lastTenResults",
        "invalid",
    },
    required=("displayName",),
    objects=frozenset({"golden", "scenario"}),
)
DATASETS = KindSpec(
    kind="evaluationDatasets",
    singular="evaluationDataset",
    writable=frozenset({"displayName", "description", "evaluations"}),
    output_only=_COMMON_OUTPUT | {"aggregatedMetrics"},
    required=("displayName",),
)
PERSONAS = KindSpec(
    kind="personas",
    singular="persona",
    writable=frozenset({"displayName", "description", "personality", "speechConfig"}),
    output_only=frozenset({"name", "createTime", "updateTime", "etag"}),
    required=("displayName", "personality"),
    objects=frozenset({"speechConfig"}),
)
EXPECTATIONS = KindSpec(
    kind="evaluationExpectations",
    singular="evaluationExpectation",
    writable=frozenset({"displayName", "tags", "llmCriteria"}),
    output_only=frozenset({"name", "createTime", "updateTime", "etag"}),
    required=("displayName", "llmCriteria"),
    objects=frozenset({"llmCriteria"}),
)
SCHEDULES = KindSpec(
    kind="scheduledEvaluationRuns",
    singular="scheduledEvaluationRun",
    writable=frozenset({"displayName", "description", "request", "schedulingConfig", "active"}),
    output_only=_COMMON_OUTPUT
    | {"lastCompletedRun", "lastStartedRun", "totalExecutions", "nextScheduledExecutionTime"},
    required=("displayName", "request", "schedulingConfig"),
    objects=frozenset({"request", "schedulingConfig"}),
)
SPECS: dict[str, KindSpec] = {
    s.kind: s for s in (EVALUATIONS, DATASETS, PERSONAS, EXPECTATIONS, SCHEDULES)
}


def writable_part(spec: KindSpec, body: object, *, field: str) -> dict[str, Any]:
    """The writable fields of a request body; unknown fields are INVALID_ARGUMENT."""
    if not isinstance(body, Mapping):
        raise InvalidArgument.field(field, f"expected a JSON object (an {spec.singular})")
    unknown = sorted(set(body) - spec.writable - spec.output_only)
    if unknown:
        raise InvalidArgument.field(
            f"{field}.{unknown[0]}",
            f"unknown field {unknown[0]!r} of an {spec.singular}; its fields are "
            f"{spec.describe_fields()} (and the output-only {', '.join(sorted(spec.output_only))})",
        )
    return {k: copy.deepcopy(v) for k, v in body.items() if k in spec.writable}


def parse_mask(spec: KindSpec, update_mask: str | None) -> list[list[str]]:
    """The mask's writable paths, split on dots; output-only paths are dropped."""
    if update_mask is None or not update_mask.strip():
        raise InvalidArgument.field(
            "updateMask",
            "required: a comma-separated list of the fields to update, e.g. "
            "updateMask=displayName,tags (or * for every writable field)",
        )
    paths: list[list[str]] = []
    for raw in update_mask.split(","):
        path = raw.strip()
        if path == "*":
            paths.extend([f] for f in sorted(spec.writable))
            continue
        parts = path.split(".")
        top = parts[0]
        if not path or any(not p for p in parts) or top not in spec.writable | spec.output_only:
            raise InvalidArgument.field(
                "updateMask",
                f"{path!r} is not a field of an {spec.singular}; updatable fields are "
                f"{spec.describe_fields()}",
            )
        if top in spec.output_only:
            continue
        if len(parts) > 1 and top not in spec.objects:
            raise InvalidArgument.field(
                "updateMask", f"{path!r}: {top!r} has no sub-fields to update"
            )
        paths.append(parts)
    return paths


def apply_mask(
    current: Mapping[str, object], patch: Mapping[str, object], paths: list[list[str]]
) -> dict[str, Any]:
    """`current` with each masked path taken from `patch` (cleared when `patch` lacks it)."""
    merged = copy.deepcopy(dict(current))
    for path in paths:
        source: Any = patch
        for part in path:
            source = source.get(part) if isinstance(source, Mapping) else None
        target = merged
        for part in path[:-1]:
            child = target.get(part)
            if not isinstance(child, dict):
                child = target[part] = {}
            target = child
        if source is None:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = copy.deepcopy(source)
    return merged
