"""Column types that behave the same on SQLite and PostgreSQL.

Migration scripts import these, so their storage (TEXT/DATETIME on SQLite, JSONB and
TIMESTAMPTZ on PostgreSQL) must not change without a new migration.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, Dialect, Text
from sqlalchemy.types import TypeDecorator, TypeEngine

from assay.store._json import dumps, dumps_bytes, loads


def utcnow() -> datetime:
    """The current time as an aware UTC datetime (what every time column holds)."""
    return datetime.now(UTC)


class JSONValue(TypeDecorator[Any]):
    """A JSON document: TEXT on SQLite, JSONB on PostgreSQL.

    Bound values are any JSON-able Python value, including result dataclasses and
    pydantic models; they are encoded exactly once, by orjson (see `_json`).
    """

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            # Imported here: the dialect's package (slow to import) is not loaded for SQLite.
            from sqlalchemy.dialects.postgresql import JSONB

            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(Text())

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any] | None:
        if dialect.name == "postgresql":
            # psycopg's Jsonb wrapper sends the value typed as jsonb; giving it our
            # encoder keeps to one orjson pass instead of SQLAlchemy's json.dumps.
            from psycopg.types.json import Jsonb

            def to_jsonb(value: object) -> Any:
                return None if value is None else Jsonb(value, dumps=dumps_bytes)

            return to_jsonb

        def to_text(value: object) -> str | None:
            return None if value is None else dumps(value)

        return to_text

    def result_processor(self, dialect: Dialect, coltype: object) -> Callable[[Any], Any] | None:
        if dialect.name == "postgresql":
            # psycopg already decoded the jsonb (with orjson, set on the engine).
            return None

        def from_text(value: str | None) -> Any:
            return None if value is None else loads(value)

        return from_text

    @property
    def python_type(self) -> type[Any]:
        return object


class UTCDateTime(TypeDecorator[datetime]):
    """A point in time, always returned as an aware UTC datetime.

    SQLite has no time zones, so values are stored as naive UTC there; PostgreSQL
    stores TIMESTAMPTZ. Naive datetimes are refused rather than guessed at.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value.isoformat()} given; use an aware UTC time")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
