"""Full CES resource names (`projects/{p}/locations/{l}/apps/{a}/...`) and assay's short ones.

assay keeps one namespace of apps: the store and the `/v1` routes say `apps/{app}/...`.
On the Google wire every name carries the project and location the client addressed;
names inside one request must agree with the request's own project and location (a
name of another project is INVALID_ARGUMENT, as Google's service answers), and every
name in an answer is written in full with them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from assay.service.errors import InvalidArgument
from assay.store.namespace import Namespace

_SEGMENT = r"[A-Za-z0-9][A-Za-z0-9._-]{0,255}"
_PREFIX = re.compile(rf"projects/(?P<project>{_SEGMENT})/locations/(?P<location>{_SEGMENT})/")

# Keys of CES JSON whose values are resource names (a string or a list of strings).
NAME_FIELDS = frozenset(
    {
        "name",
        "app",
        "evaluations",
        "evaluationDatasets",
        "evaluationDataset",
        "evaluationRuns",
        "evaluationRun",
        "evaluationResults",
        "evaluationExpectations",
        "scheduledEvaluationRun",
        "lastCompletedRun",
        "lastStartedRun",
    }
)


@dataclass(frozen=True, slots=True)
class Location:
    """The project and location a request addressed."""

    project: str
    location: str

    @property
    def prefix(self) -> str:
        return f"projects/{self.project}/locations/{self.location}"

    @property
    def namespace(self) -> Namespace:
        """The store namespace of this project and location."""
        return Namespace(self.project, self.location)

    def full(self, short: str) -> str:
        """`apps/...` (or `operations/...`) written under this project and location."""
        return f"{self.prefix}/{short}"

    def short(self, name: str, field: str) -> str:
        """The `apps/...` part of a full name of this project and location."""
        match = _PREFIX.match(name)
        if match is None:
            raise InvalidArgument.field(
                field,
                f"{name!r} is not a full resource name; expected "
                f"projects/{{project}}/locations/{{location}}/apps/{{app}}/...",
            )
        if (match["project"], match["location"]) != (self.project, self.location):
            raise InvalidArgument.field(
                field,
                f"{name!r} is in projects/{match['project']}/locations/{match['location']}, "
                f"but the request is for {self.prefix}",
            )
        return name[match.end() :]

    def short_ref(self, ref: str, field: str) -> str:
        """A reference that may be a full name or a bare id: full names are shortened."""
        return self.short(ref, field) if ref.startswith("projects/") else ref

    def expand(self, value: object) -> Any:
        """`value` (assay JSON) with every short name in a name field written in full."""
        if isinstance(value, list):
            return [self.expand(v) for v in value]
        if not isinstance(value, Mapping):
            return value
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in NAME_FIELDS and isinstance(item, str):
                out[key] = self._full_if_short(item)
            elif key in NAME_FIELDS and isinstance(item, list):
                out[key] = [
                    self._full_if_short(v) if isinstance(v, str) else self.expand(v) for v in item
                ]
            else:
                out[key] = self.expand(item)
        return out

    def _full_if_short(self, value: str) -> str:
        return self.full(value) if value.startswith(("apps/", "operations/")) else value


def namespace_of(request: Message) -> Namespace | None:
    """The project and location a request addresses: those of the first full name among
    its fields (its path fields come first), or None when it names none."""
    for field, value in request.ListFields():
        if isinstance(value, str):
            match = _PREFIX.match(value + "/" if value.count("/") == 3 else value)
            if match is not None:
                return Namespace(match["project"], match["location"])
        elif field.message_type is not None and not field.is_repeated:
            inner = value.name if hasattr(value, "name") and isinstance(value.name, str) else ""
            match = _PREFIX.match(inner)
            if match is not None:
                return Namespace(match["project"], match["location"])
    return None


def parse_location(name: str, field: str = "name") -> tuple[Location, str]:
    """Split a full name into its Location and the rest (`apps/...`, `operations/...`)."""
    match = _PREFIX.match(name + "/" if name.count("/") == 3 else name)
    if match is None:
        raise InvalidArgument.field(
            field,
            f"{name!r} is not a valid resource name; expected "
            "projects/{project}/locations/{location}/...",
        )
    return Location(match["project"], match["location"]), name[match.end() :]


def app_of(parent: str, field: str = "parent") -> tuple[Location, str]:
    """`projects/p/locations/l/apps/a` -> (Location, a)."""
    where, rest = parse_location(parent, field)
    parts = rest.split("/")
    if len(parts) != 2 or parts[0] != "apps" or not re.fullmatch(_SEGMENT, parts[1]):
        raise InvalidArgument.field(
            field,
            f"{parent!r} is not an app name; expected projects/{{project}}/locations/"
            "{location}/apps/{app}",
        )
    return where, parts[1]
