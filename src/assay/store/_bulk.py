"""Batch insert of case results at driver speed.

Results are encoded first (`encode_cases`, outside any transaction, so the write lock
is held only for the insert itself), then inserted with one executemany: the statement
is compiled once per dialect, rows go to the driver as plain tuples (or dicts for named
paramstyles) and only the document is wrapped per row, as the driver wants it. The
time is processed once per batch. Upserts, which are rare, keep the ordinary path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from operator import itemgetter
from typing import Any, Final

from sqlalchemy import Connection, Dialect, Float, insert, null

from assay.core.error_types import ErrorType
from assay.core.results import CaseResult
from assay.store._document import compact_document, encode_document
from assay.store.schema import case_results

# In table order, which is the order compiled INSERTs list them in.
CASE_COLUMNS = (
    "run_id",
    "eval_set_id",
    "case_id",
    "run_index",
    "status",
    "execution_state",
    "error_type",
    "latency_s",
    "created_at",
    "document",
)

EncodedCase = tuple[str, str, int, str, str, str | None, float | None, bytes]
"""One result ready to insert: CASE_COLUMNS from eval_set_id to latency_s, then the
JSON document (see `_document`)."""

STATUS: Final = 3
EXECUTION_STATE: Final = 4


def encode_case(result: CaseResult) -> EncodedCase:
    """The row for `result`, its document encoded (StoreError names the case)."""
    return (
        # "" rather than NULL, so the unique key applies to results without a set.
        result.eval_set_id or "",
        result.case_id,
        result.run_index,
        result.status._value_,
        result.execution_state._value_,
        None if result.error_type is None else ErrorType(result.error_type)._value_,
        result.latency_s,
        encode_document(result),
    )


def encode_cases(results: Iterable[CaseResult]) -> list[EncodedCase]:
    """`encode_case` for each result."""
    return [encode_case(r) for r in results]


def case_row(run_id: str, result: CaseResult, now: datetime) -> dict[str, Any]:
    """The row for `result` as SQLAlchemy binds it (the document column encodes it)."""
    return {
        "run_id": run_id,
        "eval_set_id": result.eval_set_id or "",
        "case_id": result.case_id,
        "run_index": result.run_index,
        "status": result.status.value,
        "execution_state": result.execution_state.value,
        "error_type": None if result.error_type is None else ErrorType(result.error_type).value,
        "latency_s": result.latency_s,
        "created_at": now,
        "document": compact_document(result),
    }


def _sqlite_document(encoded: bytes) -> str:
    return encoded.decode()


def _jsonb_document() -> Callable[[bytes], Any]:
    # psycopg's Jsonb wrapper sends the value typed as jsonb; the identity "dumps"
    # hands it the bytes already encoded.
    from psycopg.types.json import Jsonb

    def as_jsonb(encoded: bytes) -> Any:
        return Jsonb(encoded, dumps=_identity)

    return as_jsonb


def _identity(encoded: bytes) -> bytes:
    return encoded


# Columns written as a NULL literal when None: sqlite3 sends every None parameter
# through its adapter lookup, which raises and clears two AttributeErrors (~3.5k CPU
# instructions each, as much as a third of a row's SQLite insert). Rows are written
# with the statement for their pattern of NULLs, consecutive runs of one pattern per
# executemany, so rows keep their order.
_NULLABLE = ("error_type", "latency_s")
_NULLABLE_AT = tuple(CASE_COLUMNS.index(name) for name in _NULLABLE)


# On SQLite, rows go in multi-row INSERTs of up to this many rows rather than an
# executemany: sqlite3 resets and rebinds its statement for each row of an executemany,
# which costs about a quarter of the insert. 64 rows of at most 10 parameters stay under
# the 999 bound parameters the oldest SQLite builds allow.
_ROWS_PER_INSERT = 64


@dataclass(frozen=True, slots=True)
class _Plan:
    sql: str
    # The values bound, picked from a CASE_COLUMNS-ordered row in statement order.
    pick: Callable[[tuple[Any, ...]], tuple[Any, ...]]
    names: tuple[str, ...] | None  # bind names for named paramstyles, else None
    # "INSERT ... VALUES " and one row's "(?, ..., NULL, ?)" for multi-row INSERTs;
    # None where rows go one per executemany row (PostgreSQL: psycopg pipelines them).
    head: str | None
    values: str | None
    # Multi-row statements by row count.
    multi: dict[int, str]


@dataclass(frozen=True, slots=True)
class _Dialect:
    created_at: Callable[[Any], Any] | None
    document: Callable[[bytes], Any]
    # Other columns whose type processes bound values (none on SQLite and psycopg).
    per_row: tuple[tuple[int, Callable[[Any], Any]], ...]


_plans: dict[tuple[str, str, str, tuple[bool, ...]], _Plan] = {}
_dialects: dict[tuple[str, str, str], _Dialect] = {}


def _dialect_key(dialect: Dialect) -> tuple[str, str, str]:
    return (dialect.name, dialect.driver, dialect.paramstyle)


def _for_dialect(dialect: Dialect) -> _Dialect:
    found = _dialects.get(_dialect_key(dialect))
    if found is not None:
        return found
    processors = {
        name: case_results.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        for name in CASE_COLUMNS
    }
    found = _Dialect(
        created_at=processors["created_at"],
        document=_jsonb_document() if dialect.name == "postgresql" else _sqlite_document,
        per_row=tuple(
            (i, processors[name])  # type: ignore[misc]
            for i, name in enumerate(CASE_COLUMNS)
            if processors[name] is not None
            and name not in ("created_at", "document")
            and not _stored_as_given(dialect, name)
        ),
    )
    _dialects[_dialect_key(dialect)] = found
    return found


def _stored_as_given(dialect: Dialect, name: str) -> bool:
    """Whether SQLite stores the column's values as its bind processor would make them:
    a FLOAT column has REAL affinity, so SQLite itself stores an int or a numeric string
    as the float that SQLAlchemy's `float(value)` would bind (one call per row saved)."""
    return dialect.name == "sqlite" and isinstance(case_results.c[name].type, Float)


def _plan(dialect: Dialect, nulls: tuple[bool, ...]) -> _Plan:
    key = (*_dialect_key(dialect), nulls)
    plan = _plans.get(key)
    if plan is not None:
        return plan
    literal = [name for name, is_null in zip(_NULLABLE, nulls, strict=True) if is_null]
    bound = [name for name in CASE_COLUMNS if name not in literal]
    stmt = insert(case_results).values({name: null() for name in literal})
    compiled = stmt.compile(dialect=dialect, column_keys=bound)
    positions = compiled.positiontup
    in_order = bound if positions is None else list(positions)
    head = values = None
    if dialect.name == "sqlite":
        head, _, values = compiled.string.partition(" VALUES ")
        head += " VALUES "
    plan = _Plan(
        sql=compiled.string,
        pick=itemgetter(*(CASE_COLUMNS.index(name) for name in in_order)),
        names=None if positions is not None else tuple(in_order),
        head=head,
        values=values,
        multi={},
    )
    _plans[key] = plan
    return plan


def insert_encoded(
    conn: Connection, run_id: str, encoded: Sequence[EncodedCase], now: datetime
) -> None:
    """INSERT one row per encoded result, one executemany per run of rows with the
    same NULL columns (usually one for the whole batch)."""
    dialect = conn.dialect
    spec = _for_dialect(dialect)
    when = spec.created_at(now) if spec.created_at is not None else now
    document = spec.document
    group: list[tuple[Any, ...]] = []
    group_nulls: tuple[bool, ...] | None = None
    for e in encoded:
        row = (run_id, *e[:7], when, document(e[7]))
        nulls = (row[_NULLABLE_AT[0]] is None, row[_NULLABLE_AT[1]] is None)
        if nulls != group_nulls:
            if group_nulls is not None:
                _execute(conn, _plan(dialect, group_nulls), spec, group)
            group, group_nulls = [], nulls
        group.append(row)
    if group_nulls is not None:
        _execute(conn, _plan(dialect, group_nulls), spec, group)


def _execute(conn: Connection, plan: _Plan, spec: _Dialect, rows: list[tuple[Any, ...]]) -> None:
    if spec.per_row:
        rows = [_processed(row, spec.per_row) for row in rows]
    pick = plan.pick
    if plan.head is not None:
        start = 0
        for size in _chunk_sizes(len(rows)):
            chunk = rows[start : start + size]
            start += size
            conn.exec_driver_sql(
                _multi_sql(plan, size), tuple(chain.from_iterable(map(pick, chunk)))
            )
        return
    params: list[Any] = [pick(row) for row in rows]
    if plan.names is not None:
        names = plan.names
        params = [dict(zip(names, values, strict=True)) for values in params]
    conn.exec_driver_sql(plan.sql, params)


def _chunk_sizes(count: int) -> list[int]:
    """Full chunks, then powers of two: few distinct statements for the driver to cache."""
    sizes = [_ROWS_PER_INSERT] * (count // _ROWS_PER_INSERT)
    rest = count % _ROWS_PER_INSERT
    size = _ROWS_PER_INSERT
    while rest:
        size //= 2
        if rest >= size:
            sizes.append(size)
            rest -= size
    return sizes


def _multi_sql(plan: _Plan, rows: int) -> str:
    sql = plan.multi.get(rows)
    if sql is None:
        assert plan.head is not None and plan.values is not None
        sql = plan.multi[rows] = plan.head + ", ".join([plan.values] * rows)
    return sql


def _processed(
    row: tuple[object, ...], processors: tuple[tuple[int, Callable[[Any], Any]], ...]
) -> tuple[Any, ...]:
    values = list(row)
    for i, process in processors:
        values[i] = process(values[i])
    return tuple(values)
