"""The local viewer's protection of the routes that write: a per-process token.

Both writers of the viewer use it: the review queue's labels (`view/review.py`, which
also accepts the login session of `/ui`) and the authoring pages (`view/cases.py`).

`assay view` has no login (it listens on loopback only), so a page it serves carries a
random token of the process in each form that posts; a post is accepted only with
that token (compared in constant time), only on a loopback `Host` (a page of another
site that rebinds its name to 127.0.0.1 cannot post as this one) and, when the browser
says where the post comes from (`Origin`), only from the viewer's own origin. Forms
are small: a body over `MAX_FORM_BYTES` is refused.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from urllib.parse import parse_qs, urlsplit

from fastapi import Request

from assay.errors import AssayError
from assay.view.pages import esc

#: the viewer's forms hold a file path and a few words
MAX_FORM_BYTES = 16_384


def _host_name(header: str) -> str:
    """The host of a `Host` header, without its port (`[::1]:8765` -> `::1`)."""
    if header.startswith("["):
        return header[1:].split("]", 1)[0].lower()
    return header.rsplit(":", 1)[0].lower() if header.count(":") == 1 else header.lower()


def is_loopback(host: str) -> bool:
    """Whether `host` is `localhost` or a loopback address (`[::1]` too): what binding
    it keeps reachable from this machine only, and what a `Host` header must name.

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


class WriteRefused(AssayError):
    """A post without the process's token, from another origin or host (403)."""


def loopback_host(header: str) -> bool:
    """Whether a `Host` header names `localhost` or a loopback address."""
    return is_loopback(_host_name(header))


def parse_form(body: bytes, limit: int = MAX_FORM_BYTES) -> dict[str, str] | None:
    """An urlencoded form (first value of each field); None when over `limit` bytes or
    not UTF-8."""
    if len(body) > limit:
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return {k: v[0] for k, v in parse_qs(text, keep_blank_values=True).items()}


class WriteGuard:
    """The token of one viewer process, and the check of a post against it."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token or secrets.token_urlsafe(32)

    def field(self) -> str:
        """The hidden form field carrying the token."""
        return f'<input type="hidden" name="csrf" value="{esc(self.token)}">'

    async def form(self, request: Request) -> dict[str, str]:
        """The posted form's fields (one value each), once the post is checked."""
        host = request.headers.get("host") or ""
        if not loopback_host(host):
            raise WriteRefused(f"writes are served on a loopback address only, not {host!r}")
        origin = request.headers.get("origin")
        if origin not in (None, "null") and urlsplit(origin).netloc != request.headers.get("host"):
            raise WriteRefused(f"a post from another origin ({origin}) is refused")
        form = parse_form(await request.body())
        if form is None:
            raise WriteRefused("the form is larger than any the viewer sends, or not UTF-8")
        if not hmac.compare_digest(form.get("csrf", ""), self.token):
            raise WriteRefused("the form has no valid token of this viewer: reload the page")
        return form
