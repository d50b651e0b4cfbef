"""Resources and runs are stored under a CES project and location, on each backend."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, text

from assay.errors import StoreError
from assay.store import Store
from assay.store.connect import alembic_config, resolve_url
from assay.store.eval_results import EvaluationResults
from assay.store.namespace import DEFAULT_NAMESPACE, Namespace, namespace_scope
from assay.store.schema import metadata

US = Namespace("p1", "us")
EU = Namespace("p2", "eu")


def test_resources_of_one_namespace_are_invisible_from_another(store: Store) -> None:
    with namespace_scope(US):
        made = store.resources.create("shop", "evaluations", "e1", display_name="e", body={})
        assert store.resources.get("shop", "evaluations", "e1") == made
    with namespace_scope(EU):
        assert store.resources.get("shop", "evaluations", "e1") is None
        assert store.resources.list_resources("shop", "evaluations") == []
        with pytest.raises(StoreError):  # not found here, so no stale-etag update either
            store.resources.put(
                "shop", "evaluations", "e1", display_name="e", body={}, etag=made.etag
            )
        # The same id and display name are free in another namespace.
        store.resources.create("shop", "evaluations", "e1", display_name="e", body={"x": 1})
        store.resources.delete("shop", "evaluations", "e1")
    assert store.resources.get("shop", "evaluations", "e1") is None  # the default one
    with namespace_scope(US):
        assert store.resources.get("shop", "evaluations", "e1") == made


def test_runs_carry_their_namespace_and_app_queries_apply_it(store: Store) -> None:
    with namespace_scope(US):
        run_id = store.start_run(eval_set_ids=[], metrics=[], config={}, agent=None, runs=1)
    run = store.get_run(run_id)  # ids are unique store-wide: readable from anywhere
    assert (run.project, run.location) == ("p1", "us")
    results = EvaluationResults(store.engine, store.url)
    with namespace_scope(US):
        assert [r.id for r in results.runs_page("default", limit=5)] == [run_id]
    with namespace_scope(EU):
        assert results.runs_page("default", limit=5) == []
    assert results.locations("p1") == ["us"] and results.locations("p2") == []
    plain = store.start_run(eval_set_ids=[], metrics=[], config={}, agent=None, runs=1)
    info = store.get_run(plain)
    assert (info.project, info.location) == (DEFAULT_NAMESPACE.project, "global")


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'old.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


def test_upgrade_puts_existing_rows_in_the_default_namespace(empty_url: str) -> None:
    engine = create_engine(resolve_url(empty_url))
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0003")
        conn.execute(
            text(
                "INSERT INTO resources (app, kind, id, display_name, body, etag, create_time,"
                " update_time) VALUES ('shop', 'evaluations', 'old', 'old', '{}', 'e1',"
                " '2026-01-01 00:00:00', '2026-01-01 00:00:00')"
            )
        )
    engine.dispose()
    with Store.open(empty_url) as store:
        found = store.resources.get("shop", "evaluations", "old")
        assert found is not None and found.etag == "e1"
        with namespace_scope(US):
            assert store.resources.get("shop", "evaluations", "old") is None
            store.resources.create("shop", "evaluations", "old", display_name="old", body={})
        with store.engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), metadata) == []
