"""JSON encoding for store values, done once per value with orjson.

orjson writes dicts, lists, dataclasses and enums itself; pydantic models (the turns
inside results) come back through `_models.encode_model` as `model_dump(exclude_none=True)`
would give them. orjson also writes NaN and infinity as null, which PostgreSQL's jsonb
requires. The case result document itself is laid out by `_document`.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from assay.errors import StoreError
from assay.store._models import encode_model

# The common case first: without OPT_NON_STR_KEYS orjson writes dicts faster, and
# without OPT_SERIALIZE_NUMPY it does not import numpy on first use. A value that needs
# either (a non-string key, a numpy value) fails the first attempt with TypeError and is
# encoded again with both; anything else unserialisable fails both.
_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def dumps_bytes(value: object) -> bytes:
    """Encode `value` (dicts, lists, dataclasses, enums, pydantic models) as JSON."""
    try:
        return orjson.dumps(value, default=encode_model)
    except TypeError:
        pass
    try:
        return orjson.dumps(value, default=encode_model, option=_OPTIONS)
    except TypeError as exc:
        raise StoreError(f"cannot store value as JSON: {exc}") from exc


def dumps(value: object) -> str:
    """`dumps_bytes` as text (what SQLite's TEXT columns hold)."""
    return dumps_bytes(value).decode()


def canonical_bytes(value: object) -> bytes:
    """JSON with sorted keys, so equal values always hash the same."""
    try:
        return orjson.dumps(value, default=encode_model, option=_OPTIONS | orjson.OPT_SORT_KEYS)
    except TypeError as exc:
        raise StoreError(f"cannot encode value as JSON: {exc}") from exc


def loads(data: str | bytes) -> Any:
    """Decode JSON text written by `dumps`."""
    return orjson.loads(data)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while decoding many documents.

    Decoding allocates millions of containers that all survive, so the collector
    keeps running and finds nothing; pausing it makes reading many results several
    times faster (bench/README.md). The previous state is restored afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
