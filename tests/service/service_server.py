"""A real uvicorn server running the service in a thread, for the service tests."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from assay.agents.base import Agent
from assay.service.app import create_app
from assay.store import Store

STARTUP_TIMEOUT_S = 20.0


@dataclass
class RunningServer:
    """A service listening on `base_url` (http://127.0.0.1:PORT), backed by `store`."""

    base_url: str
    store: Store
    _server: uvicorn.Server
    _thread: threading.Thread

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=STARTUP_TIMEOUT_S)


def create_key(store: Store, name: str = "test") -> str:
    """A new API key in `store`; the secret a client sends as `Authorization: Bearer`."""
    _info, secret = store.api_keys.create(name)
    return secret


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve(
    store: Store,
    *,
    auth: bool = True,
    agent: Agent | None = None,
    max_body_bytes: int = 4_000_000,
    files_root: Path | None = None,
    **options: Any,
) -> RunningServer:
    """`options`: more keywords of `create_app` (judge_model, judge_budget, ...)."""
    app = create_app(
        store,
        auth=auth,
        agent=agent,
        max_body_bytes=max_body_bytes,
        files_root=files_root,
        **options,
    )
    config = uvicorn.Config(
        app, host="127.0.0.1", port=_free_port(), log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="assay-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            pytest.fail("the test service did not start (see the captured log)", pytrace=False)
        time.sleep(0.01)
    return RunningServer(f"http://127.0.0.1:{config.port}", store, server, thread)
