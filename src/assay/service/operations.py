"""Create / get / list / update / delete of evaluations, datasets and personas.

Plain functions over a `ServiceContext`, shared by the REST routes and the MCP tools;
they take and return CES-shaped camelCase JSON and raise `ServiceError`s (store errors
are mapped by the error handlers). Names of runs and results are passed on to
`assay.service.runs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from assay.errors import AssayError
from assay.service import runs, schedules
from assay.service._fields import (
    DATASETS,
    EVALUATIONS,
    EXPECTATIONS,
    SCHEDULES,
    SPECS,
    KindSpec,
    apply_mask,
    parse_mask,
    writable_part,
)
from assay.service._listing import (
    decode_token,
    encode_token,
    offset_of,
    page_size_of,
    parse_filter,
    token_key,
)
from assay.service._storable import check_storable
from assay.service._validate import expectation_refs, is_invalid, known_names, validate
from assay.service.context import ServiceContext
from assay.service.errors import (
    PRECONDITION_FAILURE_TYPE,
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ServiceError,
    from_exception,
)
from assay.service.names import (
    RESULTS,
    RUNS,
    ResourceName,
    check_app,
    check_id,
    check_kind,
    new_id,
    parse_name,
)
from assay.store import EtagMismatchError, Resource
from assay.store.exceptions import ResourceConflictError
from assay.store.types import utcnow

# Without a client etag an update re-reads and retries when another write slipped in
# between its read and its write; the mask makes re-applying it safe.
_UPDATE_ATTEMPTS = 20
_LEADING_FIELDS = ("description", "tags", "personality")
_FILTER_FIELDS = {
    "evaluations": ("tags", "dataset", "displayName"),
    "evaluationDatasets": ("displayName",),
    "personas": ("displayName",),
    "evaluationExpectations": ("displayName", "tags"),
    "scheduledEvaluationRuns": ("displayName",),
}


def rfc3339(moment: datetime) -> str:
    """A UTC time as CES writes it: `2026-01-02T03:04:05.123456Z`."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def create_resource(
    ctx: ServiceContext, app: str, kind: str, body: dict[str, Any], resource_id: str | None = None
) -> dict[str, Any]:
    """Create a resource of `kind` in `app` (id chosen by the server unless given)."""
    spec = SPECS[check_kind(kind)]
    check_app(app)
    rid = new_id() if resource_id is None else check_id(resource_id, f"{spec.singular}Id")
    check_storable(body, "", ctx.limits.max_depth)
    clean = writable_part(spec, body, field=spec.singular)
    validate(ctx.store, app, spec, rid, clean)
    if spec is SCHEDULES:
        runs.check_scheduled_request(ctx, clean["request"])
        clean = schedules.derive(clean, None, utcnow())
    if ctx.store.resources.get(app, kind, rid) is not None:
        raise AlreadyExists(f"{spec.singular} apps/{app}/{kind}/{rid} already exists")
    # Insert-only: of concurrent creates that all passed the check above, the store lets
    # one win and answers the others ResourceConflictError (409 ALREADY_EXISTS).
    stored = ctx.store.resources.create(
        app, kind, rid, display_name=clean["displayName"], body=clean
    )
    if spec is SCHEDULES:
        schedules.scheduler_of(ctx).wake()
    return _render(ctx, stored, full=False)


def create_evaluations(
    ctx: ServiceContext,
    app: str,
    bodies: Sequence[dict[str, Any]],
    one: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> list[dict[str, Any] | ServiceError]:
    """Create evaluations (ids chosen by the server) in one store transaction.

    Each body is checked as `create_resource` checks it; the result is, per body, the
    evaluation as created or the error refusing it. The valid ones are written
    together; if one of them clashes with a stored evaluation (a display name taken),
    they are created one at a time instead, by `one` (default: `create_resource`), so
    each clash is handled or reported on its own.
    """
    check_app(app)
    results: dict[int, dict[str, Any] | ServiceError] = {}
    ready: list[tuple[int, str, dict[str, Any]]] = []
    for index, body in enumerate(bodies):
        try:
            check_storable(body, "", ctx.limits.max_depth)
            clean = writable_part(EVALUATIONS, body, field=EVALUATIONS.singular)
            rid = new_id()
            validate(ctx.store, app, EVALUATIONS, rid, clean)
        except (ServiceError, AssayError) as exc:
            results[index] = from_exception(exc)
        else:
            ready.append((index, rid, clean))
    try:
        stored = ctx.store.resources.create_many(
            app, EVALUATIONS.kind, [(rid, c["displayName"], c) for _, rid, c in ready]
        )
    except ResourceConflictError:
        for index, rid, clean in ready:
            try:
                if one is not None:
                    results[index] = one(clean)
                else:
                    results[index] = create_resource(ctx, app, EVALUATIONS.kind, clean, rid)
            except (ServiceError, AssayError) as exc:
                results[index] = from_exception(exc)
    else:
        memberships = _memberships(ctx, app)
        known = known_names(ctx.agent)
        for (index, _rid, _clean), res in zip(ready, stored, strict=True):
            # Just created under a new id: no run or result names it yet, so the run
            # side's decorators (two store reads each) have nothing to add.
            results[index] = _render(
                ctx, res, full=False, memberships=memberships, known=known, decorate=False
            )
    return [results[index] for index in range(len(bodies))]


def get_resource(ctx: ServiceContext, name: str, *, full: bool = False) -> dict[str, Any]:
    """The resource (or evaluation run / result) called `name`."""
    parsed = parse_name(name)
    if parsed.kind == RUNS:
        return runs.get_run(ctx, name)
    if parsed.kind == RESULTS:
        return runs.get_result(ctx, name)
    return _render(ctx, _fetch(ctx, parsed), full=full)


def list_resources(
    ctx: ServiceContext,
    app: str,
    kind: str,
    *,
    page_size: int = 50,
    page_token: str | None = None,
    filter: str | None = None,
    full: bool = False,
) -> dict[str, Any]:
    """One page of the app's `kind`, oldest first: `{kind: [...], "nextPageToken"?}`."""
    check_kind(kind)
    check_app(app)
    terms = parse_filter(filter, _FILTER_FIELDS[kind])
    size = page_size_of(page_size)
    scope = (app, kind, filter or "")
    key = token_key(ctx.store)
    offset = offset_of(decode_token(key, page_token, *scope))
    memberships = _memberships(ctx, app) if kind == EVALUATIONS.kind else {}
    if terms:
        matching = [
            res
            for res in ctx.store.resources.list_resources(app, kind)
            if all(_matches(res, t.field, t.value, memberships) for t in terms)
        ]
        page, more = matching[offset : offset + size], offset + size < len(matching)
    else:
        # Unfiltered: let the database page, and fetch one extra row to know if more follow.
        rows = ctx.store.resources.list_resources(app, kind, offset=offset, limit=size + 1)
        page, more = rows[:size], len(rows) > size
    known = known_names(ctx.agent) if kind == EVALUATIONS.kind else None
    answer: dict[str, Any] = {
        kind: [_render(ctx, res, full=full, memberships=memberships, known=known) for res in page]
    }
    if more:
        answer["nextPageToken"] = encode_token(key, {"o": offset + size}, *scope)
    return answer


def update_resource(
    ctx: ServiceContext, name: str, body: dict[str, Any], update_mask: str
) -> dict[str, Any]:
    """Apply the `update_mask` fields of `body`; a stale `body.etag` is ABORTED."""
    parsed = _resource_name(name, "updated")
    spec = SPECS[parsed.kind]
    check_storable(body, "", ctx.limits.max_depth)
    paths = parse_mask(spec, update_mask)
    patch = writable_part(spec, body, field=spec.singular)
    etag = body.get("etag") if isinstance(body, Mapping) else None
    if etag is not None and not isinstance(etag, str):
        raise InvalidArgument.field("etag", "expected the string etag of the version read")
    given_name = body.get("name") if isinstance(body, Mapping) else None
    if given_name not in (None, "", name):
        raise InvalidArgument.field("name", f"{given_name!r} differs from the path's {name!r}")
    for _attempt in range(_UPDATE_ATTEMPTS):
        current = _fetch(ctx, parsed)
        if etag is not None and etag != current.etag:
            raise Aborted(_stale_message(spec, name))
        merged = apply_mask(current.body, patch, paths)
        validate(ctx.store, parsed.app, spec, parsed.id, merged)
        if spec is SCHEDULES:
            runs.check_scheduled_request(ctx, merged["request"])
            merged = schedules.derive(merged, current, utcnow())
        try:
            stored = ctx.store.resources.put(
                parsed.app,
                parsed.kind,
                parsed.id,
                display_name=merged["displayName"],
                body=merged,
                etag=etag or current.etag,
            )
        except EtagMismatchError:
            if etag is not None:
                raise Aborted(_stale_message(spec, name)) from None
            continue
        if spec is SCHEDULES:
            schedules.scheduler_of(ctx).wake()
        return _render(ctx, stored, full=False)
    raise Aborted(f"{name} kept changing while it was being updated; retry the update")


def delete_resource(
    ctx: ServiceContext, name: str, *, force: bool = False, etag: str | None = None
) -> None:
    """Delete `name`; an evaluation in datasets needs `force` (it is then removed from them)."""
    parsed = parse_name(name)
    if parsed.kind == RUNS:
        runs.delete_run(ctx, name)
        return
    parsed = _resource_name(name, "deleted")
    spec = SPECS[parsed.kind]
    current = _fetch(ctx, parsed)
    if etag is not None and etag != current.etag:
        raise Aborted(_stale_message(spec, name))
    if spec is EXPECTATIONS:
        _refuse_if_referenced(ctx, parsed.app, name)
    datasets = _memberships(ctx, parsed.app).get(parsed.id, []) if spec is EVALUATIONS else []
    if datasets and not force:
        violations = [
            {"type": "REFERENCED", "subject": d, "description": f"{d} lists {name}"}
            for d in datasets
        ]
        raise FailedPrecondition(
            f"{name} is used by the evaluation datasets {', '.join(datasets)}; remove it from "
            "them first or delete with force=true (which also removes it from them)",
            [{"@type": PRECONDITION_FAILURE_TYPE, "violations": violations}],
        )
    ctx.store.resources.delete(parsed.app, parsed.kind, parsed.id, etag=current.etag)
    if spec is EVALUATIONS:
        runs.forget_evaluation(ctx, parsed.app, parsed.id)
    for dataset in datasets:
        _drop_member(ctx, parse_name(dataset), name)


def _refuse_if_referenced(ctx: ServiceContext, app: str, name: str) -> None:
    users = [
        f"apps/{app}/{EVALUATIONS.kind}/{res.id}"
        for res in ctx.store.resources.list_resources(app, EVALUATIONS.kind)
        if any(ref == name for _field, ref in expectation_refs(res.body))
    ]
    if users:
        violations = [
            {"type": "REFERENCED", "subject": u, "description": f"{u} names {name}"} for u in users
        ]
        raise FailedPrecondition(
            f"{name} is named by the evaluations {', '.join(users)}; remove it from their "
            "evaluationExpectations first",
            [{"@type": PRECONDITION_FAILURE_TYPE, "violations": violations}],
        )


def _resource_name(name: str, action: str) -> ResourceName:
    parsed = parse_name(name)
    if parsed.kind not in SPECS:
        raise InvalidArgument.field(
            "name",
            f"{name!r} cannot be {action} this way; only {', '.join(SPECS)} can "
            "(evaluation runs: DELETE; results belong to their run)",
        )
    return parsed


def _fetch(ctx: ServiceContext, parsed: ResourceName) -> Resource:
    found = ctx.store.resources.get(parsed.app, parsed.kind, parsed.id)
    if found is None:
        raise NotFound(f"{SPECS[parsed.kind].singular} {parsed} not found")
    return found


def _stale_message(spec: KindSpec, name: str) -> str:
    return (
        f"the etag does not match the current version of {spec.singular} {name} (it was "
        "changed since it was read); read it again and retry"
    )


def _memberships(ctx: ServiceContext, app: str) -> dict[str, list[str]]:
    """Evaluation id -> names of the datasets listing it."""
    found: dict[str, list[str]] = {}
    for dataset_id, body in ctx.store.resources.bodies(app, DATASETS.kind):
        for member in body.get("evaluations", []):
            found.setdefault(member.rsplit("/", 1)[-1], []).append(
                f"apps/{app}/{DATASETS.kind}/{dataset_id}"
            )
    return found


def _drop_member(ctx: ServiceContext, dataset: ResourceName, member: str) -> None:
    for _attempt in range(_UPDATE_ATTEMPTS):
        current = ctx.store.resources.get(dataset.app, dataset.kind, dataset.id)
        if current is None or member not in current.body.get("evaluations", []):
            return
        body = dict(current.body)
        body["evaluations"] = [m for m in body["evaluations"] if m != member]
        try:
            ctx.store.resources.put(
                dataset.app, dataset.kind, dataset.id,
                display_name=current.display_name, body=body, etag=current.etag,
            )  # fmt: skip
            return
        except EtagMismatchError:
            continue


def _matches(res: Resource, field: str, value: str, memberships: Mapping[str, list[str]]) -> bool:
    if field == "tags":
        return value in res.body.get("tags", [])
    if field == "dataset":
        wanted = value if "/" in value else f"apps/{res.app}/{DATASETS.kind}/{value}"
        return wanted in memberships.get(res.id, [])
    return res.display_name == value


def _render(
    ctx: ServiceContext,
    res: Resource,
    *,
    full: bool,
    memberships: Mapping[str, list[str]] | None = None,
    known: frozenset[str] | None = None,
    decorate: bool = True,
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": f"apps/{res.app}/{res.kind}/{res.id}"}
    body["displayName"] = res.display_name
    # Short descriptive fields first, whatever order the writes left them in.
    body.update((k, res.body[k]) for k in _LEADING_FIELDS if k in res.body)
    body.update((k, v) for k, v in res.body.items() if k not in body)
    body["createTime"] = rfc3339(res.create_time)
    body["updateTime"] = rfc3339(res.update_time)
    body["etag"] = res.etag
    if res.kind == EVALUATIONS.kind:
        if memberships is None:
            memberships = _memberships(ctx, res.app)
            known = known_names(ctx.agent)
        body["evaluationDatasets"] = list(memberships.get(res.id, []))
        body["invalid"] = is_invalid(res.id, res.body, known)
        for decorator in ctx.decorators if decorate else ():
            decorator(ctx, res, body, full)
    return body
