"""Errors of the evaluation service in the Google API status shape.

Every failure answers `{"error": {"code": <HTTP status>, "status": "<CODE>", "message",
"details": [...]}}`, as Google APIs (and CES) write it. Handlers installed by
`install_handlers` turn request-validation errors, store errors and any unexpected
exception into that shape; a stack trace never reaches the client (it is logged).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from assay.errors import AgentError, AssayError, ConfigError, InputError, StoreError
from assay.store.exceptions import (
    EtagMismatchError,
    ResourceConflictError,
    ResourceNotFoundError,
    RunNotFoundError,
    StoreUnavailableError,
)

logger = logging.getLogger("assay.service")

BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"
PRECONDITION_FAILURE_TYPE = "type.googleapis.com/google.rpc.PreconditionFailure"


class ServiceError(Exception):
    """An error answered to the client: HTTP `http_status`, canonical `code` name."""

    http_status = 500
    code = "INTERNAL"

    def __init__(self, message: str, details: Sequence[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = list(details or [])

    def payload(self) -> dict[str, Any]:
        return {
            "error": {
                "code": self.http_status,
                "status": self.code,
                "message": self.message,
                "details": self.details,
            }
        }

    def response(self, headers: Mapping[str, str] | None = None) -> JSONResponse:
        sent = dict(headers or {})
        if self.http_status == 401:
            sent["WWW-Authenticate"] = "Bearer"
        if self.http_status == 503:
            sent.setdefault("Retry-After", str(Unavailable.retry_after_s))
        return JSONResponse(self.payload(), status_code=self.http_status, headers=sent or None)


class InvalidArgument(ServiceError):
    http_status, code = 400, "INVALID_ARGUMENT"

    @classmethod
    def field(cls, field: str, description: str) -> InvalidArgument:
        """An error about one request field (a google.rpc.BadRequest field violation)."""
        return cls(f"{field}: {description}", [field_violation(field, description)])


class FailedPrecondition(ServiceError):
    http_status, code = 400, "FAILED_PRECONDITION"


class Unauthenticated(ServiceError):
    http_status, code = 401, "UNAUTHENTICATED"


class PermissionDenied(ServiceError):
    http_status, code = 403, "PERMISSION_DENIED"


class NotFound(ServiceError):
    http_status, code = 404, "NOT_FOUND"


class AlreadyExists(ServiceError):
    http_status, code = 409, "ALREADY_EXISTS"


class Aborted(ServiceError):
    http_status, code = 409, "ABORTED"


class PayloadTooLarge(ServiceError):
    # gRPC reports an over-size message as RESOURCE_EXHAUSTED; HTTP says 413.
    http_status, code = 413, "RESOURCE_EXHAUSTED"


class RateLimited(ServiceError):
    """Too many requests from one API key (or, without auth, one client address)."""

    http_status, code = 429, "RESOURCE_EXHAUSTED"


class Internal(ServiceError):
    http_status, code = 500, "INTERNAL"


class Unavailable(ServiceError):
    """The store cannot be reached for now; the client retries (Retry-After)."""

    http_status, code = 503, "UNAVAILABLE"
    retry_after_s = 1


def field_violation(field: str, description: str) -> dict[str, Any]:
    return {
        "@type": BAD_REQUEST_TYPE,
        "fieldViolations": [{"field": field, "description": description}],
    }


def from_exception(exc: Exception) -> ServiceError:
    """The ServiceError an exception from the store or a loader stands for."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, ResourceNotFoundError | RunNotFoundError):
        return NotFound(str(exc))
    if isinstance(exc, EtagMismatchError):
        return Aborted(str(exc))
    if isinstance(exc, ResourceConflictError):
        return AlreadyExists(str(exc))
    if isinstance(exc, InputError):
        field = (exc.path or "").removeprefix("$").removeprefix(".")
        reason = f"{exc.detail} (expected {exc.expected})" if exc.expected else exc.detail
        details = [field_violation(field, reason)] if field else []
        return InvalidArgument(str(exc), details)
    if isinstance(exc, ConfigError):
        return InvalidArgument(str(exc))
    if isinstance(exc, AgentError):
        return FailedPrecondition(str(exc))
    if isinstance(exc, StoreUnavailableError):
        logger.warning("store unavailable: %s", exc)
        return Unavailable(
            "the store is unavailable for now (its database cannot be reached); retry shortly"
        )
    if isinstance(exc, StoreError):
        logger.error("store failure: %s", exc)
        return Internal("the store failed to answer; see the server log")
    logger.exception("unexpected error", exc_info=exc)
    return Internal("internal error; see the server log")


def _validation_message(exc: RequestValidationError) -> ServiceError:
    violations = []
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            reason = err.get("ctx", {}).get("error", "malformed JSON")
            return InvalidArgument(f"the request body is not valid JSON: {reason}")
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        violations.append((where, str(err.get("msg", "invalid"))))
    if not violations:
        return InvalidArgument("invalid request")
    message = "; ".join(f"{field}: {msg}" for field, msg in violations)
    return InvalidArgument(message, [field_violation(f, m) for f, m in violations])


async def _service_error(_request: Request, exc: Exception) -> JSONResponse:
    return from_exception(exc).response()


def _not_json(request: Request, exc: RequestValidationError) -> ServiceError | None:
    """The 400 for a body sent without `Content-Type: application/json` (curl's `-d`
    sends `application/x-www-form-urlencoded`), which the body's fields cannot say."""
    if not any(tuple(err.get("loc", ()))[:1] == ("body",) for err in exc.errors()):
        return None
    sent = request.headers.get("content-length", "0") not in ("", "0") or (
        "transfer-encoding" in request.headers
    )
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if not sent or media == "application/json" or media.endswith("+json"):
        return None
    got = f"Content-Type {media!r}" if media else "no Content-Type"
    message = (
        f"the request body must be JSON sent with 'Content-Type: application/json'; this"
        f" request has {got} (with curl, add -H 'Content-Type: application/json')"
    )
    return InvalidArgument(message, [field_violation("body", message)])


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return (_not_json(request, exc) or _validation_message(exc)).response()


# The error each HTTP status Starlette raises (404 for an unknown path, ...) is answered as.
_BY_HTTP_STATUS: dict[int, type[ServiceError]] = {
    cls.http_status: cls
    for cls in (InvalidArgument, Unauthenticated, PermissionDenied, NotFound, PayloadTooLarge)
}


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app answers on this request's path."""
    # Asked of each method in turn: only a full match says a route takes it (routers
    # nest, and a partial match does not tell which of their routes matched).
    routes = request.app.router.routes
    return [
        method
        for method in _METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes
        )
    ]


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    cls = _BY_HTTP_STATUS.get(exc.status_code)
    # Starlette's headers say what the status needs (Allow on 405): keep them. Its Allow
    # names the methods of the first route matching the path only; a path served by
    # several routes (GET and POST of a collection) allows all of theirs.
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers.pop("allow", None)
        headers["Allow"] = ", ".join(allowed_methods(request)) or headers.get("Allow", "")
    if cls is None:
        error = ServiceError(_http_message(exc, headers))
        error.http_status, error.code = exc.status_code, _status_name(exc.status_code)
        return error.response(headers)
    message = str(exc.detail)
    if exc.status_code == 404:
        message = "no such path; the API lives under /v1 (see /docs)"
    return cls(message).response(headers)


def _http_message(exc: StarletteHTTPException, headers: Mapping[str, str] | None) -> str:
    allowed = (headers or {}).get("Allow") or (headers or {}).get("allow")
    if exc.status_code == 405 and allowed:
        return f"method not allowed on this path; it accepts {allowed}"
    return str(exc.detail)


def _status_name(http_status: int) -> str:
    if http_status == 405:
        return "UNIMPLEMENTED"
    return "INTERNAL" if http_status >= 500 else "FAILED_PRECONDITION"


def install_handlers(app: FastAPI) -> None:
    """Answer every error raised while handling a request in the status shape."""
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    # Known errors are answered by the exception middleware; only the catch-all
    # reaches Starlette's server-error middleware (which also logs the traceback).
    app.add_exception_handler(ServiceError, _service_error)
    app.add_exception_handler(AssayError, _service_error)
    app.add_exception_handler(Exception, _service_error)


def error_body(error: ServiceError) -> bytes:
    """The JSON bytes of `error`, for answering from ASGI middleware."""
    return json.dumps(error.payload()).encode()
