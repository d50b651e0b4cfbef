"""REST routes of the evaluation service (CES paths under /v1).

    POST   /v1/apps/{app}/{collection}           create (?{singular}Id= to choose the id)
    GET    /v1/apps/{app}/{collection}           list (pageSize, pageToken, filter, view)
    GET    /v1/{name}                            get (?view=FULL adds lastTenResults)
    PATCH  /v1/{name}?updateMask=a,b             update; body.etag must be current
    DELETE /v1/{name}?force=true                 delete

for the collections evaluations, evaluationDatasets and personas. The generic
`/v1/{name}` routes also serve evaluation runs and results (via `assay.service.runs`);
`generic_router` must be included after the run routes so it does not shadow them.
"""

# No `from __future__ import annotations`: FastAPI reads the parameter annotations of
# the per-collection closures below, which refer to closure variables.
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Query
from pydantic import BaseModel

from assay.service import operations
from assay.service._fields import SPECS, KindSpec
from assay.service._listing import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from assay.service._routing import OffloadedRoute
from assay.service.context import ServiceContext, get_ctx

Ctx = Annotated[ServiceContext, Depends(get_ctx)]
View = Annotated[
    Literal["BASIC", "FULL"],
    Query(description="FULL also returns each evaluation's lastTenResults."),
]
JsonBody = Annotated[dict[str, Any], Body(description="The resource as CES JSON (camelCase).")]


class StatusDetail(BaseModel):
    code: int
    status: str
    message: str
    details: list[dict[str, Any]]


class ErrorBody(BaseModel):
    """Every error: the Google API status shape."""

    error: StatusDetail


ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "INVALID_ARGUMENT or FAILED_PRECONDITION"},
    401: {"model": ErrorBody, "description": "UNAUTHENTICATED: missing or invalid API key"},
    404: {"model": ErrorBody, "description": "NOT_FOUND"},
    # A path segment holding an encoded slash (%2F) decodes to another path, which may
    # be served for other methods only.
    405: {
        "model": ErrorBody,
        "description": "UNIMPLEMENTED: the method is not served on the path the URL decodes "
        "to; the Allow header names the methods that are",
    },
    409: {"model": ErrorBody, "description": "ALREADY_EXISTS or ABORTED (stale etag)"},
    413: {"model": ErrorBody, "description": "RESOURCE_EXHAUSTED: request body too large"},
    429: {
        "model": ErrorBody,
        "description": "RESOURCE_EXHAUSTED: over the server's --rate-limit for this API key; "
        "the Retry-After header says when to retry",
    },
    503: {
        "model": ErrorBody,
        "description": "UNAVAILABLE: the store's database cannot be reached for now (it "
        "restarts, a connection dropped); nothing was written. Retry after Retry-After",
    },
}

collection_router = APIRouter(prefix="/v1", responses=ERRORS, route_class=OffloadedRoute)
generic_router = APIRouter(prefix="/v1", responses=ERRORS, route_class=OffloadedRoute)


def _add_collection(spec: KindSpec) -> None:
    kind, singular = spec.kind, spec.singular
    id_param = f"{singular}Id"
    fields = spec.describe_fields()

    def create(
        ctx: Ctx,
        app: str,
        body: JsonBody,
        resource_id: Annotated[
            str | None,
            Query(alias=id_param, description="The id to give it; the server picks one if absent."),
        ] = None,
    ) -> dict[str, Any]:
        return operations.create_resource(ctx, app, kind, body, resource_id)

    def list_(
        ctx: Ctx,
        app: str,
        page_size: Annotated[
            int,
            Query(
                alias="pageSize",
                description=f"Page size (default {DEFAULT_PAGE_SIZE}, max {MAX_PAGE_SIZE}).",
            ),
        ] = DEFAULT_PAGE_SIZE,
        page_token: Annotated[
            str | None, Query(alias="pageToken", description="nextPageToken of the previous page.")
        ] = None,
        filter: Annotated[
            str | None,
            Query(description='Terms joined by AND: tags:"x", dataset:"ID", displayName:"x".'),
        ] = None,
        view: View = "BASIC",
    ) -> dict[str, Any]:
        return operations.list_resources(
            ctx,
            app,
            kind,
            page_size=page_size,
            page_token=page_token,
            filter=filter,
            full=view == "FULL",
        )

    routes: list[tuple[Callable[..., Any], str, str, str, str]] = [
        (
            create,
            "POST",
            f"create_{singular}",
            f"Create an {singular}",
            f"Writable fields: {fields}. displayName is required and unique within "
            "the app (409 ALREADY_EXISTS otherwise); output-only fields are ignored.",
        ),
        (
            list_,
            "GET",
            f"list_{kind}",
            f"List the app's {kind}",
            f"Oldest first; returns {{{kind}: [...], nextPageToken}}.",
        ),
    ]
    for endpoint, method, operation_id, summary, description in routes:
        collection_router.add_api_route(
            f"/apps/{{app}}/{kind}",
            endpoint,
            methods=[method],
            operation_id=operation_id,
            summary=summary,
            description=description,
            tags=[kind],
        )


for _spec in SPECS.values():
    _add_collection(_spec)


@generic_router.get(
    "/{name:path}",
    operation_id="get_resource",
    summary="Get a resource by name",
    description="Names: apps/{app}/evaluations/{id}, .../evaluationDatasets/{id}, "
    ".../personas/{id}, .../evaluationRuns/{id}, .../evaluations/{id}/results/{id}.",
    tags=["resources"],
)
def get_resource(ctx: Ctx, name: str, view: View = "BASIC") -> dict[str, Any]:
    return operations.get_resource(ctx, name, full=view == "FULL")


@generic_router.patch(
    "/{name:path}",
    operation_id="update_resource",
    summary="Update fields of an evaluation, dataset or persona",
    description="Only the fields listed in updateMask change (a listed field missing "
    "from the body is cleared; * means every writable field). If the body carries "
    "the etag, it must be the current one, else 409 ABORTED.",
    tags=["resources"],
)
def update_resource(
    ctx: Ctx,
    name: str,
    body: JsonBody,
    update_mask: Annotated[
        str | None,
        Query(alias="updateMask", description="Comma-separated camelCase field paths."),
    ] = None,
) -> dict[str, Any]:
    return operations.update_resource(ctx, name, body, update_mask or "")


@generic_router.delete(
    "/{name:path}",
    operation_id="delete_resource",
    summary="Delete an evaluation, dataset, persona or evaluation run",
    description="An evaluation listed in datasets needs force=true (it is then removed "
    "from them), else 400 FAILED_PRECONDITION naming the datasets.",
    tags=["resources"],
)
def delete_resource(
    ctx: Ctx,
    name: str,
    force: Annotated[bool, Query(description="Also remove it from datasets.")] = False,
    etag: Annotated[str | None, Query(description="Delete only this version.")] = None,
) -> dict[str, Any]:
    operations.delete_resource(ctx, name, force=force, etag=etag)
    return {}
