"""A store that cannot be reached says so (StoreUnavailableError: retry later), distinct
from a store that refuses a request (StoreError), so the service answers 503, not 500,
and a run is left resumable instead of failed (tests/faults/test_database_restart.py
drives the whole path against a restarted PostgreSQL server)."""

from __future__ import annotations

import socket
import sqlite3

import pytest
from sqlalchemy.exc import OperationalError

from assay.errors import StoreError
from assay.store import Store
from assay.store.exceptions import StoreUnavailableError, store_unavailable, unavailable


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # nothing listens on it once the socket is closed


def test_a_postgresql_server_that_is_not_there_is_unavailable() -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql://assay@127.0.0.1:{_closed_port()}/nothing"
    with pytest.raises(StoreUnavailableError, match=r"cannot open the store at .* now"):
        Store.open(url)


def test_which_driver_errors_are_transient() -> None:
    def error(message: str) -> OperationalError:
        return OperationalError("SELECT 1", {}, sqlite3.OperationalError(message))

    assert unavailable(error("database is locked"), "sqlite")
    assert not unavailable(error("no such table: runs"), "sqlite")
    assert unavailable(error("connection refused"), "postgresql")


def test_store_unavailable_looks_through_the_cause_chain() -> None:
    try:
        try:
            raise StoreUnavailableError("store x is unavailable: connection refused")
        except StoreUnavailableError as exc:
            raise RuntimeError("the recorder failed") from exc
    except RuntimeError as outer:
        assert store_unavailable(outer)
    assert not store_unavailable(StoreError("no such run"))
