"""CES EvaluationService (and its Operations and Locations mixins) over gRPC.

`assay serve --grpc-port N` serves the methods of `ces_methods` with grpcio, using the
message classes `google-cloud-ces` ships, so the client's default transport works
against `api_endpoint="127.0.0.1:N"` (with an insecure channel: assay serves plain
HTTP/2 on loopback; put a TLS proxy in front elsewhere). Same store, same API keys
(`x-goog-api-key` or `authorization: Bearer` metadata), same rules: a `ServiceError`
becomes its gRPC status code (ABORTED on a stale etag, ALREADY_EXISTS, INVALID_ARGUMENT,
NOT_FOUND, UNAUTHENTICATED) with its message and details as `google.rpc.Status`.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from assay.errors import StoreError
from assay.service.context import ServiceContext
from assay.service.errors import (
    BAD_REQUEST_TYPE,
    InvalidArgument,
    ServiceError,
    Unauthenticated,
    from_exception,
    logger,
)
from assay.service.wire import ces_methods
from assay.service.wire.ces_methods import METHODS
from assay.service.wire.ces_operations import Unimplemented
from assay.service.wire.descriptors import Rpc, rpcs

_WORKERS = 16


def _status(error: ServiceError) -> status_pb2.Status:
    code = grpc.StatusCode.__members__.get(error.code, grpc.StatusCode.UNKNOWN)
    status = status_pb2.Status(code=code.value[0], message=error.message)
    for detail in error.details:
        if detail.get("@type") == BAD_REQUEST_TYPE:
            bad = error_details_pb2.BadRequest()
            for violation in detail.get("fieldViolations", []):
                bad.field_violations.add(
                    field=violation.get("field", ""), description=violation.get("description", "")
                )
            packed = any_pb2.Any()
            packed.Pack(bad)
            status.details.append(packed)
    return status


def _key(metadata: tuple[tuple[str, str | bytes], ...]) -> str | None:
    for name, value in metadata:
        text = value.decode() if isinstance(value, bytes) else value
        if name == "x-goog-api-key" and text.strip():
            return text.strip()
        if name == "authorization":
            scheme, _, key = text.partition(" ")
            if scheme.lower() == "bearer" and key.strip():
                return key.strip()
    return None


def _authenticate(ctx: ServiceContext, context: grpc.ServicerContext) -> None:
    key = _key(tuple(context.invocation_metadata() or ()))
    if key is None:
        raise Unauthenticated(
            "this request needs an API key: send it as 'x-goog-api-key' metadata "
            "(client_options api_key) or 'authorization: Bearer <key>'"
        )
    try:
        info = ctx.store.api_keys.verify(key)
    except StoreError as exc:
        logger.error("checking an API key failed: %s", exc)
        raise
    if info is None:
        raise Unauthenticated("the API key is not valid (unknown or revoked)")


def _behaviour(
    ctx: ServiceContext, rpc: Rpc, auth: bool
) -> Callable[[Any, grpc.ServicerContext], Any]:
    handler = METHODS.get(rpc.name)

    def call(raw: bytes, context: grpc.ServicerContext) -> Any:
        try:
            if auth:
                _authenticate(ctx, context)
            request = _decode(rpc, raw)
            if handler is None:
                raise Unimplemented(
                    f"assay does not implement {rpc.full_name} (yet); the methods it serves "
                    f"are {', '.join(sorted(METHODS))}"
                )
            return ces_methods.call(handler, ctx, request)
        except Exception as exc:  # every failure is answered as a gRPC status
            error = from_exception(exc)
        context.abort_with_status(rpc_status.to_status(_status(error)))

    return call


def _decode(rpc: Rpc, raw: bytes) -> Any:
    """The request message from its bytes: INVALID_ARGUMENT when they are not one.

    Decoded here rather than by grpcio, which answers INTERNAL when its deserializer
    raises (on garbage bytes, or a message nested past protobuf's limit of 100, such as
    a Struct 50 levels deep).
    """
    try:
        return rpc.request.FromString(raw)
    except DecodeError as exc:
        raise InvalidArgument.field(
            "request",
            f"the bytes are not a {rpc.request.DESCRIPTOR.full_name} message ({exc}); a"
            " message nests at most 100 levels (a Struct about 33)",
        ) from None


def handlers(ctx: ServiceContext, *, auth: bool) -> list[grpc.GenericRpcHandler]:
    """One generic handler per service the client calls, over the same `ctx`."""
    by_service: dict[str, dict[str, grpc.RpcMethodHandler]] = {}
    for rpc in rpcs():
        by_service.setdefault(rpc.service, {})[rpc.name] = grpc.unary_unary_rpc_method_handler(
            _behaviour(ctx, rpc, auth),
            request_deserializer=None,  # decoded by the behaviour (`_decode`)
            response_serializer=rpc.response.SerializeToString,
        )
    return [grpc.method_handlers_generic_handler(s, m) for s, m in by_service.items()]


def start(ctx: ServiceContext, host: str, port: int, *, auth: bool) -> tuple[grpc.Server, int]:
    """Start a gRPC server on host:port (0: a free port); returns it and its port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=_WORKERS))
    server.add_generic_rpc_handlers(handlers(ctx, auth=auth))
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    bound = server.add_insecure_port(target)
    if bound == 0:
        raise OSError(f"cannot listen for gRPC on {target}")
    server.start()
    return server, bound
