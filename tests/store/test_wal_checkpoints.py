"""`Store.checkpointing()`: while a pool's workers write a SQLite store, a thread of the
reports' process copies their commits from the WAL into the database file
(`connect.wal_checkpoints`), so the writers' own checkpoints find little to do; nothing
runs for PostgreSQL or a store in memory."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from assay.store import Store

THREAD = "assay-wal-checkpoints"


def _threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == THREAD]


def test_another_connections_commits_are_checkpointed(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    store = Store.open(f"sqlite:///{db}")
    # Another process's writer, as a worker is: its own checkpoints off, so only the
    # thread can move its pages into the database file.
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE scratch (blob BLOB)")
    before = db.stat().st_size
    try:
        with store.checkpointing():
            assert _threads() == [THREAD]
            for _ in range(40):
                writer.execute("INSERT INTO scratch VALUES (randomblob(50000))")
            deadline = time.monotonic() + 60
            while db.stat().st_size < before + 40 * 50_000 and time.monotonic() < deadline:
                time.sleep(0.02)
            grown = db.stat().st_size - before
        assert grown >= 40 * 50_000, "the WAL's pages were copied into the database file"
        assert _threads() == [], "the thread ends with the block"
        count = writer.execute("SELECT count(*) FROM scratch").fetchone()[0]
        assert count == 40
    finally:
        writer.close()
        store.close()


def test_nothing_runs_for_a_store_in_memory() -> None:
    with Store.open("sqlite://") as store, store.checkpointing():
        assert _threads() == []


def test_nothing_runs_for_postgresql(store: Store) -> None:
    """`store` is a SQLite file and a PostgreSQL database in turn (conftest)."""
    with store.checkpointing():
        running = _threads()
    assert running == ([THREAD] if store.engine.url.get_backend_name() == "sqlite" else [])
