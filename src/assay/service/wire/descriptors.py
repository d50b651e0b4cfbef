"""The RPCs of the CES EvaluationService client, read from `google-cloud-ces` itself.

The package registers no service descriptors, so the list comes from its
`gapic_metadata.json` (the RPC names) and its REST transport (each RPC's request and
response classes, from the type hints of its callables, and its HTTP rules). Serving
exactly this list is what makes the client work unchanged, and a test walks it.
"""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from google.cloud.ces_v1beta.services.evaluation_service.transports import rest, rest_base
from google.protobuf import empty_pb2
from google.protobuf.message import Message

EVALUATION_SERVICE = "google.cloud.ces.v1beta.EvaluationService"
OPERATIONS_SERVICE = "google.longrunning.Operations"
LOCATIONS_SERVICE = "google.cloud.location.Locations"
_MIXINS = {
    OPERATIONS_SERVICE: ("GetOperation", "ListOperations", "CancelOperation", "DeleteOperation"),
    LOCATIONS_SERVICE: ("GetLocation", "ListLocations"),
}


@dataclass(frozen=True)
class Rpc:
    """One RPC: its service, name, message classes and HTTP rules."""

    service: str
    name: str
    request: type[Message]
    response: type[Message]
    http: tuple[dict[str, str], ...]

    @property
    def full_name(self) -> str:
        return f"{self.service}.{self.name}"

    @property
    def grpc_path(self) -> str:
        return f"/{self.service}/{self.name}"


def _pb(cls: Any) -> type[Message]:
    if cls is None or cls is type(None):
        return empty_pb2.Empty
    # proto-plus wrappers hand out their protobuf class with .pb()
    pb: type[Message] = cls.pb() if hasattr(cls, "pb") else cls
    return pb


def _rpc(service: str, name: str) -> Rpc:
    call = getattr(rest.EvaluationServiceRestTransport, f"_{name}").__call__
    hints = typing.get_type_hints(call)
    rules = getattr(rest_base._BaseEvaluationServiceRestTransport, f"_Base{name}")
    return Rpc(
        service,
        name,
        _pb(hints["request"]),
        _pb(hints.get("return")),
        tuple(rules._get_http_options()),
    )


@cache
def rpcs() -> tuple[Rpc, ...]:
    """EvaluationService's RPCs, then the Operations and Locations mixins the client has."""
    metadata = json.loads(
        resources.files("google.cloud.ces_v1beta").joinpath("gapic_metadata.json").read_text()
    )
    names = sorted(metadata["services"]["EvaluationService"]["clients"]["grpc"]["rpcs"])
    found = [_rpc(EVALUATION_SERVICE, n) for n in names]
    for service, mixins in _MIXINS.items():
        found.extend(_rpc(service, n) for n in mixins)
    return tuple(found)
