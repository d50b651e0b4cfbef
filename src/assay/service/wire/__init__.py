"""Google's own wire shapes over assay's service core (ARCHITECTURE.md, service/wire/).

- CES EvaluationService over REST as `google-cloud-ces` speaks it (`/v1beta/projects/
  {p}/locations/{l}/apps/{a}/...`, proto3 JSON, long-running operations): `ces_rest`;
- the same methods over gRPC (`assay serve --grpc-port`): `ces_grpc`;
- Vertex AI's `evaluateInstances` (the Vertex SDK's computation metrics): `vertex`;
  its judged pointwise and pairwise metrics, by the server's judge: `vertex_judged`.

Both need the message classes of `google-cloud-ces` (the `ces` extra); without it the
`/v1beta` paths answer one line naming the extra to install.
"""

from __future__ import annotations

import importlib.util

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from assay.service.errors import FailedPrecondition

CES_EXTRA_HINT = "pip install -e '.[ces]'"


def ces_available() -> bool:
    """Whether the CES client package (the `ces` extra) is installed."""
    try:
        return importlib.util.find_spec("google.cloud.ces_v1beta") is not None
    except ModuleNotFoundError:  # the parent package ("google.cloud") is missing
        return False


async def _missing_extra(_request: Request) -> Response:
    return FailedPrecondition(
        f"the CES wire API needs google-cloud-ces (the 'ces' extra): {CES_EXTRA_HINT}"
    ).response()


def install(app: Starlette) -> None:
    """Mount the CES REST paths (/v1beta/...) and Vertex's evaluateInstances on `app`."""
    from assay.service.wire import vertex

    # Before the CES catch-all: the Vertex paths need no extra.
    app.router.routes.extend(vertex.routes())
    if ces_available():
        from assay.service.wire import ces_rest

        app.router.routes.extend(ces_rest.routes())
    else:
        verbs = ["GET", "POST", "PATCH", "DELETE"]
        app.router.routes.append(Route("/v1beta/{path:path}", _missing_extra, methods=verbs))
