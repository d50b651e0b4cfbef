"""A store already at the newest schema opens without Alembic (`connect.SCHEMA_HEAD`):
the constant is Alembic's own head, and an older store is still migrated. A new SQLite
store is created at the head without Alembic, exactly as the migrations make it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from alembic.script import ScriptDirectory

from assay.store import Store
from assay.store.connect import SCHEMA_HEAD, alembic_config

OPEN_TWICE = textwrap.dedent(
    """
    import sys
    from assay.store import Store
    url = sys.argv[1]
    Store.open(url).close()           # a new store: created at the head
    first = "alembic" in sys.modules
    for name in [m for m in sys.modules if m == "alembic" or m.startswith("alembic.")]:
        del sys.modules[name]
    Store.open(url).close()           # at the head: Alembic is not loaded again
    print(first, "alembic" in sys.modules)
    """
)


def test_the_head_is_alembics() -> None:
    assert ScriptDirectory.from_config(alembic_config()).get_current_head() == SCHEMA_HEAD


def test_a_store_at_the_head_opens_without_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    done = subprocess.run(
        [sys.executable, "-c", OPEN_TWICE, url], capture_output=True, text=True, timeout=120,
        check=True,
    )  # fmt: skip
    assert done.stdout.split() == ["False", "False"]


def test_an_older_store_is_still_upgraded(tmp_path: Path) -> None:
    from alembic import command

    url = f"sqlite:///{tmp_path / 'a.db'}"
    store = Store.open(url)
    with store.engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0002")
    store.close()
    store = Store.open(url)
    with store.engine.connect() as conn:
        version = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
    store.close()
    assert version == SCHEMA_HEAD


def _schema(url: str) -> dict[str, Any]:
    """Every table's columns, indexes, foreign keys and SQL-level defaults, by name
    (the column order of a table a migration added columns to may differ)."""
    import sqlite3

    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        schema: dict[str, Any] = {}
        for table in sorted(tables):
            columns = {r[1]: r[2:] for r in conn.execute(f"PRAGMA table_xinfo('{table}')")}
            indexes = {
                r[1]: (r[2], r[3], [c[2] for c in conn.execute(f"PRAGMA index_info('{r[1]}')")])
                for r in conn.execute(f"PRAGMA index_list('{table}')")
            }
            keys = sorted(r[2:] for r in conn.execute(f"PRAGMA foreign_key_list('{table}')"))
            schema[table] = {"columns": columns, "indexes": indexes, "foreign_keys": keys}
        schema["version"] = conn.execute("SELECT version_num FROM alembic_version").fetchall()
        return schema
    finally:
        conn.close()


def test_a_new_sqlite_store_is_the_migrations_schema(tmp_path: Path) -> None:
    from alembic import command
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from assay.store.schema import metadata

    created = f"sqlite:///{tmp_path / 'created.db'}"
    Store.open(created).close()
    migrated = f"sqlite:///{tmp_path / 'migrated.db'}"
    store = Store.open(migrated)
    with store.engine.begin() as conn:  # every migration down, then up again
        command.downgrade(alembic_config(conn), "base")
        conn.exec_driver_sql("DROP TABLE alembic_version")
    with store.engine.begin() as conn:
        assert [r[0] for r in conn.exec_driver_sql("SELECT name FROM sqlite_master")] == []
        command.upgrade(alembic_config(conn), "head")
    store.close()
    assert _schema(created) == _schema(migrated)
    assert _schema(created)["version"] == [(SCHEMA_HEAD,)]
    store = Store.open(created)
    with store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
    store.close()
