"""OffloadedRoute: sync endpoints run in a thread once and answer JSON encoded there."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient

from assay.service._routing import OffloadedRoute


def _app() -> FastAPI:
    router = APIRouter(route_class=OffloadedRoute)

    @router.get("/plain")
    def plain() -> dict[str, Any]:
        return {"name": "apps/a/evaluations/é", "n": [1, 2.5, None, True], "nested": {"x": {}}}

    @router.get("/huge")
    def huge() -> dict[str, Any]:
        return {"n": 2**70}  # beyond what orjson writes: FastAPI's own encoder answers

    app = FastAPI()
    app.include_router(router)
    return app


def test_dict_answers_are_json_with_the_declared_schema() -> None:
    app = _app()
    with TestClient(app) as client:
        reply = client.get("/plain")
        assert reply.status_code == 200
        assert reply.headers["content-type"] == "application/json"
        assert reply.json() == {
            "name": "apps/a/evaluations/é",
            "n": [1, 2.5, None, True],
            "nested": {"x": {}},
        }
        huge = client.get("/huge")
        assert huge.status_code == 200 and json.loads(huge.content) == {"n": 2**70}
    # The OpenAPI document still reads the endpoint's return annotation.
    schema = app.openapi()["paths"]["/plain"]["get"]["responses"]["200"]["content"]
    assert schema["application/json"]["schema"]["type"] == "object"


def test_reads_and_writes_run_on_bounded_threads_of_their_own() -> None:
    """At most WRITE_THREADS writes run at once (the rest wait their turn), and reads
    still answer while every write thread is blocked (e.g. waiting for the store's
    write turn)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from assay.service import _routing

    release = threading.Event()
    lock = threading.Lock()
    running = {"now": 0, "most": 0}
    router = APIRouter(route_class=OffloadedRoute)

    @router.post("/write")
    def write() -> dict[str, Any]:
        with lock:
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
        release.wait(30)
        with lock:
            running["now"] -= 1
        return {"ok": True}

    @router.get("/read")
    def read() -> dict[str, Any]:
        return {"ok": True}

    app = FastAPI()
    app.include_router(router)
    writes = _routing.WRITE_THREADS * 3
    with TestClient(app) as client, ThreadPoolExecutor(writes) as pool:
        pending = [pool.submit(client.post, "/write") for _ in range(writes)]
        deadline = threading.Event()
        for _ in range(300):  # until the write threads are all taken
            if running["now"] == _routing.WRITE_THREADS:
                break
            deadline.wait(0.01)
        assert running["now"] == _routing.WRITE_THREADS
        # Every write thread is blocked; a read is not queued behind them.
        assert client.get("/read").json() == {"ok": True}
        assert running["now"] == _routing.WRITE_THREADS
        release.set()
        assert all(f.result(timeout=30).status_code == 200 for f in pending)
    assert running["most"] == _routing.WRITE_THREADS
