"""The Locations mixin of the CES client: the locations a project has in this store.

assay is not a cloud region: a location is the second half of the namespace resources
and runs are stored under (`projects/{p}/locations/{l}`). ListLocations names the
locations of the project that hold data (and `global` for the default project, which
the `/v1` API and the MCP tools address); GetLocation answers any well-formed location
asked for, since creating something there is what makes it exist.
"""

from __future__ import annotations

import re
from typing import Any

from google.cloud.location import locations_pb2
from google.protobuf.message import Message

from assay.service import runs
from assay.service.context import ServiceContext
from assay.service.errors import InvalidArgument
from assay.service.wire.ces_names import parse_location
from assay.store.namespace import DEFAULT_NAMESPACE

_PROJECT = re.compile(r"projects/([A-Za-z0-9][A-Za-z0-9._-]{0,255})")
MAX_PAGE_SIZE = 1000


def _location(project: str, location: str) -> Any:
    return locations_pb2.Location(
        name=f"projects/{project}/locations/{location}",
        location_id=location,
        display_name=location,
    )


def get_location(ctx: ServiceContext, request: Any) -> Message:
    where, rest = parse_location(request.name)
    if rest:
        raise InvalidArgument.field(
            "name", f"{request.name!r} is not a location (projects/{{project}}/locations/{{l}})"
        )
    message: Message = _location(where.project, where.location)
    return message


def list_locations(ctx: ServiceContext, request: Any) -> Message:
    match = _PROJECT.fullmatch(request.name)
    if match is None:
        raise InvalidArgument.field(
            "name", f"{request.name!r} is not a project name (projects/{{project}})"
        )
    if request.filter:
        raise InvalidArgument.field("filter", "assay does not support filtering locations")
    if request.page_size < 0:
        raise InvalidArgument.field("page_size", "must not be negative")
    offset = 0
    if request.page_token:
        if not request.page_token.isdigit():
            raise InvalidArgument.field("page_token", "not a page token this service issued")
        offset = int(request.page_token)
    project = match[1]
    found = set(runs.state_of(ctx).results.locations(project))
    if project == DEFAULT_NAMESPACE.project:
        found.add(DEFAULT_NAMESPACE.location)
    names = sorted(found)
    size = min(request.page_size or 50, MAX_PAGE_SIZE)
    answer: Any = locations_pb2.ListLocationsResponse(
        locations=[_location(project, n) for n in names[offset : offset + size]]
    )
    if offset + size < len(names):
        answer.next_page_token = str(offset + size)
    listed: Message = answer
    return listed


METHODS = {"GetLocation": get_location, "ListLocations": list_locations}
