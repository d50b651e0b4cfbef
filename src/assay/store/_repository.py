"""Base of the store's repositories: engine access and database-error translation."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy import Connection, Engine, Table
from sqlalchemy.exc import SQLAlchemyError

from assay.errors import StoreError
from assay.store.connect import WRITE
from assay.store.exceptions import StoreUnavailableError, unavailable

P = ParamSpec("P")
R = TypeVar("R")
RepositoryT = TypeVar("RepositoryT", bound="Repository")


class Repository:
    """Holds the engine, plus a view of it whose transactions take the write lock."""

    def __init__(self, engine: Engine, url: str) -> None:
        self._engine = engine
        self._writer = engine.execution_options(**WRITE)
        self.url = url


def database_errors(
    method: Callable[Concatenate[RepositoryT, P], R],
) -> Callable[Concatenate[RepositoryT, P], R]:
    """Report driver errors (locked database, lost connection, ...) as StoreError."""

    @functools.wraps(method)
    def wrapper(self: RepositoryT, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except SQLAlchemyError as exc:
            orig = getattr(exc, "orig", None)
            reason = str(orig if orig is not None else exc).strip()
            if unavailable(exc, self._engine.dialect.name):
                raise StoreUnavailableError(f"store {self.url} is unavailable: {reason}") from exc
            raise StoreError(f"store {self.url}: {reason}") from exc

    return wrapper


def upsert_insert(conn: Connection, table: Table) -> Any:
    """An INSERT into `table` in `conn`'s dialect, which can take `on_conflict_do_update`
    (PostgreSQL's or SQLite's; the PostgreSQL dialect's package, slow to import, is
    loaded only for a PostgreSQL store)."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table)
