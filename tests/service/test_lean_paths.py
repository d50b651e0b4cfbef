"""The request paths stay lean: how many SQL statements a GET and a list cost.

Counts statements, not time (timings are the bench's job): a known API key needs no
look-up, a GET of an evaluation reads the evaluation and the app's datasets (plus its
results' watermark at most once a second), a list reads the page and the datasets.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from service_samples import golden
from sqlalchemy import event

from assay.service.app import create_app
from assay.store import Store


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[tuple[TestClient, list[str], Store]]:
    with Store.open(f"sqlite:///{tmp_path / 'lean.db'}") as store:
        statements: list[str] = []

        def record(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
            statements.append(statement)

        event.listen(store.engine, "before_cursor_execute", record)
        _info, key = store.api_keys.create("lean")
        app = create_app(store)
        with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as client:
            yield client, statements, store


def _reads(statements: list[str]) -> list[str]:
    # BEGIN/ROLLBACK of each read are the connection's, not extra work of the route.
    return [s for s in statements if s.split()[0].upper() not in ("BEGIN", "ROLLBACK", "COMMIT")]


def test_known_key_get_and_list_cost_a_few_statements(
    counted: tuple[TestClient, list[str], Store],
) -> None:
    client, statements, _store = counted
    names = [
        client.post("/v1/apps/shop/evaluations", json=golden(f"ev {i}")).json()["name"]
        for i in range(5)
    ]
    assert client.get(f"/v1/{names[0]}").status_code == 200  # warm: key, secrets, caches
    statements.clear()
    for name in names:
        assert client.get(f"/v1/{name}").status_code == 200
    reads = _reads(statements)
    assert not [s for s in reads if "api_keys" in s], "a known key was looked up again"
    # The evaluation, the app's datasets, and (first time per evaluation) its watermark.
    assert len(reads) <= 3 * len(names), reads
    statements.clear()
    for _ in range(5):
        page = client.get("/v1/apps/shop/evaluations?pageSize=2")
        assert page.status_code == 200 and len(page.json()["evaluations"]) == 2
    reads = _reads(statements)
    assert not [s for s in reads if "api_keys" in s]
    # The page and the datasets; the watermarks of the 2 listed evaluations at most once.
    assert len(reads) <= 2 * 5 + 2, reads


def test_a_revoked_key_is_refused_at_once_by_the_server_that_revoked_it(
    counted: tuple[TestClient, list[str], Store],
) -> None:
    client, _statements, store = counted
    assert client.get("/v1/apps/shop/evaluations").status_code == 200
    (info,) = store.api_keys.list_keys()
    store.api_keys.revoke(info.id)
    assert client.get("/v1/apps/shop/evaluations").status_code == 401


def test_freezing_the_startup_heap_takes_it_out_of_collections() -> None:
    """What `assay serve` does once its app is built: every object alive then is left out
    of the cyclic collector's scans (gen 2 collections stop scanning the app).

    In a fresh interpreter: this one's collector state depends on the tests before (an
    in-process `assay eval` freezes its loaded data), and unfreezing it all here would
    change what later tests run with."""
    check = (
        "import gc\n"
        "from assay.service.app import freeze_startup_heap\n"
        "gc.collect()\n"
        "assert gc.get_freeze_count() == 0 and gc.get_objects(generation=2)\n"
        "freeze_startup_heap()\n"
        "assert gc.get_freeze_count() > 10_000, gc.get_freeze_count()\n"
        "assert gc.get_objects(generation=2) == []\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
