"""Resource names of the evaluation service, parsed and validated.

    apps/{app}/evaluations/{id}
    apps/{app}/evaluations/{id}/results/{result}
    apps/{app}/evaluationDatasets/{id}
    apps/{app}/personas/{id}
    apps/{app}/evaluationExpectations/{id}
    apps/{app}/scheduledEvaluationRuns/{id}
    apps/{app}/evaluationRuns/{id}

Segments are 1-128 characters (ids up to 256) of letters, digits, `-`, `_` and `.`,
starting with a letter or digit, so a name can never climb out of its app or smuggle
a path separator; anything else is INVALID_ARGUMENT naming the expected pattern.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from assay.service.errors import InvalidArgument

RESOURCE_KINDS = (
    "evaluations",
    "evaluationDatasets",
    "personas",
    "evaluationExpectations",
    "scheduledEvaluationRuns",
)
RUNS = "evaluationRuns"
RESULTS = "results"

_APP = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,255}")

PATTERNS = (
    "apps/{app}/evaluations/{id}",
    "apps/{app}/evaluations/{id}/results/{result}",
    "apps/{app}/evaluationDatasets/{id}",
    "apps/{app}/personas/{id}",
    "apps/{app}/evaluationExpectations/{id}",
    "apps/{app}/scheduledEvaluationRuns/{id}",
    "apps/{app}/evaluationRuns/{id}",
)


@dataclass(frozen=True, slots=True)
class ResourceName:
    """A parsed name. For results, `kind` is "results" and `parent` the evaluation id."""

    app: str
    kind: str
    id: str
    parent: str | None = None

    def __str__(self) -> str:
        if self.kind == RESULTS:
            return f"apps/{self.app}/evaluations/{self.parent}/results/{self.id}"
        return f"apps/{self.app}/{self.kind}/{self.id}"


def check_app(app: str) -> str:
    """`app` if it is a valid app id, else INVALID_ARGUMENT."""
    if not _APP.fullmatch(app):
        raise InvalidArgument.field(
            "app",
            f"{app!r} is not a valid app id (1-128 letters, digits, '-', '_' or '.', "
            "starting with a letter or digit)",
        )
    return app


def check_id(resource_id: str, field: str = "id") -> str:
    """`resource_id` if it is a valid resource id, else INVALID_ARGUMENT."""
    if not _ID.fullmatch(resource_id):
        raise InvalidArgument.field(
            field,
            f"{resource_id!r} is not a valid resource id (1-256 letters, digits, '-', '_' "
            "or '.', starting with a letter or digit)",
        )
    return resource_id


def check_kind(kind: str) -> str:
    if kind not in RESOURCE_KINDS:
        raise InvalidArgument.field(
            "kind", f"unknown collection {kind!r}; expected one of {', '.join(RESOURCE_KINDS)}"
        )
    return kind


def new_id() -> str:
    """A server-chosen resource id (a UUID, as CES generates)."""
    return str(uuid.uuid4())


def parse_name(name: str, *, field: str = "name") -> ResourceName:
    """Parse `name` into its parts; INVALID_ARGUMENT naming the patterns if it fits none."""
    parts = name.split("/")
    ok = len(parts) in (4, 6) and parts[0] == "apps" and bool(_APP.fullmatch(parts[1]))
    ok = ok and all(_ID.fullmatch(p) for p in parts[3::2])
    if ok and len(parts) == 4 and parts[2] in (*RESOURCE_KINDS, RUNS):
        return ResourceName(parts[1], parts[2], parts[3])
    if ok and len(parts) == 6 and parts[2] == "evaluations" and parts[4] == RESULTS:
        return ResourceName(parts[1], RESULTS, parts[5], parent=parts[3])
    raise InvalidArgument.field(
        field, f"{name!r} is not a valid resource name; expected one of: {', '.join(PATTERNS)}"
    )


def parse_kind_name(name: str, kind: str, *, field: str = "name") -> ResourceName:
    """Parse `name` and require it to name a resource of `kind`."""
    parsed = parse_name(name, field=field)
    if parsed.kind != kind:
        raise InvalidArgument.field(
            field, f"{name!r} is not a name of the {kind}; expected apps/{{app}}/{kind}/{{id}}"
        )
    return parsed
