"""REST routes and MCP operations for people's labels on judged results (issue #35).

    GET    /v1/runs/{run}/labels                       every label of a run (?metric=)
    GET    /v1/runs/{run}/cases/{case}/labels          a case's labels (?metric=)
    POST   /v1/runs/{run}/cases/{case}/labels          add or replace the caller's label
    DELETE /v1/runs/{run}/cases/{case}/labels?metric=M remove the caller's label

`{run}` is a run id or a unique prefix; `{case}` a case id, `SET/ID`, or `ID#N` for the
Nth run of the case (`#` sent as `%23`). The body of a POST is `{"metric": M, "label":
"pass" | "fail" | SCORE, "note": TEXT}`. The caller is the API key's name (the server's
OS user when it runs without keys, on loopback only): a caller replaces and deletes its
own label only. Unknown run, case or metric: 404 naming it; a bad label, note or field:
400 naming the field.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, FastAPI, Query, Request

from assay.service._routing import OffloadedRoute
from assay.service.context import ServiceContext, get_ctx
from assay.service.errors import InvalidArgument, NotFound
from assay.service.routes import ERRORS
from assay.store.labels import (
    LabelTargetNotFoundError,
    LabelValueError,
    local_author,
)

Ctx = Annotated[ServiceContext, Depends(get_ctx)]
MetricQuery = Annotated[str | None, Query(description="Only the labels of this metric.")]
_BODY_FIELDS = frozenset({"metric", "label", "note"})

CALLER: ContextVar[str | None] = ContextVar("assay_label_caller", default=None)
"""The API key's name of the MCP call being served (set by the MCP server)."""

router = APIRouter(prefix="/v1", tags=["labels"], responses=ERRORS, route_class=OffloadedRoute)


def caller_of(scope: Mapping[str, Any]) -> str:
    """Who a request comes from: its API key's name, else the server's OS user."""
    info = (scope.get("state") or {}).get("api_key")
    name = getattr(info, "name", None)
    return name if isinstance(name, str) and name else local_author()


@contextlib.contextmanager
def _label_errors() -> Any:
    """The store's label errors as the service's: 404 for what is not there, 400 naming
    the field of a value that cannot be stored."""
    try:
        yield
    except LabelTargetNotFoundError as exc:
        raise NotFound(str(exc)) from None
    except LabelValueError as exc:
        field, _, reason = str(exc).partition(": ")
        raise InvalidArgument.field(field if reason else "label", reason or str(exc)) from None


def _run_id(ctx: ServiceContext, run: str) -> str:
    return ctx.store.find_run(run).id


def list_labels(
    ctx: ServiceContext, run: str, case: str | None = None, metric: str | None = None
) -> dict[str, Any]:
    """The labels of a run, or of one of its cases."""
    with _label_errors():
        run_id = _run_id(ctx, run)
        target = ctx.store.labels.find_case(run_id, case) if case is not None else None
        if target is not None and metric is not None:
            target.metric(metric)
        found = ctx.store.labels.list_labels([run_id], case=target, metric=metric)
    return {"labels": [label.to_dict() for label in found]}


def _body(body: object) -> tuple[str, object, str | None]:
    if not isinstance(body, dict):
        raise InvalidArgument("the body must be a JSON object {metric, label, note}")
    unknown = sorted(set(body) - _BODY_FIELDS)
    if unknown:
        raise InvalidArgument.field(unknown[0], "unknown field (expected metric, label, note)")
    metric = body.get("metric")
    if not isinstance(metric, str) or not metric.strip():
        raise InvalidArgument.field("metric", "required: the metric's name")
    label = body.get("label")
    if label is None or isinstance(label, list | dict):
        raise InvalidArgument.field("label", "required: pass, fail or a score")
    note = body.get("note")
    if note is not None and not isinstance(note, str):
        raise InvalidArgument.field("note", "expected a string")
    return metric, label, note


def set_label(
    ctx: ServiceContext, run: str, case: str, body: object, author: str
) -> dict[str, Any]:
    """Store `author`'s label (replacing their own on the item) and return it."""
    metric, label, note = _body(body)
    with _label_errors():
        stored = ctx.store.labels.set_label(
            _run_id(ctx, run), case, metric=metric, label=label, author=author, note=note
        )
    return stored.to_dict()


def delete_label(
    ctx: ServiceContext, run: str, case: str, metric: str | None, author: str
) -> dict[str, Any]:
    """Remove `author`'s own label on the item; 404 when they have none."""
    if not metric:
        raise InvalidArgument.field("metric", "required: the metric whose label to delete")
    with _label_errors():
        run_id = _run_id(ctx, run)
        if not ctx.store.labels.delete_label(run_id, case, metric=metric, author=author):
            raise NotFound(f"{author} has no label on {metric} of case {case!r} in run {run_id}")
    return {}


@router.get("/runs/{run}/labels", operation_id="list_run_labels")
def get_run_labels(ctx: Ctx, run: str, metric: MetricQuery = None) -> dict[str, Any]:
    return list_labels(ctx, run, None, metric)


@router.get("/runs/{run}/cases/{case:path}/labels", operation_id="list_case_labels")
def get_case_labels(ctx: Ctx, run: str, case: str, metric: MetricQuery = None) -> dict[str, Any]:
    return list_labels(ctx, run, case, metric)


@router.post(
    "/runs/{run}/cases/{case:path}/labels",
    operation_id="set_case_label",
    summary="Add or replace the caller's label on one metric of a case",
    description='Body: {"metric": M, "label": "pass" | "fail" | SCORE, "note": TEXT}.',
)
def post_case_label(
    ctx: Ctx, request: Request, run: str, case: str, body: Annotated[Any, Body()]
) -> dict[str, Any]:
    return set_label(ctx, run, case, body, caller_of(request.scope))


@router.delete("/runs/{run}/cases/{case:path}/labels", operation_id="delete_case_label")
def delete_case_label(
    ctx: Ctx, request: Request, run: str, case: str, metric: MetricQuery = None
) -> dict[str, Any]:
    return delete_label(ctx, run, case, metric, caller_of(request.scope))


def install(app: FastAPI, _ctx: ServiceContext) -> None:
    """Add the label routes (before the generic `/v1/{name}` routes)."""
    app.include_router(router)


def mcp_caller() -> str:
    """The author of an MCP call: the key's name the MCP server put in `CALLER`."""
    return CALLER.get() or local_author()
