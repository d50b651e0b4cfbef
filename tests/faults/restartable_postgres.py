"""A PostgreSQL server of one test's own, which the test can stop and start again.

The shared session server of tests/store/postgres_server.py must stay up for every
other test, so the database-restart scenario starts its own from the same binaries,
on a port it keeps across restarts (clients reconnect to the same URL).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from postgres_server import (
    DB_USER,
    _free_port,
    _run,
    _server_owner,
    require_bindir,
    require_driver,
)


class RestartablePostgres:
    """initdb once; `start()` / `stop()` as often as needed, always on `port`."""

    def __init__(self, bindir: Path, base: Path) -> None:
        self.bindir = bindir
        self.base = base
        self.data = base / "data"
        self.owner = _server_owner()
        self.port = _free_port()
        self.running = False
        _run(
            [str(bindir / "initdb"), "-D", str(self.data), "-U", DB_USER, "--auth=trust",
             "-E", "UTF8", "--locale=C", "--no-sync"],
            self.owner,
            base,
        )  # fmt: skip

    def url(self, database: str) -> str:
        return f"postgresql://{DB_USER}@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off"
        _run(
            [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.base / "log"),
             "-w", "-t", "60", "-o", options, "start"],
            self.owner,
            self.base,
        )  # fmt: skip
        self.running = True

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server; "immediate" drops every connection as a crash would."""
        _run(
            [str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"],
            self.owner,
            self.base,
        )
        self.running = False

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=DB_USER, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        return self.url(name)


@contextmanager
def restartable_postgres() -> Iterator[RestartablePostgres]:
    bindir = require_bindir()
    require_driver()
    base = Path(tempfile.mkdtemp(prefix="assay-pg-restart-"))
    owner = _server_owner()
    if owner is not None:
        import os

        os.chown(base, owner.pw_uid, owner.pw_gid)
    server = RestartablePostgres(bindir, base)
    server.start()
    try:
        yield server
    finally:
        if server.running:
            server.stop()
        shutil.rmtree(base, ignore_errors=True)
