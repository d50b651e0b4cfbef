"""Browser sessions for the viewer at `/ui`: log in with an API key, get a signed cookie.

A browser cannot send `Authorization: Bearer`, so `GET /ui/login` shows a form that
takes an API key; `POST /ui/login` checks it like the Bearer header is checked and
answers with a session cookie:

- `assay_ui=<key id>.<expiry>.<nonce>.<HMAC-SHA256>`, signed with the server's secret
  (random per `assay serve`, shared by its workers), `HttpOnly`, `SameSite=Strict`,
  `Path=/ui`, `Max-Age` of the session (8 hours by default; `Secure` over https). It
  holds the key's id, never the key; every request checks the signature (in constant
  time), the expiry and that the key is still active, so revoking the key ends its
  sessions.
- Every form that posts carries a CSRF token (an HMAC of the session's nonce; the login
  form's of a short-lived login cookie's nonce); a post without it is refused (403).
- `POST /ui/logout` (with its token) removes the cookie.

The cookie is accepted for `/ui` pages only (the viewer reads, and writes only the labels of
its review queue, each form with the session's CSRF token); the REST API keeps
requiring the Bearer key, and a Bearer key keeps working for `/ui` too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs, urlencode

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import Receive, Scope, Send

from assay.errors import StoreError
from assay.service.errors import logger
from assay.store import Store
from assay.store.api_keys import ApiKeyInfo
from assay.view.pages import esc, layout

UI = "/ui"
LOGIN, LOGOUT = "/ui/login", "/ui/logout"
COOKIE, LOGIN_COOKIE = "assay_ui", "assay_ui_login"
SESSION_TTL_S = 8 * 3600
LOGIN_TTL_S = 3600
#: a login or logout form is a few hundred bytes; anything far larger is refused
MAX_FORM_BYTES = 16_384
CSRF_FIELD = "csrf_token"
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "img-src data:; form-action 'self'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}


@dataclass(frozen=True, slots=True)
class UiSession:
    """A verified session cookie: whose key, until when, and its nonce."""

    key_id: str
    expires: int
    nonce: str


class SessionSigner:
    """Signs and reads session cookies and CSRF tokens with one secret."""

    def __init__(
        self,
        secret: bytes | None = None,
        *,
        ttl_s: int = SESSION_TTL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._secret = secret if secret else secrets.token_bytes(32)
        self.ttl_s = ttl_s
        self.clock = clock

    def _mac(self, purpose: str, text: str) -> str:
        digest = hmac.new(self._secret, f"{purpose}\0{text}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def issue(self, key_id: str, *, expires: int | None = None) -> str:
        """A cookie value for the key `key_id` (expiring `ttl_s` from now)."""
        until = int(self.clock()) + self.ttl_s if expires is None else expires
        payload = f"{key_id}.{until}.{secrets.token_urlsafe(16)}"
        return f"{payload}.{self._mac('session', payload)}"

    def read(self, value: str) -> UiSession | None:
        """The session a cookie value holds, or None (forged, malformed or expired)."""
        payload, _, signature = value.rpartition(".")
        if not hmac.compare_digest(signature.encode(), self._mac("session", payload).encode()):
            return None
        key_id, _, rest = payload.partition(".")
        until, _, nonce = rest.partition(".")
        if not key_id or not nonce or not until.isdigit():
            return None
        if int(until) <= self.clock():
            return None
        return UiSession(key_id, int(until), nonce)

    def csrf(self, nonce: str) -> str:
        """The CSRF token of the session (or login form) with `nonce`."""
        return self._mac("csrf", nonce)

    def csrf_ok(self, nonce: str, token: str) -> bool:
        return hmac.compare_digest(token.encode(), self.csrf(nonce).encode())


def is_ui_path(path: str) -> bool:
    return path == UI or path.startswith(UI + "/")


def wants_html(headers: Headers) -> bool:
    """A browser's navigation (it accepts HTML), not a tool asking for JSON."""
    return "text/html" in headers.get("accept", "")


def _cookies(headers: Headers) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


def _root(scope: Scope) -> str:
    return str(scope.get("root_path", "")).rstrip("/")


def _safe_next(scope: Scope, target: str) -> str:
    """Where to go after logging in: a /ui page of this server, nothing else."""
    home = _root(scope) + UI + "/"
    if target.startswith(home) and "//" not in target and "\\" not in target:
        return target
    return home


class UiLogin:
    """The `/ui` login: its two endpoints and the cookie check `ApiKeyMiddleware` asks."""

    def __init__(self, store: Store, signer: SessionSigner) -> None:
        self.store = store
        self.signer = signer

    # -- checking a request ----------------------------------------------------------
    async def session(self, scope: Scope) -> tuple[UiSession, ApiKeyInfo] | None:
        """The request's valid session and its key (still active), or None."""
        value = _cookies(Headers(scope=scope)).get(COOKIE)
        if not value:
            return None
        found = self.signer.read(value)
        if found is None:
            return None
        info = await anyio.to_thread.run_sync(self.store.api_keys.by_id, found.key_id)
        if info is None or not info.active:
            return None
        return found, info

    def csrf_for(self, session: UiSession) -> str:
        return self.signer.csrf(session.nonce)

    async def to_login(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send a browser without a session to the login page (and back afterwards)."""
        query = scope.get("query_string", b"").decode("latin-1")
        here = _root(scope) + scope["path"] + (f"?{query}" if query else "")
        target = f"{_root(scope)}{LOGIN}?{urlencode({'next': here})}"
        await RedirectResponse(target, status_code=303)(scope, receive, send)

    # -- the endpoints ---------------------------------------------------------------
    async def endpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`/ui/login` (GET, POST) and `/ui/logout` (POST)."""
        method = scope["method"]
        response: Response
        if scope["path"] == LOGIN and method in ("GET", "HEAD"):
            response = self._login_page(scope)
        elif method == "POST":
            form = await _read_form(receive)
            if form is None:
                response = self._page(scope, "Log in", "<p id=\"error\">The form is too large "
                                      "or not a form.</p>", 400)  # fmt: skip
            elif scope["path"] == LOGIN:
                response = await self._login(scope, form)
            else:
                response = await self._logout(scope, form)
        else:
            response = Response("method not allowed", status_code=405, headers={"Allow": "POST"})
        await response(scope, receive, send)

    def _cookie(self, scope: Scope, response: Response, name: str, value: str, age: int) -> None:
        response.set_cookie(
            name, value, max_age=age, path=_root(scope) + UI, httponly=True,
            samesite="strict", secure=scope.get("scheme") == "https",
        )  # fmt: skip

    def _page(self, scope: Scope, title: str, body: str, status: int = 200) -> HTMLResponse:
        html = layout(f"assay · {title}", body, base=_root(scope) + UI)
        return HTMLResponse(html, status_code=status, headers=_SECURITY_HEADERS)

    def _login_page(
        self, scope: Scope, *, error: str = "", status: int = 200, next_url: str | None = None
    ) -> HTMLResponse:
        if next_url is None:
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            next_url = (query.get("next") or [""])[0]
        nonce = secrets.token_urlsafe(16)
        message = f'<p class="error" id="error">{esc(error)}</p>' if error else ""
        body = (
            "<h1>Log in to assay</h1>"
            "<p>Paste an API key of this server (<code>assay keys create --name NAME</code> "
            "makes one). The browser keeps a session cookie, not the key.</p>"
            f'{message}<form method="post" action="{esc(_root(scope) + LOGIN)}" id="login">'
            f'<input type="hidden" name="{CSRF_FIELD}" value="{self.signer.csrf(nonce)}">'
            f'<input type="hidden" name="next" value="{esc(_safe_next(scope, next_url))}">'
            '<label>API key <input type="password" name="api_key" id="api-key" '
            'autocomplete="off" required size="60"></label> '
            '<button type="submit" id="login-button">log in</button></form>'
        )
        response = self._page(scope, "log in", body, status)
        self._cookie(scope, response, LOGIN_COOKIE, nonce, LOGIN_TTL_S)
        return response

    async def _login(self, scope: Scope, form: dict[str, str]) -> Response:
        nonce = _cookies(Headers(scope=scope)).get(LOGIN_COOKIE, "")
        next_url = _safe_next(scope, form.get("next", ""))
        if not nonce or not self.signer.csrf_ok(nonce, form.get(CSRF_FIELD, "")):
            return self._login_page(
                scope, status=403, next_url=next_url,
                error="This form has expired or did not come from this page (no valid CSRF "
                "token): log in again.",
            )  # fmt: skip
        key = form.get("api_key", "").strip()
        try:
            info = await anyio.to_thread.run_sync(self.store.api_keys.verify, key) if key else None
        except StoreError as exc:
            logger.error("checking an API key failed: %s", exc)
            return self._page(scope, "log in", '<p id="error">Could not check the API key; '
                              "see the server log.</p>", 500)  # fmt: skip
        if info is None:
            return self._login_page(
                scope, status=401, next_url=next_url,
                error="The API key is not valid (unknown or revoked).",
            )  # fmt: skip
        response = RedirectResponse(next_url, status_code=303, headers=_SECURITY_HEADERS)
        self._cookie(scope, response, COOKIE, self.signer.issue(info.id), self.signer.ttl_s)
        response.delete_cookie(LOGIN_COOKIE, path=_root(scope) + UI)
        return response

    async def _logout(self, scope: Scope, form: dict[str, str]) -> Response:
        found = await self.session(scope)
        if found is None or not self.signer.csrf_ok(found[0].nonce, form.get(CSRF_FIELD, "")):
            refused = ('<p class="error" id="error">Refused: this form has no valid CSRF '
                       "token for your session.</p>")  # fmt: skip
            return self._page(scope, "log out", refused, 403)
        response = RedirectResponse(_root(scope) + LOGIN, status_code=303,
                                    headers=_SECURITY_HEADERS)  # fmt: skip
        response.delete_cookie(COOKIE, path=_root(scope) + UI, httponly=True, samesite="strict")
        return response


async def _read_form(receive: Receive) -> dict[str, str] | None:
    """An urlencoded form body (first value of each field); None when over the limit."""
    body = b""
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body += message.get("body", b"")
        if len(body) > MAX_FORM_BYTES:
            return None
        more = message.get("more_body", False)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return {k: v[0] for k, v in parse_qs(text, keep_blank_values=True).items()}
