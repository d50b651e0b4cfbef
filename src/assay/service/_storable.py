"""Whether a JSON value from a client can be stored as it is, checked before it reaches the store.

Request bodies are parsed by Python's `json`, which accepts more than the store (orjson
into SQLite text or PostgreSQL jsonb) and CES's proto3 JSON can hold:

- integers of any size: the store encodes 64-bit integers only, and CES's int64 fields
  stop there too;
- NaN and +-Infinity (and overflowing literals like 1e400): JSON has no such numbers, and
  orjson would silently write them as null;
- strings with lone UTF-16 surrogates (`"\\ud800"`), which are not UTF-8, and NUL
  characters, which PostgreSQL's text and jsonb refuse;
- nesting as deep as Python's recursion limit: orjson stops at 254 levels, and the
  loaders recurse; protobuf's parsers stop at 100, which is the limit here.

Each is refused with INVALID_ARGUMENT naming the field by its JSON path, instead of a 500
from the store or a value silently changed. The walk is iterative, so a hostile depth
cannot exhaust the stack here either.
"""

from __future__ import annotations

import math
from typing import Any

from assay.service.errors import InvalidArgument
from assay.service.settings import DEFAULT_LIMITS

MAX_DEPTH = DEFAULT_LIMITS.max_depth
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_SHOWN_PARTS = 12

# A node's path is kept as (parent path, key) links and only spelled out on an error.
_Path = tuple[Any, str | int] | None
JsonPath = _Path  # the same, for the other checks of client JSON (documents.py)


def check_storable(value: object, field: str, max_depth: int = MAX_DEPTH) -> None:
    """Raise INVALID_ARGUMENT naming the JSON path of the first value the store cannot hold.

    `field` names `value` itself (e.g. "evaluation" or "body"); `max_depth` is the
    server's `ServiceLimits.max_depth`.
    """
    stack: list[tuple[Any, _Path, int]] = [(value, None, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        item, path, depth = pop()
        kind = type(item)
        if kind is str:
            if not item.isascii():
                _check_text(item, field, path)
            elif "\x00" in item:
                raise _bad(
                    field, path, "contains a NUL character (\\u0000), which cannot be stored"
                )
        elif kind is dict:
            if depth >= max_depth:
                raise _too_deep(field, path, max_depth)
            for key, member in item.items():
                if not isinstance(key, str):
                    raise _bad(field, path, "object keys must be strings")
                if not key.isascii() or "\x00" in key:
                    _check_text(key, field, path, what="key")
                push((member, (path, key), depth + 1))
        elif kind is list:
            if depth >= max_depth:
                raise _too_deep(field, path, max_depth)
            for index, member in enumerate(item):
                push((member, (path, index), depth + 1))
        elif kind is int:
            if not INT64_MIN <= item <= INT64_MAX:
                raise _bad(
                    field,
                    path,
                    f"the integer {item} is outside the 64-bit range (-2^63 to 2^63-1) "
                    "that can be stored",
                )
        elif kind is float:
            if not math.isfinite(item):
                raise _bad(
                    field,
                    path,
                    f"{item} is not a finite number (JSON has no NaN or Infinity; "
                    "send a number or null)",
                )
        elif item is None or kind is bool:
            continue
        else:
            raise _bad(field, path, f"a {kind.__name__} is not a JSON value")


def _check_text(text: str, field: str, path: _Path, what: str = "string") -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _bad(
            field, path, f"the {what} is not valid Unicode (it holds a lone UTF-16 surrogate)"
        ) from None
    if "\x00" in text:
        raise _bad(
            field, path, f"the {what} contains a NUL character (\\u0000), which cannot be stored"
        )


def json_path(field: str, path: _Path) -> str:
    """`field` followed by the keys and indexes of `path`: `evaluation.golden.turns[0]`."""
    parts: list[str | int] = []
    while path is not None:
        path, key = path
        parts.append(key)
    parts.reverse()
    if len(parts) > _SHOWN_PARTS:
        # A hostile depth would make the message as long as the body: cut it short.
        parts = [*parts[:_SHOWN_PARTS], "..."]
    out = field
    for key in parts:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
    return out or "body"


def _bad(field: str, path: _Path, description: str) -> InvalidArgument:
    return InvalidArgument.field(json_path(field, path), description)


def _too_deep(field: str, path: _Path, max_depth: int) -> InvalidArgument:
    return _bad(field, path, f"nested deeper than {max_depth} levels of objects and arrays")
