"""Alembic migrations: they build exactly the schema of `assay.store.schema`."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from assay.errors import StoreError
from assay.store import Store
from assay.store.connect import alembic_config, resolve_url
from assay.store.schema import metadata


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database with no tables at all, on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fresh.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


def _head() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def test_migrations_match_the_metadata(empty_url: str) -> None:
    with Store.open(empty_url) as store, store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, metadata) == []
        assert context.get_current_revision() == _head()
        tables = set(inspect(conn).get_table_names())
    assert tables == {
        "alembic_version",
        "runs",
        "case_results",
        "resources",
        "judge_cache",
        "judge_batches",
        "api_keys",
        "store_secrets",
        "aligned_judges",
        "labels",
        "label_history",
    }


def test_open_twice_keeps_data_and_revision(empty_url: str) -> None:
    with Store.open(empty_url) as store:
        run_id = store.start_run(eval_set_ids=["s"], metrics=[], config={}, agent=None, runs=1)
    with Store.open(empty_url) as store:
        assert store.get_run(run_id).id == run_id


def test_downgrade_to_base_and_upgrade_again(empty_url: str) -> None:
    with Store.open(empty_url) as store, store.engine.begin() as conn:
        command.downgrade(alembic_config(conn), "base")
        assert set(inspect(conn).get_table_names()) <= {"alembic_version"}
    with Store.open(empty_url) as store, store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []


def test_store_from_a_newer_assay_is_refused(empty_url: str) -> None:
    Store.open(empty_url).close()
    engine = create_engine(resolve_url(empty_url))
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'f00dcafe'"))
    engine.dispose()
    with pytest.raises(StoreError, match="written by a newer version of assay"):
        Store.open(empty_url)


def test_concurrent_first_opens_migrate_once(empty_url: str) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def open_store() -> None:
        try:
            barrier.wait()
            Store.open(empty_url).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Store.open(empty_url) as store, store.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM alembic_version")).scalar() == 1


def test_migration_scripts_ship_inside_the_package() -> None:
    import assay.store

    scripts = ScriptDirectory.from_config(alembic_config())
    package_dir = Path(assay.store.__file__).parent
    assert Path(scripts.dir).resolve() == (package_dir / "migrations").resolve()
    assert [rev.revision for rev in scripts.walk_revisions()][-1] == "0001"


def test_schema_drift_would_be_detected(empty_url: str) -> None:
    # Guards the comparison above against passing vacuously.
    with Store.open(empty_url) as store:
        with store.engine.begin() as conn:
            conn.execute(text("DROP INDEX ix_case_results_case_id"))
            conn.execute(text("ALTER TABLE judge_cache ADD COLUMN extra INTEGER"))
        with store.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), metadata)
    kinds = sorted(d[0] if isinstance(d, tuple) else d[0][0] for d in diff)
    assert kinds == ["add_index", "remove_column"]


def test_ctrl_c_in_a_new_stores_migration_is_raised_as_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Ctrl-C in the middle of the migration's commit makes SQLAlchemy close the
    # connection; turning foreign keys back on then must not replace the interrupt by
    # "Cannot operate on a closed database" (a traceback instead of exit 130).
    from assay.store._write_queue import QueuedConnection

    def interrupted(self: QueuedConnection) -> None:
        raise KeyboardInterrupt  # as SIGINT lands while the commit runs

    monkeypatch.setattr(QueuedConnection, "commit", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Store.open(f"sqlite:///{tmp_path / 'assay.db'}")
    monkeypatch.undo()
    with Store.open(f"sqlite:///{tmp_path / 'assay.db'}") as store:  # created next time
        assert store.list_runs() == []
