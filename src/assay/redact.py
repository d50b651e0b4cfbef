"""Credentials kept out of what assay shows, writes and stores (issue #31).

An error a model or agent endpoint answers may quote what it was sent: an API key, an
`Authorization` header, the password of a URL, a `?key=` or `?token=` parameter. Every
error text that crosses from an endpoint into assay (`ModelCallError`, `AgentError`)
goes through `redact` when it is made, so stdout, reports, the store and the service's
answers only ever get the redacted text; URLs given by the user (an `--agent` URL) are
shown and stored as `redact_url` gives them.

`redact` removes:

- every credential assay was given to send (`remember`: the API keys handed to a model
  SDK, a URL's password and secret query values) and the values of environment
  variables named like credentials (`*_API_KEY`, `*_TOKEN`, `*_SECRET`), which the
  SDKs send on their own (12 characters or more); each also percent-encoded;
- what looks like one whatever its value: `Bearer ...` / `Basic ...`, `api-key: ...`
  style headers, the password of a URL, secret query parameters (`key`, `token`,
  `api_key`, `sig`, ...).

Only the standard library: the ground floor of the import layers.
"""

from __future__ import annotations

import base64
import os
import re
import threading
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit, urlunsplit

MASK = "***"
"""What a credential is replaced with."""

MIN_LENGTH = 6
"""Shorter values are not treated as credentials (they would mask ordinary words)."""

_SECRET_PARAM = (
    r"(?:api[_-]?key|apikey|key|access[_-]?token|refresh[_-]?token|id[_-]?token|token|"
    r"secret|client[_-]?secret|password|passwd|pwd|auth|authorization|sig|signature|"
    r"x-goog-api-key|x-api-key|session|credential|credentials)"
)
_QUERY_SECRET = re.compile(rf"([?&;]{_SECRET_PARAM}=)[^&#\s\"'<>]+", re.IGNORECASE)
_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^/\s:@\"'<>]*:)[^@/\s\"'<>]+@", re.IGNORECASE)
_SCHEME_TOKEN = re.compile(r"\b(Bearer|Basic|Token)(\s+)([A-Za-z0-9._~+/=-]{4,})", re.IGNORECASE)
_CREDENTIAL_LIKE = re.compile(r"[0-9_~+/=]|[a-z].*[A-Z]|[A-Z].*[a-z]")
"""A digit or symbol, or mixed case: a token, not a word ("Token limit", "Basic plan",
"Bearer tokens.", "Basic auth-only")."""
_HEADER = re.compile(
    r"((?:x-goog-api-key|x-api-key|api-key|apikey|authorization)[\"']?\s*[:=]\s*[\"']?)"
    r"(?!Bearer\b|Basic\b|Token\b)[^\s\"',;}]+",
    re.IGNORECASE,
)
_ENV_SECRET = re.compile(r"(API_?KEY|TOKEN|SECRET)$", re.IGNORECASE)
ENV_MIN_LENGTH = 12
"""Environment values shorter than this are not masked (real API keys are longer)."""

_lock = threading.Lock()
_remembered: set[str] = set()


def remember(secret: str | None) -> None:
    """Mask `secret` (and its percent-encoded forms) in every later `redact`."""
    if secret is None or len(secret) < MIN_LENGTH:
        return
    with _lock:
        _remembered.update({secret, quote(secret, safe=""), quote_plus(secret)})


def url_secrets(url: str) -> list[str]:
    """The password and the secret query values of `url`."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    found = [password, unquote(password)] if password else []
    pattern = re.compile(rf"{_SECRET_PARAM}$", re.IGNORECASE)
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if pattern.match(k)]
    return [s for s in found if s]


def remember_url(url: str) -> None:
    """`remember` the password and secret query values of a URL assay will call, and
    the Basic credentials its clients send for the URL's user and password."""
    for secret in url_secrets(url):
        remember(secret)
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return
    if password:
        for form in ((user or "", password), (unquote(user or ""), unquote(password))):
            remember(base64.b64encode(":".join(form).encode()).decode())


def _known() -> list[str]:
    with _lock:
        values = set(_remembered)
    for name, value in os.environ.items():
        if _ENV_SECRET.search(name) and len(value) >= ENV_MIN_LENGTH:
            values.add(value)
    return sorted(values, key=len, reverse=True)


def redact(text: str) -> str:
    """`text` without any credential (see the module's docstring)."""
    for secret in _known():
        if secret in text:
            text = text.replace(secret, MASK)
    text = _USERINFO.sub(rf"\g<1>{MASK}@", text)
    text = _QUERY_SECRET.sub(rf"\g<1>{MASK}", text)
    text = _SCHEME_TOKEN.sub(_scheme_token, text)
    return _HEADER.sub(rf"\g<1>{MASK}", text)


def _scheme_token(match: re.Match[str]) -> str:
    scheme, space, token = match.groups()
    if not _CREDENTIAL_LIKE.search(token[1:] if token[:1].isupper() else token):
        return match.group(0)
    return f"{scheme}{space}{MASK}"


def redact_url(url: str) -> str:
    """`url` as it may be shown and stored: the password and secret query values masked."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return redact(url)
    netloc = parts.netloc
    if password:
        userinfo, _, host = netloc.rpartition("@")
        netloc = f"{userinfo.partition(':')[0]}:{MASK}@{host}"
    query = _QUERY_SECRET.sub(rf"\g<1>{MASK}", "?" + parts.query)[1:] if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_query(target: str) -> str:
    """A request target (`/path?query`) as logs may show it: every query value masked
    (a client may put its API key in any parameter)."""
    path, sep, query = target.partition("?")
    if not sep:
        return target
    masked = [
        f"{name}={MASK}" if has_value else name
        for name, has_value, _ in (p.partition("=") for p in query.split("&"))
    ]
    return f"{path}?{'&'.join(masked)}"
