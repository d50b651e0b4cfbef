"""A throwaway PostgreSQL server for the store and service tests, and their fixtures.

Started from the binaries under /usr/lib/postgresql/*/bin (or on PATH), in a temporary
folder, on a free loopback port, with trust authentication and durability off (it is
thrown away). PostgreSQL refuses to run as root, so as root it runs as `postgres`.

The fixtures at the end (`postgres_server`, `store_url`, `store`) are imported by
tests/store/conftest.py and tests/service/conftest.py; each conftest gets its own
session server.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from assay.store import Store
from assay.store.schema import metadata

SKIP_VARIABLE = "ASSAY_SKIP_POSTGRES"
SERVER_USER = "postgres"  # who runs the server when the tests run as root
DB_USER = "assay"
DEFAULT_ROOTS = (Path("/usr/lib/postgresql"),)


def find_bindir(roots: Sequence[Path] = DEFAULT_ROOTS, *, search_path: bool = True) -> Path | None:
    """The newest installation (ROOT/VERSION/bin) with initdb, pg_ctl and postgres."""
    candidates = [p for root in roots for p in root.glob("*/bin") if p.is_dir()]
    found = shutil.which("pg_ctl") if search_path else None
    if found:
        candidates.append(Path(found).parent)

    def version(path: Path) -> tuple[int, ...]:
        parts = path.parent.name.split(".")
        return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else (0,)

    for bindir in sorted(candidates, key=version, reverse=True):
        if all((bindir / tool).exists() for tool in ("initdb", "pg_ctl", "postgres")):
            return bindir
    return None


def require_bindir(roots: Sequence[Path] = DEFAULT_ROOTS, *, search_path: bool = True) -> Path:
    """The binaries, or a test failure saying how to install them (skip if opted out)."""
    bindir = find_bindir(roots, search_path=search_path)
    if bindir is not None:
        return bindir
    if os.environ.get(SKIP_VARIABLE) == "1":
        pytest.skip(f"PostgreSQL binaries not found and {SKIP_VARIABLE}=1")
    pytest.fail(
        "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found under "
        f"{', '.join(f'{r}/*/bin' for r in roots)} or on PATH; install them "
        "(Debian/Ubuntu: apt-get install -y postgresql) or set "
        f"{SKIP_VARIABLE}=1 to skip the PostgreSQL store tests",
        pytrace=False,
    )


def require_driver() -> None:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.fail(
            "the PostgreSQL store tests need the psycopg driver: "
            "pip install 'psycopg[binary]' (or pip install -e '.[dev]')",
            pytrace=False,
        )


def _server_owner() -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        pytest.fail(
            f"running as root, the PostgreSQL tests need a {SERVER_USER!r} user to run the "
            f"server as; create one (useradd -r {SERVER_USER}) or run the tests as non-root",
            pytrace=False,
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _run(cmd: list[str], owner: pwd.struct_passwd | None, cwd: Path) -> None:
    kwargs: dict[str, Any] = {}
    if owner is not None:
        kwargs = {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": []}
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")


@dataclass
class PostgresServer:
    """A running server; `create_database` gives a test a database of its own."""

    port: int
    _counter: Iterator[int]

    def url(self, database: str) -> str:
        return f"postgresql://{DB_USER}@127.0.0.1:{self.port}/{database}"

    def admin(self, sql: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=DB_USER, dbname=database, autocommit=True
        ) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def create_database(self) -> str:
        name = f"assay_test_{next(self._counter)}"
        self.admin(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def running_server(bindir: Path) -> Iterator[PostgresServer]:
    """initdb + pg_ctl start; stopped and deleted on exit."""
    owner = _server_owner()
    # Not under pytest's tmp_path: its parents are private to root, and the server
    # user must reach the data folder.
    base = Path(tempfile.mkdtemp(prefix="assay-pg-"))
    data, log = base / "data", base / "server.log"
    if owner is not None:
        os.chown(base, owner.pw_uid, owner.pw_gid)
    pg_ctl = str(bindir / "pg_ctl")
    started = False
    try:
        _run(
            [str(bindir / "initdb"), "-D", str(data), "-U", DB_USER, "--auth=trust",
             "-E", "UTF8", "--locale=C", "--no-sync"],
            owner,
            base,
        )  # fmt: skip
        for _attempt in range(3):
            port = _free_port()
            options = (
                f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off"
            )
            try:
                _run(
                    [pg_ctl, "-D", str(data), "-l", str(log), "-w", "-t", "60",
                     "-o", options, "start"],
                    owner,
                    base,
                )  # fmt: skip
            except RuntimeError:
                continue  # most likely the port was taken meanwhile; try another
            started = True
            break
        if not started:
            text = log.read_text(errors="replace") if log.exists() else "(no server log)"
            pytest.fail(f"could not start PostgreSQL from {bindir}:\n{text}", pytrace=False)
        yield PostgresServer(port=port, _counter=itertools.count(1))
    finally:
        if started:
            _run([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"], owner, base)
        shutil.rmtree(base, ignore_errors=True)


# -- fixtures (imported by the conftests) --------------------------------------------------


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One server for the whole session, stopped at the end."""
    bindir = require_bindir()
    require_driver()
    with running_server(bindir) as server:
        yield server


@pytest.fixture(scope="session")
def _shared_postgres_database(postgres_server: PostgresServer) -> str:
    # CREATE DATABASE takes ~0.3 s; tests that only need an empty store share one
    # migrated database and have its tables emptied instead.
    name = postgres_server.create_database()
    Store.open(postgres_server.url(name)).close()
    return name


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a store holding no data, on each backend in turn."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store' / 'assay.db'}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name: str = request.getfixturevalue("_shared_postgres_database")
    tables = ", ".join(t.name for t in metadata.sorted_tables)
    server.admin(f"TRUNCATE {tables} RESTART IDENTITY CASCADE", database=name)
    return server.url(name)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """An opened store holding no data, on each backend in turn."""
    opened = Store.open(store_url)
    yield opened
    opened.close()
