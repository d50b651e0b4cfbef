"""Store test fixtures: a throwaway PostgreSQL server, and a store on each backend.

Every test taking `store` or `store_url` runs twice, on an SQLite file and on a real
PostgreSQL database (see postgres_server.py, which defines those fixtures). Missing
PostgreSQL binaries fail those tests with the command to install them, unless
ASSAY_SKIP_POSTGRES=1 is set.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from postgres_server import (
    PostgresServer,
    _shared_postgres_database,
    postgres_server,
    store,
    store_url,
)

__all__ = ["_shared_postgres_database", "postgres_server", "store", "store_url"]


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty PostgreSQL database (no schema yet) for one test."""
    name = postgres_server.create_database()
    yield postgres_server.url(name)
    postgres_server.drop_database(name)
