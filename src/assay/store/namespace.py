"""The project and location a store operation belongs to (CES `projects/*/locations/*`).

Resources and runs are stored under a project and a location, so what Google's client
creates under `projects/p1/locations/us` is invisible under `projects/p2/locations/eu`.
The namespace is request context, not an argument: the wire layer enters
`namespace_scope(...)` for the duration of one request, and every resource query and
every run it starts applies it. Threading it through each service function instead
would touch every call of the `/v1` routes and the MCP tools, which address one
namespace only (`DEFAULT_NAMESPACE`).

Run ids are unique in the whole store: reading a run by id does not apply the
namespace (the CLI reads any run); the service checks a run's namespace itself.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass

DEFAULT_PROJECT = "default"
DEFAULT_LOCATION = "global"


@dataclass(frozen=True, slots=True)
class Namespace:
    """A CES project and location."""

    project: str
    location: str

    @property
    def prefix(self) -> str:
        return f"projects/{self.project}/locations/{self.location}"


DEFAULT_NAMESPACE = Namespace(DEFAULT_PROJECT, DEFAULT_LOCATION)
"""What the `/v1` API, the MCP tools and `assay eval` address."""

_CURRENT: contextvars.ContextVar[Namespace] = contextvars.ContextVar(
    "assay_store_namespace", default=DEFAULT_NAMESPACE
)


def current_namespace() -> Namespace:
    """The namespace store operations in this context apply."""
    return _CURRENT.get()


@contextlib.contextmanager
def namespace_scope(namespace: Namespace) -> Iterator[Namespace]:
    """Apply `namespace` to the store operations inside the block (this context only)."""
    token = _CURRENT.set(namespace)
    try:
        yield namespace
    finally:
        _CURRENT.reset(token)
