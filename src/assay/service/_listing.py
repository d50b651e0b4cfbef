"""List requests: page sizes, opaque page tokens and the `filter` expression.

A page token holds where the next page starts (an offset, or the last item's key) and
a hash of what was listed (app, collection, filter), signed with an HMAC whose key is
kept in the store (`store.secrets`). So a client cannot forge one to read from any
offset, and a token that is corrupt, altered, or used with a different request is
refused with INVALID_ARGUMENT instead of silently paging through other results.

Filters are terms joined by AND, each `field:"value"` (or `field="value"`):
`tags:"smoke"`, `dataset:"ID or name"`, `displayName:"..."`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.service.errors import InvalidArgument
from assay.store import Store

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
# Name of the store secret that signs page tokens, and the signature's length (128 bits).
TOKEN_SECRET = "page-tokens"
SIGNATURE_BYTES = 16
MAX_TOKEN_CHARS = 1024

_TERM = re.compile(r'\s*([A-Za-z]+)\s*[:=]\s*(?:"((?:[^"\\]|\\.)*)"|([^\s"]+))\s*')
_AND = re.compile(r"\s+AND\s+")


@dataclass(frozen=True, slots=True)
class Term:
    field: str
    value: str


def parse_filter(text: str | None, fields: Sequence[str]) -> list[Term]:
    """The filter's terms; INVALID_ARGUMENT naming the supported fields otherwise."""
    if text is None or not text.strip():
        return []
    terms: list[Term] = []
    for part in _AND.split(text.strip()):
        match = _TERM.fullmatch(part)
        if match is None or match.group(1) not in fields:
            raise InvalidArgument.field(
                "filter",
                f'cannot read {part.strip()!r}; expected terms field:"value" joined by AND, '
                f"with field one of {', '.join(fields)}",
            )
        quoted, bare = match.group(2), match.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        terms.append(Term(match.group(1), value))
    return terms


def page_size_of(page_size: int) -> int:
    """0 means the default; more than the maximum is lowered to it (AIP-158)."""
    if page_size < 0:
        raise InvalidArgument.field("pageSize", f"must not be negative (got {page_size})")
    return min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def _query_hash(*scope: str) -> str:
    return hashlib.sha256("\x1f".join(scope).encode()).hexdigest()[:16]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _signature(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest()[:SIGNATURE_BYTES]


def encode_token(key: bytes, cursor: Mapping[str, int | str], *scope: str) -> str:
    """An opaque page token holding `cursor` (where the next page starts), bound to the
    list request `scope` and signed with `key` (the store's page-token secret)."""
    payload = json.dumps({**cursor, "q": _query_hash(*scope)}, separators=(",", ":")).encode()
    return f"{_b64(payload)}.{_b64(_signature(key, payload))}"


def decode_token(key: bytes, token: str | None, *scope: str) -> dict[str, Any] | None:
    """The cursor of a token from `encode_token(key, ..., *scope)`; None without a token.

    A token that is malformed, was not signed with `key` (forged or changed) or belongs
    to another list request is INVALID_ARGUMENT naming pageToken.
    """
    if not token:
        return None
    payload, dot, signature = token.partition(".")
    try:
        if not dot or len(token) > MAX_TOKEN_CHARS or not token.isascii():
            raise ValueError("not a token")
        raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        given = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
        if not hmac.compare_digest(given, _signature(key, raw)):
            raise ValueError("bad signature")
        data = json.loads(raw)
    except (ValueError, binascii.Error):
        raise InvalidArgument.field(
            "pageToken", "not a page token this service issued (pass nextPageToken unchanged)"
        ) from None
    if not isinstance(data, dict) or data.pop("q", None) != _query_hash(*scope):
        raise InvalidArgument.field(
            "pageToken",
            "the token belongs to a different list request (app, collection or filter); "
            "page with the same request that returned it",
        )
    return data


def token_key(store: Store) -> bytes:
    """The key signing this store's page tokens (shared by every server over it)."""
    return store.secrets.get(TOKEN_SECRET)


def offset_of(cursor: Mapping[str, object] | None) -> int:
    """The offset a resource-list token holds (0 on the first page)."""
    offset = 0 if cursor is None else cursor.get("o")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidArgument.field("pageToken", "the token holds no page offset")
    return offset
