"""Batch insert of case results at driver speed.

SQLAlchemy's executemany builds and processes a parameter dict per row, about as
costly as the insert itself; here the statement is compiled once per dialect, values
go to the driver as plain tuples (or dicts for named paramstyles), and only the
columns whose type needs it (the JSON document) are processed per row. The time is
processed once per batch. Upserts, which are rare, keep the ordinary path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Dialect, insert

from assay.errors import StoreError
from assay.model.results import CaseResult
from assay.store._json import case_result_document
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
_CREATED_AT = CASE_COLUMNS.index("created_at")


def is_error(result: CaseResult) -> bool:
    """Whether the case run failed to execute (CES executionState ERROR)."""
    return result.error is not None or result.failure


def case_values(run_id: str, result: CaseResult, now: datetime) -> tuple[Any, ...]:
    """The row for `result`, in CASE_COLUMNS order, as Python values."""
    return (
        run_id,
        # "" rather than NULL, so the unique key applies to results without a set.
        result.eval_set_id or "",
        result.case_id,
        result.run_index,
        result.status.value,
        "ERROR" if is_error(result) else "COMPLETED",
        result.error_type,
        result.latency_s,
        now,
        # Encoded once, by the document column's type.
        case_result_document(result),
    )


@dataclass(frozen=True, slots=True)
class _Plan:
    sql: str
    names: tuple[str, ...] | None  # bind names for named paramstyles, else None
    order: tuple[int, ...] | None  # positional order when it differs from CASE_COLUMNS
    created_at: Callable[[Any], Any] | None
    per_row: tuple[tuple[int, Callable[[Any], Any]], ...]


_plans: dict[tuple[str, str, str], _Plan] = {}


def _plan(dialect: Dialect) -> _Plan:
    key = (dialect.name, dialect.driver, dialect.paramstyle)
    plan = _plans.get(key)
    if plan is not None:
        return plan
    compiled = insert(case_results).compile(dialect=dialect, column_keys=list(CASE_COLUMNS))
    positions = compiled.positiontup
    order: tuple[int, ...] | None = None
    if positions is not None and tuple(positions) != CASE_COLUMNS:
        order = tuple(CASE_COLUMNS.index(name) for name in positions)
    processors = [
        case_results.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        for name in CASE_COLUMNS
    ]
    plan = _Plan(
        sql=compiled.string,
        names=None if positions is not None else CASE_COLUMNS,
        order=order,
        created_at=processors[_CREATED_AT],
        per_row=tuple(
            (i, p) for i, p in enumerate(processors) if p is not None and i != _CREATED_AT
        ),
    )
    _plans[key] = plan
    return plan


def insert_case_results(
    conn: Connection, run_id: str, results: Sequence[CaseResult], now: datetime
) -> None:
    """INSERT one row per result with a single executemany."""
    plan = _plan(conn.dialect)
    when = plan.created_at(now) if plan.created_at is not None else now
    rows: list[Any] = []
    for result in results:
        row = list(case_values(run_id, result, when))
        try:
            for i, process in plan.per_row:
                row[i] = process(row[i])
        except StoreError as exc:
            raise StoreError(f"result of case {result.case_id!r}: {exc}") from exc
        if plan.names is not None:
            rows.append(dict(zip(plan.names, row, strict=True)))
        elif plan.order is not None:
            rows.append(tuple(row[i] for i in plan.order))
        else:
            rows.append(tuple(row))
    conn.exec_driver_sql(plan.sql, rows)
