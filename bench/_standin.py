"""The stand-in server (`assay.testing.JudgeServer`) in a child process, for the benches.

In its own process its threads do not compete with the bench's client for the GIL, as
a real endpoint would not. `ServerProcess(make_script, *args)` serves the script
`make_script(*args)` (both sent to a "spawn" child, so module-level and picklable).
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from assay.testing import JudgeServer


def _serve(conn: Connection, make_script: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """The stand-in server in its own process, answering `count` / `stop` messages."""
    with JudgeServer(make_script(*args)) as server:
        conn.send(server.openai_base_url)
        while conn.recv() != "stop":
            conn.send((len(server.requests), server.errors[:3]))


class ServerProcess:
    """The stand-in in a child process; `requests()` asks how many it served."""

    def __init__(self, make_script: Callable[..., Any], *args: Any) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, make_script, args), daemon=True)
        self.base_url = ""

    def __enter__(self) -> ServerProcess:
        self._process.start()
        self.base_url = self._conn.recv()
        return self

    def requests(self) -> int:
        """Requests served so far; exits on server-side errors."""
        self._conn.send("count")
        count, errors = self._conn.recv()
        if errors:
            sys.exit(f"stand-in server errors: {errors}")
        return int(count)

    def __exit__(self, *exc: object) -> None:
        self._conn.send("stop")
        self._process.join(10)
        if self._process.is_alive():
            self._process.terminate()
