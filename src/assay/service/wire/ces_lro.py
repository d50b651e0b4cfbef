"""The long-running operations of CES methods other than RunEvaluation.

ImportEvaluations, the Export* methods, GenerateEvaluation, RunEvaluationResultMetrics
and DeleteEvaluationRun answer `google.longrunning.Operation`s. assay does their work
while answering (it is local and quick: files, the store, one judge call at most), so
each operation is done when it is returned; a large import is the exception: it is
answered `pending` and written in batches by a thread that `update`s it. Every
operation is also stored, so the client's `operation.result()`, a later GetOperation,
ListOperations and DeleteOperation find it like CES's own: named
`projects/{p}/locations/{l}/operations/{verb}-{id}`, kept in the store's resources
under a reserved app (`_operations`, which no app id can equal) in the project and
location of the request.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

from google.longrunning import operations_pb2
from google.protobuf import any_pb2, timestamp_pb2
from google.protobuf.message import Message
from google.rpc import status_pb2

from assay.service.context import ServiceContext
from assay.service.errors import NotFound, ServiceError
from assay.service.wire.ces_names import Location
from assay.store import Resource
from assay.store.namespace import namespace_scope
from assay.store.types import utcnow

# App ids start with a letter or digit, so no app can collide with this one.
_APP = "_operations"
_KIND = "operations"
# Verbs of the stored operations; run operations (`run-`) are views of their runs.
VERBS = ("import", "export", "generate", "metrics", "delete")


def _pack(message: Message) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def now() -> timestamp_pb2.Timestamp:
    """The current time as a protobuf Timestamp (for operation metadata)."""
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(utcnow())
    return stamp


def _outcome(
    op: operations_pb2.Operation, response: Message | None, error: ServiceError | None
) -> None:
    if error is not None:
        from grpc import StatusCode

        code = StatusCode.__members__.get(error.code, StatusCode.UNKNOWN).value[0]
        op.error.CopyFrom(status_pb2.Status(code=code, message=error.message))
    elif response is not None:
        op.response.CopyFrom(_pack(response))


def _body(op: operations_pb2.Operation) -> dict[str, Any]:
    return {"operation": base64.b64encode(op.SerializeToString()).decode()}


def finished(
    ctx: ServiceContext,
    where: Location,
    verb: str,
    metadata: Message,
    response: Message | None = None,
    error: ServiceError | None = None,
) -> Message:
    """Store and return a done operation answering `response` (or `error`)."""
    op_id = f"{verb}-{secrets.token_hex(8)}"
    op = operations_pb2.Operation(
        name=where.full(f"operations/{op_id}"), metadata=_pack(metadata), done=True
    )
    _outcome(op, response, error)
    with namespace_scope(where.namespace):
        ctx.store.resources.create(_APP, _KIND, op_id, display_name=op_id, body=_body(op))
    stored: Message = op
    return stored


def pending(ctx: ServiceContext, where: Location, verb: str, metadata: Message) -> Message:
    """Store and return an operation still running (see `update`)."""
    op_id = f"{verb}-{secrets.token_hex(8)}"
    op = operations_pb2.Operation(
        name=where.full(f"operations/{op_id}"), metadata=_pack(metadata), done=False
    )
    with namespace_scope(where.namespace):
        ctx.store.resources.create(_APP, _KIND, op_id, display_name=op_id, body=_body(op))
    stored: Message = op
    return stored


def update(
    ctx: ServiceContext,
    where: Location,
    name: str,
    metadata: Message,
    *,
    done: bool = False,
    response: Message | None = None,
    error: ServiceError | None = None,
) -> None:
    """Replace a pending operation's metadata (progress), or finish it."""
    op_id = name.rsplit("/", 1)[-1]
    op = operations_pb2.Operation(name=name, metadata=_pack(metadata), done=done)
    _outcome(op, response, error)
    with namespace_scope(where.namespace):
        ctx.store.resources.put(_APP, _KIND, op_id, display_name=op_id, body=_body(op))


def is_stored(op_id: str) -> bool:
    """Whether an operation id is one of the stored kinds (not a run's)."""
    return op_id.split("-", 1)[0] in VERBS


def _decode(body: dict[str, Any]) -> operations_pb2.Operation:
    op = operations_pb2.Operation()
    op.ParseFromString(base64.b64decode(body["operation"]))
    return op


def _operation(ctx: ServiceContext, stored: Resource) -> operations_pb2.Operation:
    """The stored operation; a pending one whose writer stopped is answered as failed.

    A pending operation's writer stores its progress after every batch, so its update
    time is a heartbeat: with none for longer than the run lease, the server writing it
    is gone (killed or crashed), and the client is told so instead of waiting forever.
    """
    op = _decode(stored.body)
    if op.done:
        return op
    silent = (utcnow() - stored.update_time).total_seconds()
    if silent >= ctx.run_lease_s:
        op.done = True
        op.error.CopyFrom(
            status_pb2.Status(
                code=10,  # ABORTED
                message=f"the server writing this operation stopped ({silent:.0f} s without "
                "progress); what it wrote before is kept: import the rest again (e.g. with "
                "import_options.conflict_resolution_strategy SKIP)",
            )
        )
    return op


def get(ctx: ServiceContext, where: Location, op_id: str) -> operations_pb2.Operation:
    """The stored operation `op_id` of this project and location (NOT_FOUND if none)."""
    with namespace_scope(where.namespace):
        found = ctx.store.resources.get(_APP, _KIND, op_id)
    if found is None:
        raise NotFound(f"operation {where.full('operations/' + op_id)} not found")
    return _operation(ctx, found)


def listed(ctx: ServiceContext, where: Location) -> list[operations_pb2.Operation]:
    """The stored operations of this project and location, newest first."""
    with namespace_scope(where.namespace):
        stored = ctx.store.resources.list_resources(_APP, _KIND)
    return [_operation(ctx, r) for r in reversed(stored)]


def delete(ctx: ServiceContext, where: Location, op_id: str) -> None:
    """Forget the stored operation `op_id` (NOT_FOUND if there is none)."""
    get(ctx, where, op_id)
    with namespace_scope(where.namespace):
        ctx.store.resources.delete(_APP, _KIND, op_id)
