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
