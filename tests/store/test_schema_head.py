"""A store already at the newest schema opens without Alembic (`connect.SCHEMA_HEAD`):
the constant is Alembic's own head, and a new or older store is still migrated."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from alembic.script import ScriptDirectory

from assay.store import Store
from assay.store.connect import SCHEMA_HEAD, alembic_config

OPEN_TWICE = textwrap.dedent(
    """
    import sys
    from assay.store import Store
    url = sys.argv[1]
    Store.open(url).close()           # a new store: migrated by Alembic
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
    assert done.stdout.split() == ["True", "False"]


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
