"""Store errors precise enough for the REST service to map to status codes."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from assay.errors import StoreError


class RunNotFoundError(StoreError):
    """No run has the given id (or the reference matched none)."""


class DuplicateCaseResultError(StoreError):
    """A case run (run, eval set, case, run index) is already stored."""


class ResourceNotFoundError(StoreError):
    """No evaluation/dataset/persona has the given id in the app."""


class ResourceConflictError(StoreError):
    """The id or the display name is already taken in the app."""


class StoreUnavailableError(StoreError):
    """The database cannot be reached now (connection refused or dropped, a locked
    SQLite file): retrying later may succeed, unlike the other store errors."""


def store_unavailable(exc: BaseException) -> bool:
    """Whether `exc`, or an error it was raised from, is a `StoreUnavailableError`."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        if isinstance(found, StoreUnavailableError):
            return True
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return False


class EtagMismatchError(StoreError):
    """An update carried an etag that is no longer current (a concurrent change)."""


def unavailable(exc: SQLAlchemyError, dialect: str) -> bool:
    """Whether `exc` says the database is out of reach for now, not that the request or
    the schema is wrong: a lost or refused connection (PostgreSQL's OperationalError is
    that: the server went away, restarts, refuses connections), an exhausted pool, or a
    SQLite file locked by another writer. SQLite's other OperationalErrors (no such
    table, ...) are not transient."""
    if isinstance(exc, PoolTimeoutError):
        return True
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, OperationalError | InterfaceError):
        if dialect != "sqlite":
            return True
        reason = str(exc.orig if exc.orig is not None else exc).lower()
        return "locked" in reason or "busy" in reason
    return False
