"""Request guards of the evaluation service: API-key authentication and body size.

Both are plain ASGI middleware, so they cover every route, the MCP endpoint included.
Keys are checked against the store (`store.api_keys`, hashed); the OpenAPI document
and its viewers stay public so a client can discover the API before having a key.
"""

from __future__ import annotations

import ipaddress

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assay.errors import StoreError
from assay.service.errors import (
    Internal,
    PayloadTooLarge,
    ServiceError,
    Unauthenticated,
    logger,
)
from assay.store import Store

PUBLIC_PATHS = frozenset({"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server reachable from this machine only.

    The address is parsed, not matched by prefix: `127.evil.example` is a host name that
    can resolve anywhere. `localhost` is the one name taken (it is loopback by RFC 6761).
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if text.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


async def _answer(error: ServiceError, scope: Scope, receive: Receive, send: Send) -> None:
    await error.response()(scope, receive, send)


class ApiKeyMiddleware:
    """Requires `Authorization: Bearer <key>` with an active key of the store."""

    def __init__(self, app: ASGIApp, store: Store) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        scheme, _, key = (headers.get("authorization") or "").partition(" ")
        if headers.get("x-goog-api-key"):
            # How Google's client libraries send an API key (client_options.api_key).
            scheme, key = "bearer", headers["x-goog-api-key"]
        if scheme.lower() != "bearer" or not key.strip():
            await _answer(
                Unauthenticated(
                    "this request needs an API key: send 'Authorization: Bearer <key>' "
                    "or 'x-goog-api-key: <key>' "
                    "(create one with `assay keys create --name NAME`)"
                ),
                scope,
                receive,
                send,
            )
            return
        # A key verified moments ago is answered from memory, on the loop; only a look-up
        # in the store goes to a thread.
        info = self.store.api_keys.remembered(key.strip())
        try:
            if info is None:
                info = await anyio.to_thread.run_sync(self.store.api_keys.verify, key.strip())
        except StoreError as exc:
            logger.error("checking an API key failed: %s", exc)
            failure = Internal("could not check the API key; see the server log")
            await _answer(failure, scope, receive, send)
            return
        if info is None:
            rejected = Unauthenticated("the API key is not valid (unknown or revoked)")
            await _answer(rejected, scope, receive, send)
            return
        scope.setdefault("state", {})["api_key"] = info
        await self.app(scope, receive, send)


class BodyLimitMiddleware:
    """Refuses request bodies over `max_bytes` with 413 RESOURCE_EXHAUSTED."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self) -> PayloadTooLarge:
        limit = self.max_bytes
        return PayloadTooLarge(f"the request body is larger than the limit of {limit} bytes")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _answer(self._too_large(), scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # Raised while the route reads the body; FastAPI passes HTTP
                    # exceptions on to the handlers, which answer in the status shape.
                    raise HTTPException(413, self._too_large().message)
            return message

        await self.app(scope, limited, send)
