"""Store URLs, SQLite setup and open errors."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from assay.errors import StoreError
from assay.store import Store, default_url, resolve_url
from assay.store.connect import SQLITE_BUSY_TIMEOUT_S, SQLITE_PAGE_SIZE, mask_url


def test_default_url_is_assay_folder_in_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_url() == f"sqlite:///{tmp_path.resolve()}/.assay/assay.db"
    with Store.open() as store:
        store.start_run(eval_set_ids=["s"], metrics=[], config={}, agent=None, runs=1)
    assert (tmp_path / ".assay" / "assay.db").is_file()


def test_relative_sqlite_path_is_under_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Store.open("sqlite:///results/nested/runs.db"):
        pass
    assert (tmp_path / "results" / "nested" / "runs.db").is_file()


@pytest.mark.parametrize(
    ("url", "drivername"),
    [
        ("postgresql://u:p@db.example:5432/assay", "postgresql+psycopg"),
        ("postgresql+psycopg://u@db.example/assay", "postgresql+psycopg"),
        ("postgres://u@db.example/assay", "postgresql+psycopg"),
        ("sqlite:////tmp/x.db", "sqlite"),
        ("sqlite+pysqlite:///x.db", "sqlite"),
        ("sqlite://", "sqlite"),
    ],
)
def test_accepted_urls_are_normalised(url: str, drivername: str) -> None:
    assert resolve_url(url).drivername == drivername


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("results.db", "is not a database URL; use sqlite:///"),
        ("mysql://u@h/db", "unsupported database 'mysql'"),
        ("postgresql+psycopg2://u@h/db", "driver 'psycopg2' is not supported"),
        ("postgresql://u@h", "names no database"),
        ("sqlite+aiosqlite:///x.db", "SQLite driver 'aiosqlite' is not supported"),
        ("postgresql://u@h:notaport/db", "malformed"),
    ],
)
def test_bad_urls_are_store_errors(url: str, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        Store.open(url)


def test_password_never_appears_in_messages() -> None:
    assert mask_url("postgresql://alice:s3cret@h/db") == "postgresql://alice:***@h/db"
    with pytest.raises(StoreError) as info:
        Store.open("mysql://alice:s3cret@h/db")
    assert "s3cret" not in str(info.value)
    assert "alice:***@" in str(info.value)


def test_missing_psycopg_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry in sys.modules makes `import psycopg` raise ImportError.
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StoreError, match=r"pip install -e '\.\[postgres\]'"):
        Store.open("postgresql://u@127.0.0.1/db")


def test_unreachable_postgres_is_a_store_error() -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(
        StoreError,
        match=rf"cannot open the store at postgresql\+psycopg://u:\*\*\*@127.0.0.1:{port}/db",
    ):
        Store.open(f"postgresql://u:pw@127.0.0.1:{port}/db")


def test_folder_that_cannot_be_created_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError, match="cannot create the store folder"):
        Store.open(f"sqlite:///{blocker}/sub/assay.db")


def test_database_path_that_is_a_folder_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open the store at sqlite:///"):
        Store.open(f"sqlite:///{tmp_path}")


def test_not_a_database_file_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are notes, not a database\n" * 100)
    with pytest.raises(StoreError, match="file is not a database"):
        Store.open(f"sqlite:///{path}")


def test_sqlite_uses_wal_busy_timeout_and_foreign_keys(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path}/a.db") as store, store.engine.connect() as conn:
        pragma = conn.exec_driver_sql
        assert pragma("PRAGMA journal_mode").scalar() == "wal"
        assert pragma("PRAGMA busy_timeout").scalar() == int(SQLITE_BUSY_TIMEOUT_S * 1000)
        assert pragma("PRAGMA foreign_keys").scalar() == 1
        assert pragma("PRAGMA page_size").scalar() == SQLITE_PAGE_SIZE
    # WAL is a property of the file: a plain sqlite3 connection sees it too.
    raw = sqlite3.connect(tmp_path / "a.db")
    assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    raw.close()


def test_in_memory_store_works_across_calls() -> None:
    with Store.open("sqlite://") as store:
        run_id = store.start_run(eval_set_ids=["s"], metrics=[], config={}, agent=None, runs=1)
        assert store.get_run(run_id).status == "RUNNING"


def test_store_url_hides_password_and_repr_names_it(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path}/a.db") as store:
        assert store.url == f"sqlite:///{tmp_path}/a.db"
        assert repr(store) == f"Store('sqlite:///{tmp_path}/a.db')"


def test_readers_are_not_blocked_by_a_writer(tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path}/a.db") as store:
        run_id = store.start_run(eval_set_ids=["s"], metrics=[], config={}, agent=None, runs=1)
        writer = store.engine.execution_options(assay_write=True)
        with writer.begin() as conn:
            conn.exec_driver_sql("UPDATE runs SET name = 'in progress'")
            # Another connection reads the last committed state meanwhile (WAL).
            assert store.get_run(run_id).name is None
        assert store.get_run(run_id).name == "in progress"
