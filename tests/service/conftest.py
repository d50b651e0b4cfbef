"""Service test fixtures: a real uvicorn server on a loopback port, on each store backend.

- `store_url` / `store`: an empty store, on SQLite and on a real PostgreSQL server
  (tests/store/postgres_server.py; ASSAY_SKIP_POSTGRES=1 skips the PostgreSQL half).
- `start_server(store, auth=True, agent=None, max_body_bytes=...)`: starts
  `create_app(...)` under uvicorn in a thread on a free 127.0.0.1 port; stopped at the
  end of the test. `server` is one started on `store` with auth on.
- `api_key`: a valid key in `store`; `client`: an httpx client on `server` sending it.
- `create_key(store, name)` and `RunningServer` live in service_server.py (import them
  from there, not from this conftest).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))

from postgres_server import (
    PostgresServer,
    require_bindir,
    require_driver,
    running_server,
)
from service_server import RunningServer, create_key, serve

from assay.agents.base import Agent
from assay.store import Store
from assay.store.schema import metadata


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the service tests, stopped at the end."""
    bindir = require_bindir()
    require_driver()
    with running_server(bindir) as pg:
        yield pg


@pytest.fixture(scope="session")
def _service_postgres_database(postgres_server: PostgresServer) -> str:
    # One migrated database emptied before each test: CREATE DATABASE is slow.
    name = postgres_server.create_database()
    Store.open(postgres_server.url(name)).close()
    return name


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty store, on each backend in turn."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store' / 'assay.db'}"
    pg: PostgresServer = request.getfixturevalue("postgres_server")
    name: str = request.getfixturevalue("_service_postgres_database")
    tables = ", ".join(t.name for t in metadata.sorted_tables)
    pg.admin(f"TRUNCATE {tables} RESTART IDENTITY CASCADE", database=name)
    return pg.url(name)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """An opened, empty store on each backend in turn."""
    opened = Store.open(store_url)
    yield opened
    opened.close()


@pytest.fixture
def start_server() -> Iterator[Callable[..., RunningServer]]:
    """Start services (`start_server(store, auth=..., agent=...)`), all stopped at the end."""
    started: list[RunningServer] = []

    def start(
        store: Store,
        *,
        auth: bool = True,
        agent: Agent | None = None,
        max_body_bytes: int = 4_000_000,
    ) -> RunningServer:
        running = serve(store, auth=auth, agent=agent, max_body_bytes=max_body_bytes)
        started.append(running)
        return running

    yield start
    for running in reversed(started):
        running.stop()


@pytest.fixture
def server(store: Store, start_server: Callable[..., RunningServer]) -> RunningServer:
    """A service with auth on, backed by `store`."""
    return start_server(store)


@pytest.fixture
def api_key(store: Store) -> str:
    """A valid API key in `store`."""
    return create_key(store, "pytest")


@pytest.fixture
def client(server: RunningServer, api_key: str) -> Iterator[httpx.Client]:
    """An HTTP client on `server` that authenticates with `api_key`."""
    with httpx.Client(
        base_url=server.base_url,
        headers={"Authorization": f"Bearer {api_key}"},
        timeout=30.0,
    ) as http:
        yield http
