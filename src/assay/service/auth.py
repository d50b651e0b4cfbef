"""Request guards of the evaluation service: API-key authentication and body size.

Both are plain ASGI middleware, so they cover every route, the MCP endpoint included.
Keys are checked against the store (`store.api_keys`, hashed); the OpenAPI document
and its viewers stay public so a client can discover the API before having a key.
The viewer's pages under `/ui` also take the session cookie of its login page
(`ui_session`), so a person can use them in a browser.
"""

from __future__ import annotations

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
from assay.service.ui_session import LOGIN, LOGOUT, UiLogin, is_ui_path, wants_html
from assay.store import Store
from assay.view.writes import is_loopback as is_loopback  # `assay serve`'s bind check

PUBLIC_PATHS = frozenset({"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})


async def _answer(error: ServiceError, scope: Scope, receive: Receive, send: Send) -> None:
    await error.response()(scope, receive, send)


class ApiKeyMiddleware:
    """Requires `Authorization: Bearer <key>` with an active key of the store.

    With `ui` (the viewer's login), `/ui` pages also take its session cookie, and a
    browser without one is sent to the login page instead of answered 401.
    """

    def __init__(self, app: ASGIApp, store: Store, ui: UiLogin | None = None) -> None:
        self.app = app
        self.store = store
        self.ui = ui

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        if self.ui is not None and scope["path"] in (LOGIN, LOGOUT):
            await self.ui.endpoint(scope, receive, send)
            return
        headers = Headers(scope=scope)
        scheme, _, key = (headers.get("authorization") or "").partition(" ")
        if headers.get("x-goog-api-key"):
            # How Google's client libraries send an API key (client_options.api_key).
            scheme, key = "bearer", headers["x-goog-api-key"]
        if (
            not key.strip()
            and self.ui is not None
            and is_ui_path(scope["path"])
            and await self._ui_session(scope, receive, send, wants_html(headers))
        ):
            return
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

    async def _ui_session(self, scope: Scope, receive: Receive, send: Send, html: bool) -> bool:
        """Serve a /ui request by its session cookie, or send a browser to log in; False
        when neither (a tool without a key: answered 401 like any other route)."""
        assert self.ui is not None
        try:
            found = await self.ui.session(scope)
        except StoreError as exc:
            logger.error("checking a /ui session failed: %s", exc)
            await _answer(Internal("could not check the session; see the server log"),
                          scope, receive, send)  # fmt: skip
            return True
        if found is not None:
            state = scope.setdefault("state", {})
            state["api_key"] = found[1]
            state["ui_csrf"] = self.ui.csrf_for(found[0])
            await self.app(scope, receive, send)
            return True
        if html:
            await self.ui.to_login(scope, receive, send)
            return True
        return False


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
