"""List requests: page sizes, opaque page tokens and the `filter` expression.

A page token encodes the offset of the next item and a hash of what was listed (app,
collection, filter), so a token is refused with INVALID_ARGUMENT when it is corrupt or
used with a different request, instead of silently paging through other results.

Filters are terms joined by AND, each `field:"value"` (or `field="value"`):
`tags:"smoke"`, `dataset:"ID or name"`, `displayName:"..."`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from assay.service.errors import InvalidArgument

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000

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


def encode_token(offset: int, *scope: str) -> str:
    raw = json.dumps({"o": offset, "q": _query_hash(*scope)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_token(token: str | None, *scope: str) -> int:
    """The offset a token from `encode_token(..., *scope)` holds (0 without a token)."""
    if not token:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        offset, query = data["o"], data["q"]
    except (ValueError, binascii.Error, TypeError, KeyError):
        raise InvalidArgument.field("pageToken", "not a page token this service issued") from None
    if not isinstance(offset, int) or offset < 0 or query != _query_hash(*scope):
        raise InvalidArgument.field(
            "pageToken", "the token belongs to a different list request (app, collection or filter)"
        )
    return offset
