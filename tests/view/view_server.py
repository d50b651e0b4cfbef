"""Helpers of the viewer's browser tests: runs made with the CLI, an app served on
loopback by uvicorn in a thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from typer.testing import CliRunner

from assay.cli import app
from assay.store import Store

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "home_automation" / "home.evalset.json"


def eval_run(store: str, agent: str, *, name: str | None = None) -> str:
    """Run the home-automation example against `agent` into `store`; the run's id."""
    args = ["eval", str(EXAMPLE), "--agent", agent, "--store", store]
    if name:
        args += ["--name", name]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output  # the example has deliberate failures
    with Store.open(store) as db:
        return db.list_runs(limit=1)[0].id


@contextmanager
def serving(asgi: Any) -> Iterator[str]:
    """`asgi` served on a free port of 127.0.0.1; yields its base URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning")
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not instance.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        instance.should_exit = True
        thread.join(timeout=20)
