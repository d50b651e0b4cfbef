"""Store URLs, engines and schema migrations.

Accepted URLs: `sqlite:///path/to/file.db` (relative to the working directory;
`sqlite:////abs/path.db` for an absolute one), `sqlite://` for an in-memory store,
and `postgresql://`, `postgresql+psycopg://` or `postgres://` URLs, all served by the
psycopg 3 driver (`pip install -e '.[postgres]'`).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import URL, Connection, Engine, create_engine, event, make_url, text
from sqlalchemy.exc import ArgumentError, OperationalError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from assay.errors import StoreError
from assay.store._json import loads
from assay.store._write_queue import QueuedConnection, WriteQueue, attach, queue_for
from assay.store.exceptions import StoreUnavailableError, unavailable

if TYPE_CHECKING:
    from alembic.config import Config

DEFAULT_DIR = ".assay"
DEFAULT_FILE = "assay.db"
# How long a writer waits for another process's lock before failing.
SQLITE_BUSY_TIMEOUT_S = 30.0
SQLITE_PAGE_SIZE = 16384
# Connections kept open per engine. The service answers requests from a pool of worker
# threads; with SQLAlchemy's default (5 kept + 10 overflow) busy servers waited for a
# connection or opened and closed overflow ones, re-running the PRAGMAs each time.
POOL_SIZE = 16
POOL_OVERFLOW = 32
# The newest migration (store/migrations/versions/): a store already at it is opened
# without loading Alembic and its scripts (a cost every `assay` command paid). A test
# holds it to Alembic's own head.
SCHEMA_HEAD = "0009"
# pg_advisory_xact_lock key serialising concurrent migrations ("assay" in ASCII).
_MIGRATION_LOCK_KEY = 0x6173736179
# Execution option marking write transactions, which take SQLite's write lock up front.
WRITE = {"assay_write": True}

_EXAMPLES = "sqlite:///path/to/assay.db or postgresql://user:password@host:5432/database"
_POSTGRES_DRIVER_HINT = (
    "PostgreSQL store URLs need the psycopg 3 driver, which is not installed; "
    "run: pip install -e '.[postgres]' (or pip install 'psycopg[binary]')"
)


def default_url(cwd: Path | None = None) -> str:
    """The SQLite file `.assay/assay.db` under `cwd` (default: the working directory)."""
    base = (cwd or Path.cwd()).resolve()
    return f"sqlite:///{base / DEFAULT_DIR / DEFAULT_FILE}"


def mask_url(url: str) -> str:
    """`url` with any password replaced by `***`, for messages."""
    return re.sub(r"(://[^/:@]*:)[^@/]*@", r"\1***@", url)


def resolve_url(url: str | None) -> URL:
    """Parse and normalise a store URL (None: the default SQLite file).

    Raises StoreError naming the accepted forms when the URL is not one of them.
    """
    raw = default_url() if url is None else url.strip()
    shown = mask_url(raw)
    if "://" not in raw:
        raise StoreError(f"store URL {shown!r} is not a database URL; use {_EXAMPLES}")
    try:
        parsed = make_url(raw)
    except (ArgumentError, ValueError) as exc:
        raise StoreError(f"store URL {shown!r} is malformed ({exc}); use {_EXAMPLES}") from exc
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "sqlite":
        if driver not in ("", "pysqlite"):
            raise StoreError(
                f"store URL {shown!r}: SQLite driver {driver!r} is not supported; "
                "use sqlite:///path/to/assay.db"
            )
        return parsed.set(drivername="sqlite")
    if backend in ("postgresql", "postgres"):
        if driver not in ("", "psycopg"):
            raise StoreError(
                f"store URL {shown!r}: PostgreSQL driver {driver!r} is not supported; "
                "use postgresql:// or postgresql+psycopg:// (psycopg 3)"
            )
        if not parsed.database:
            raise StoreError(f"store URL {shown!r} names no database; use {_EXAMPLES}")
        return parsed.set(drivername="postgresql+psycopg")
    raise StoreError(
        f"store URL {shown!r}: unsupported database {backend!r}; "
        f"the store runs on SQLite or PostgreSQL, e.g. {_EXAMPLES}"
    )


def create_store_engine(url: URL) -> Engine:
    """An engine for a URL from `resolve_url`, configured for the store's access pattern."""
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    try:
        return create_engine(
            url,
            json_deserializer=loads,
            pool_pre_ping=True,
            pool_size=POOL_SIZE,
            max_overflow=POOL_OVERFLOW,
        )
    except ImportError as exc:
        raise StoreError(_POSTGRES_DRIVER_HINT) from exc


PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def _private_store_file(path: Path) -> None:
    """Create the store's folder (0700) and file (0600) when missing (issue #31).

    The store holds API-key hashes, the page-token signing key and every result: no
    other local user may read it, whatever the umask. SQLite gives its `-wal` and
    `-shm` files the database file's permissions, so they are 0600 too. Folders and
    files that already exist keep their permissions (a store shared on purpose stays
    shared; `chmod -R go= .assay` tightens an older one).
    """
    folder = path.parent
    try:
        folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the store folder {folder}: {exc}") from exc
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        os.close(os.open(path, flags, PRIVATE_FILE_MODE))
    except FileExistsError:
        return
    except OSError as exc:
        raise StoreError(f"cannot create the store file {path}: {exc}") from exc


def _sqlite_engine(url: URL) -> Engine:
    database = url.database or ""
    in_memory = database in ("", ":memory:")
    kwargs: dict[str, Any] = {}
    queue: WriteQueue | None = None
    if in_memory:
        # One shared connection: each new connection would be a new empty database.
        kwargs = {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
    else:
        if not database.startswith("file:"):
            _private_store_file(Path(database).expanduser().resolve())
            queue = queue_for(str(Path(database).expanduser().resolve()), SQLITE_BUSY_TIMEOUT_S)
        kwargs = {
            "connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_S, "factory": QueuedConnection},
            "pool_size": POOL_SIZE,
            "max_overflow": POOL_OVERFLOW,
        }
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control from the sqlite3 module (which would not wrap DDL
        # and cannot take the write lock up front); `_on_begin` issues BEGIN instead.
        dbapi_connection.isolation_level = None
        if queue is not None:
            attach(dbapi_connection, queue)
        cursor = dbapi_connection.cursor()
        if not in_memory:
            # Only takes effect while the file is new. Result documents are a few KB:
            # 16 KiB pages hold several per page instead of one per 4 KiB page, which
            # makes batch inserts faster and the file smaller (bench/README.md).
            cursor.execute(f"PRAGMA page_size={SQLITE_PAGE_SIZE}")
            # WAL lets readers (`assay runs`, the web UI) work while a run writes.
            _enable_wal(cursor)
            # In WAL mode NORMAL syncs at checkpoints, not at every commit: a power
            # loss can undo the last transactions but never corrupts the file, and a
            # crash of the process loses nothing committed.
            cursor.execute("PRAGMA synchronous=NORMAL")
        # Multi-row INSERTs (see `_bulk`) keep a statement journal, the original of
        # every page they change, in case one row fails: pages per row, written to a
        # temporary file by default. In memory it costs a copy instead of file writes.
        cursor.execute("PRAGMA temp_store=MEMORY")
        cursor.execute(f"PRAGMA busy_timeout={int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A deferred transaction that later writes can fail at once with "database is
        # locked" instead of waiting; writers therefore lock when they begin.
        # Writers to a file first take their turn in its write queue (`_write_queue`):
        # SQLite's busy handler alone let some wait seconds under steady writes.
        options = conn.get_execution_options()
        if options.get("isolation_level") == "AUTOCOMMIT":
            return  # each statement on its own (the judge cache's `CacheReader`)
        immediate = options.get("assay_write", False)
        if not immediate:
            conn.exec_driver_sql("BEGIN")
            return
        raw = conn.connection.driver_connection
        if isinstance(raw, QueuedConnection):
            try:
                raw.take_turn()
            except sqlite3.OperationalError as exc:
                # As SQLite's own "database is locked" would be: the store reports it as
                # unavailable for now (503 with Retry-After in the service).
                raise OperationalError("BEGIN IMMEDIATE", None, exc) from exc
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        except BaseException:
            if isinstance(raw, QueuedConnection):
                raw.give_turn()
            raise

    return engine


@contextlib.contextmanager
def wal_checkpoints(engine: Engine, interval: float = 0.1) -> Iterator[None]:
    """Checkpoint a SQLite file's WAL from a thread of this process while the block
    runs (nothing for PostgreSQL or a store in memory).

    A writer that commits past SQLite's 1,000 pages of WAL copies them into the
    database itself, with two syncs, in the middle of its own writes: a long stall
    every few batches of a pool's workers, each waiting for its turn to store
    (`WorkerWrites`). Checkpointed here every `interval` seconds ("PASSIVE": never
    waiting for, nor holding up, a writer), the pages are copied while the workers
    score, and a writer's own checkpoint finds little left to copy; it still resets the
    WAL, which stays small."""
    url = engine.url
    if url.get_backend_name() != "sqlite" or (url.database or "") in ("", ":memory:"):
        yield
        return
    stop = threading.Event()

    def checkpoint() -> None:
        try:
            raw = engine.raw_connection()  # outside any transaction: isolation_level None
        except Exception:
            return  # the writers' own checkpoints go on as ever
        try:
            while not stop.wait(interval):
                with contextlib.suppress(sqlite3.Error):
                    raw.driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()  # type: ignore[union-attr]
        finally:
            raw.close()

    thread = threading.Thread(target=checkpoint, name="assay-wal-checkpoints", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _enable_wal(cursor: Any) -> None:
    """Switch the file to WAL mode (it stays so), waiting out concurrent first opens.

    Changing the journal mode needs the file to itself; when several connections open
    a new file at once, SQLite reports "database is locked" at once instead of calling
    the busy handler (waiting could deadlock), so the switch is retried here.
    """
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_S
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def alembic_config(connection: Connection | None = None, url: str | None = None) -> Config:
    """An Alembic config for the migrations shipped in this package.

    Give `connection` to migrate through it, or `url` for Alembic commands that open
    their own (e.g. `alembic.command.revision(cfg, autogenerate=True)` in development).
    """
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", "assay.store:migrations")
    if url is not None:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def at_head(engine: Engine) -> bool:
    """Whether the store's schema is `SCHEMA_HEAD` (False when it cannot tell: the
    migration then decides, under its lock)."""
    try:
        with engine.connect() as conn:
            version = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except SQLAlchemyError:
        return False  # a new store (no table yet), or one that cannot be read now
    return version == [SCHEMA_HEAD]


def migrate(engine: Engine, shown_url: str) -> None:
    """Bring the schema to the newest revision (`alembic upgrade head`).

    Concurrent openers are serialised: SQLite's write lock (BEGIN IMMEDIATE) or a
    PostgreSQL advisory lock is held for the whole upgrade. A store already at
    `SCHEMA_HEAD` is left as it is without loading Alembic.
    """
    if at_head(engine):
        return
    sqlite = engine.dialect.name == "sqlite"
    try:
        with engine.connect() as conn:
            raw = conn.connection.driver_connection
            if sqlite and raw is not None:
                # Batch migrations rebuild tables; with foreign keys on, dropping the
                # old `runs` table would cascade-delete every case result.
                raw.execute("PRAGMA foreign_keys=OFF")
            try:
                conn.execution_options(**WRITE)
                with conn.begin():
                    if not sqlite:
                        conn.execute(
                            text("SELECT pg_advisory_xact_lock(:key)"),
                            {"key": _MIGRATION_LOCK_KEY},
                        )
                    if sqlite and _empty_sqlite(conn):
                        _create_at_head(conn)
                    else:
                        _upgrade(conn, shown_url)
            finally:
                if sqlite and raw is not None:
                    _foreign_keys_back_on(raw)
    except SQLAlchemyError as exc:
        if unavailable(exc, engine.dialect.name):
            raise StoreUnavailableError(
                f"cannot open the store at {shown_url} now: {_reason(exc)}"
            ) from exc
        raise StoreError(f"cannot open the store at {shown_url}: {_reason(exc)}") from exc


def _foreign_keys_back_on(raw: Any) -> None:
    """Foreign keys on again after a migration, on a connection still open: a Ctrl-C in
    the middle of the migration's commit makes SQLAlchemy close it, and the interrupt,
    not "Cannot operate on a closed database", is what the caller must see."""
    try:
        raw.execute("PRAGMA foreign_keys=ON")
    except sqlite3.ProgrammingError:
        if not _closed(raw):
            raise


def _closed(raw: Any) -> bool:
    try:
        raw.total_changes  # noqa: B018  (any use of a closed connection raises)
    except sqlite3.ProgrammingError:
        return True
    return False


def _upgrade(conn: Connection, shown_url: str) -> None:
    """`alembic upgrade head` on `conn`, inside the caller's transaction."""
    from alembic import command
    from alembic.util.exc import CommandError

    try:
        command.upgrade(alembic_config(conn), "head")
    except CommandError as exc:
        raise StoreError(
            f"cannot migrate the store at {shown_url}: {exc}; it was probably written by "
            "a newer version of assay, upgrade assay to use it"
        ) from exc


def _empty_sqlite(conn: Connection) -> bool:
    """Whether the SQLite database has no table at all (a new store), read under the
    migration's write lock."""
    return not conn.execute(text("SELECT 1 FROM sqlite_master WHERE type = 'table'")).first()


def _create_at_head(conn: Connection) -> None:
    """Create a new SQLite store's tables as `SCHEMA_HEAD` defines them, and record that
    revision as Alembic does, without loading Alembic and running every migration
    (most of a new store's first command). tests/store/test_schema_head.py holds the
    result to what the migrations make."""
    from assay.store.schema import metadata

    metadata.create_all(conn)
    conn.execute(
        text(
            "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
            "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
        )
    )
    conn.execute(text("INSERT INTO alembic_version (version_num) VALUES (:v)"), {"v": SCHEMA_HEAD})


def _reason(exc: SQLAlchemyError) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc).strip()
