"""Long-running operations of CES `RunEvaluation`, as `google.longrunning` describes them.

An operation is a view of its evaluation run, named
`projects/{p}/locations/{l}/operations/run-{run id}`: it is done once the run left
RUNNING; a COMPLETED run answers `response` (a `RunEvaluationResponse` naming the run),
an ERROR run answers `error` with the run's error message, a CANCELLED one the status
CANCELLED (the client's `operation.result()` raises `exceptions.Cancelled`).

CancelOperation cancels the run (it ends CANCELLED, keeping the results that finished).
DeleteOperation forgets a finished operation (get answers NOT_FOUND, list leaves it
out) and keeps the run, which stays the durable record.
"""

from __future__ import annotations

from typing import Any

from google.cloud import ces_v1beta as ces
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2

from assay.service import runs
from assay.service._results import service_config
from assay.service.context import ServiceContext
from assay.service.errors import FailedPrecondition, InvalidArgument, NotFound, ServiceError
from assay.service.wire import ces_lro
from assay.service.wire._proto import from_json
from assay.service.wire.ces_names import Location, parse_location
from assay.store.eval_results import SERVICE_KEY
from assay.store.exceptions import RunNotFoundError
from assay.store.runs import RunInfo

_PREFIX = "operations/run-"
MAX_PAGE_SIZE = 1000
# Set in a run's service config once its operation was deleted.
_DELETED = "operationDeleted"
METADATA = ces.RunEvaluationOperationMetadata.pb()
RESPONSE = ces.RunEvaluationResponse.pb()


class Unimplemented(ServiceError):
    http_status, code = 501, "UNIMPLEMENTED"


def _run_of(ctx: ServiceContext, name: str) -> tuple[Location, RunInfo]:
    where, rest = parse_location(name)
    run_id = rest.removeprefix(_PREFIX)
    if not rest.startswith(_PREFIX) or not run_id or "/" in run_id:
        raise InvalidArgument.field(
            "name", f"{name!r} is not an operation name (projects/*/locations/*/operations/*)"
        )
    try:
        run = ctx.store.get_run(run_id)
    except RunNotFoundError:
        raise NotFound(f"operation {name} not found") from None
    if not _listed(run, where):
        raise NotFound(f"operation {name} not found")
    return where, run


def _listed(run: RunInfo, where: Location) -> bool:
    """Whether `run` has an operation in `where` (a service run of that project and
    location whose operation was not deleted)."""
    return (
        SERVICE_KEY in run.config
        and (run.project, run.location) == (where.project, where.location)
        and not service_config(run).get(_DELETED)
    )


def _pack(message: Message) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def _operation(ctx: ServiceContext, where: Location, run: RunInfo) -> Any:
    rendered = runs.render_run(ctx, run.app, run)
    full_run = where.full(rendered["name"])
    svc = service_config(run)
    metadata: dict[str, Any] = {
        "evaluations": [
            where.full(f"apps/{run.app}/evaluations/{e}") for e in svc.get("evaluationIds", [])
        ],
        "evaluationRun": full_run,
        "createTime": rendered["createTime"],
        "verb": "run",
    }
    if rendered.get("endTime"):
        metadata["endTime"] = rendered["endTime"]
    op = operations_pb2.Operation(
        name=where.full(f"{_PREFIX}{run.id}"), metadata=_pack(from_json(METADATA, metadata))
    )
    state = rendered["state"]
    if state == "COMPLETED":
        op.done = True
        op.response.CopyFrom(_pack(from_json(RESPONSE, {"evaluationRun": full_run})))
    elif state == "CANCELLED":
        op.done = True
        op.error.CopyFrom(
            status_pb2.Status(
                code=code_pb2.CANCELLED, message=f"evaluation run {full_run} was cancelled"
            )
        )
    elif state != "RUNNING":
        op.done = True
        reason = rendered.get("errorInfo", {}).get("errorMessage") or "see the evaluation run"
        op.error.CopyFrom(
            status_pb2.Status(
                code=code_pb2.INTERNAL,
                message=f"evaluation run {full_run} ended in {state}: {reason}",
            )
        )
    return op


def operation_of_run(ctx: ServiceContext, where: Location, run_id: str) -> Any:
    """The operation of the evaluation run `run_id`, named under `where`."""
    return _operation(ctx, where, ctx.store.get_run(run_id))


def _stored_id(name: str) -> tuple[Location, str] | None:
    """(Location, id) when `name` names a stored (non-run) operation."""
    where, rest = parse_location(name)
    op_id = rest.removeprefix("operations/")
    if rest.startswith("operations/") and "/" not in op_id and ces_lro.is_stored(op_id):
        return where, op_id
    return None


def get_operation(ctx: ServiceContext, request: Any) -> Any:
    stored = _stored_id(request.name)
    if stored is not None:
        return ces_lro.get(ctx, *stored)
    where, run = _run_of(ctx, request.name)
    return _operation(ctx, where, run)


def list_operations(ctx: ServiceContext, request: Any) -> Any:
    where, rest = parse_location(request.name)
    if rest:
        raise InvalidArgument.field(
            "name", f"{request.name!r} is not a location (projects/{{project}}/locations/{{l}})"
        )
    if request.filter:
        raise InvalidArgument.field("filter", "assay does not support filtering operations")
    if request.page_size < 0:
        raise InvalidArgument.field("page_size", "must not be negative")
    size = min(request.page_size or 50, MAX_PAGE_SIZE)
    offset = 0
    if request.page_token:
        if not request.page_token.isdigit():
            raise InvalidArgument.field("page_token", "not a page token this service issued")
        offset = int(request.page_token)
    # Runs of `assay eval` share the table but are no operations: read until a page of
    # service runs (and one more, to know whether another page follows) is in hand.
    limit = offset + size + 1
    while True:
        newest = ctx.store.list_runs(limit)
        service_runs = [r for r in newest if _listed(r, where)]
        if len(service_runs) > offset + size or len(newest) < limit:
            break
        limit *= 2
    # Then the stored operations (imports, exports, ...): few, read whole.
    stored = ces_lro.listed(ctx, where) if len(service_runs) <= offset + size else []
    everything: list[RunInfo | operations_pb2.Operation] = [*service_runs, *stored]
    answer = operations_pb2.ListOperationsResponse(
        operations=[
            _operation(ctx, where, item) if isinstance(item, RunInfo) else item
            for item in everything[offset : offset + size]
        ]
    )
    if len(everything) > offset + size:
        answer.next_page_token = str(offset + size)
    return answer


def cancel_operation(ctx: ServiceContext, request: Any) -> Message:
    """Cancel the operation's evaluation run (FAILED_PRECONDITION once it finished)."""
    stored = _stored_id(request.name)
    if stored is not None:
        ces_lro.get(ctx, *stored)  # NOT_FOUND when there is none
        raise FailedPrecondition(f"operation {request.name} is done; there is nothing to cancel")
    _where, run = _run_of(ctx, request.name)
    runs.cancel_run(ctx, f"apps/{run.app}/evaluationRuns/{run.id}")
    return empty_pb2.Empty()


def delete_operation(ctx: ServiceContext, request: Any) -> Message:
    """Forget a finished operation; its evaluation run stays."""
    stored = _stored_id(request.name)
    if stored is not None:
        ces_lro.delete(ctx, *stored)
        return empty_pb2.Empty()
    where, run = _run_of(ctx, request.name)
    if not _operation(ctx, where, run).done:
        raise FailedPrecondition(
            f"operation {request.name} is still running; cancel it (CancelOperation) or "
            "wait until it is done before deleting it"
        )
    runs.state_of(ctx).results.set_service_flag(run.id, _DELETED, True)
    return empty_pb2.Empty()


METHODS = {
    "GetOperation": get_operation,
    "ListOperations": list_operations,
    "CancelOperation": cancel_operation,
    "DeleteOperation": delete_operation,
}
