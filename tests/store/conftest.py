"""Store test fixtures: a throwaway PostgreSQL server, and a store on each backend.

Every test taking `store` or `store_url` runs twice, on an SQLite file and on a real
PostgreSQL database (see postgres_server.py). Missing PostgreSQL binaries fail those
tests with the command to install them, unless ASSAY_SKIP_POSTGRES=1 is set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import PostgresServer, require_bindir, require_driver, running_server

from assay.store import Store
from assay.store.schema import metadata


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One server for the whole session, stopped at the end."""
    bindir = require_bindir()
    require_driver()
    with running_server(bindir) as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty PostgreSQL database (no schema yet) for one test."""
    name = postgres_server.create_database()
    yield postgres_server.url(name)
    postgres_server.drop_database(name)


@pytest.fixture(scope="session")
def _shared_postgres_database(postgres_server: PostgresServer) -> str:
    # CREATE DATABASE takes ~0.3 s; tests that only need an empty store share one
    # migrated database and have its tables emptied instead.
    name = postgres_server.create_database()
    Store.open(postgres_server.url(name)).close()
    return name


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a store holding no data, on each backend in turn."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store' / 'assay.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name: str = request.getfixturevalue("_shared_postgres_database")
    tables = ", ".join(t.name for t in metadata.sorted_tables)
    server.admin(f"TRUNCATE {tables} RESTART IDENTITY CASCADE", database=name)
    return server.url(name)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """An opened store on each backend in turn."""
    opened = Store.open(store_url)
    yield opened
    opened.close()
