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

from postgres_server import _shared_postgres_database, postgres_server, store, store_url
from service_server import RunningServer, create_key, serve

from assay.agents.base import Agent
from assay.store import Store

__all__ = ["_shared_postgres_database", "postgres_server", "store", "store_url"]


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
        files_root: Path | None = None,
    ) -> RunningServer:
        running = serve(
            store, auth=auth, agent=agent, max_body_bytes=max_body_bytes, files_root=files_root
        )
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
