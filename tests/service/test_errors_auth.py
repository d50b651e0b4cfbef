"""Error shapes, API keys, request limits and the OpenAPI document."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from alembic import command
from fastapi.testclient import TestClient
from service_samples import error_of, golden
from service_server import RunningServer, create_key
from sqlalchemy import inspect, select, text

from assay.service.app import create_app
from assay.service.context import ServiceContext
from assay.store import Resource, Store
from assay.store.api_keys import VERIFIED_TTL_S
from assay.store.connect import alembic_config
from assay.store.schema import api_keys

URL = "/v1/apps/shop/evaluations"


def test_requests_need_a_valid_key(server: RunningServer, store: Store) -> None:
    key = create_key(store, "ci")
    with httpx.Client(base_url=server.base_url) as http:
        cases: list[tuple[dict[str, str], str]] = [
            ({}, "needs an API key"),
            ({"Authorization": f"Basic {key}"}, "needs an API key"),
            ({"Authorization": "Bearer"}, "needs an API key"),
            ({"Authorization": "Bearer assay_nope_nope"}, "not valid"),
            ({"Authorization": f"Bearer {key}x"}, "not valid"),
            ({"Authorization": f"Bearer {key[:-1]}"}, "not valid"),
        ]
        for headers, text_ in cases:
            reply = http.get(URL, headers=headers)
            error = error_of(reply)
            assert reply.status_code == 401 and error["status"] == "UNAUTHENTICATED", headers
            assert text_ in error["message"]
            assert reply.headers["www-authenticate"] == "Bearer"
        # Refused before the body is read: nothing was created.
        assert http.post(URL, json=golden("x")).status_code == 401
        good = {"Authorization": f"Bearer {key}"}
        assert http.get(URL, headers=good).json() == {"evaluations": []}
        # The scheme is case-insensitive, as RFC 7235 says.
        assert http.get(URL, headers={"Authorization": f"bearer {key}"}).status_code == 200
        # The OpenAPI document and viewer are public.
        assert http.get("/openapi.json").status_code == 200
        assert http.get("/docs").status_code == 200

        info = store.api_keys.list_keys()[0]
        store.api_keys.revoke(info.id)
        revoked = http.get(URL, headers=good)
        assert revoked.status_code == 401 and "revoked" in error_of(revoked)["message"]


def test_keys_are_stored_hashed(store: Store) -> None:
    info, secret = store.api_keys.create("  deploy bot ")
    assert info.name == "deploy bot" and secret.startswith(f"assay_{info.id}_")
    with store.engine.connect() as conn:
        row = conn.execute(select(api_keys)).one()
        dump = " ".join(str(v) for v in row)
    assert secret.split("_", 2)[2] not in dump and row.secret_hash != secret
    verified = store.api_keys.verify(secret)
    assert verified is not None and verified.id == info.id
    assert store.api_keys.list_keys()[0].last_used_at is not None
    # Same secret under another key's id: refused (the hash is salted per key).
    other, _ = store.api_keys.create("other")
    assert store.api_keys.verify(f"assay_{other.id}_{secret.split('_', 2)[2]}") is None
    assert store.api_keys.revoke(info.id).active is False
    assert store.api_keys.verify(secret) is None
    with pytest.raises(Exception, match="no API key with id 'missing'"):
        store.api_keys.revoke("missing")
    with pytest.raises(Exception, match="non-empty name"):
        store.api_keys.create(" ")


def test_verified_keys_are_remembered_within_a_bound(store_url: str) -> None:
    """A verified key is answered from memory for VERIFIED_TTL_S; a revocation by another
    process (here: another Store over the same database) shows once that has passed, and
    one through the same Store at once."""
    clock = [1000.0]
    with Store.open(store_url) as server_side, Store.open(store_url) as elsewhere:
        server_side.api_keys.clock = lambda: clock[0]
        info, key = elsewhere.api_keys.create("remembered")
        assert server_side.api_keys.remembered(key) is None
        assert server_side.api_keys.verify(key) == info
        assert server_side.api_keys.remembered(key) == info
        elsewhere.api_keys.revoke(info.id)
        clock[0] += VERIFIED_TTL_S / 2
        assert server_side.api_keys.verify(key) == info  # within the documented bound
        clock[0] += VERIFIED_TTL_S / 2
        assert server_side.api_keys.remembered(key) is None
        assert server_side.api_keys.verify(key) is None
        # Revoked through the same Store: forgotten at once, no waiting.
        other, other_key = server_side.api_keys.create("other")
        assert server_side.api_keys.verify(other_key) is not None
        server_side.api_keys.revoke(other.id)
        assert server_side.api_keys.verify(other_key) is None
        # A wrong secret is never answered from memory for a remembered key's id.
        _third, third_key = server_side.api_keys.create("third")
        assert server_side.api_keys.verify(third_key) is not None
        wrong = third_key[:-1] + ("y" if third_key.endswith("x") else "x")
        assert server_side.api_keys.verify(wrong) is None


def test_auth_can_be_disabled(store: Store, start_server: Callable[..., RunningServer]) -> None:
    open_server = start_server(store, auth=False)
    reply = httpx.post(f"{open_server.base_url}{URL}", json=golden("Open"))
    assert reply.status_code == 200, reply.text


@pytest.fixture
def small_server(store: Store, start_server: Callable[..., RunningServer]) -> RunningServer:
    return start_server(store, max_body_bytes=2_000)


def test_bodies_over_the_limit_get_413(small_server: RunningServer, store: Store) -> None:
    headers = {"Authorization": f"Bearer {create_key(store)}"}
    big = golden("Big") | {"description": "x" * 5_000}
    with httpx.Client(base_url=small_server.base_url, headers=headers) as http:
        declared = http.post(URL, json=big)
        error = error_of(declared)
        assert declared.status_code == 413 and error["status"] == "RESOURCE_EXHAUSTED"
        assert "2000 bytes" in error["message"]

        def chunks() -> Iterator[bytes]:
            # Chunked transfer: no Content-Length, so the limit is enforced while reading.
            body = httpx.Request("POST", "/", json=big).content
            for start in range(0, len(body), 500):
                yield body[start : start + 500]

        streamed = http.post(URL, content=chunks(), headers={"Content-Type": "application/json"})
        assert streamed.status_code == 413 and error_of(streamed)["status"] == "RESOURCE_EXHAUSTED"
        assert http.post(URL, json=golden("Small")).status_code == 200
        assert len(http.get(URL).json()["evaluations"]) == 1


def test_malformed_requests_get_400(client: httpx.Client) -> None:
    headers = {"Content-Type": "application/json"}
    broken = client.post(URL, content=b'{"displayName": ', headers=headers)
    error = error_of(broken)
    assert broken.status_code == 400 and error["status"] == "INVALID_ARGUMENT"
    assert "not valid JSON" in error["message"]
    not_object = client.post(URL, json=["a", "list"])
    assert not_object.status_code == 400 and "dictionary" in error_of(not_object)["message"]
    bad_view = client.get(URL, params={"view": "EVERYTHING"})
    assert bad_view.status_code == 400 and "view" in error_of(bad_view)["message"]
    bad_size = client.get(URL, params={"pageSize": "many"})
    assert bad_size.status_code == 400 and "pageSize" in error_of(bad_size)["message"]


def test_unknown_paths_and_methods(client: httpx.Client) -> None:
    missing = client.get("/nothing/here")
    assert missing.status_code == 404 and "/v1" in error_of(missing)["message"]
    wrong_method = client.put("/v1/apps/shop/evaluations/x", json={})
    assert wrong_method.status_code == 405
    assert error_of(wrong_method)["status"] == "UNIMPLEMENTED"
    not_updatable = client.patch(
        "/v1/apps/shop/evaluationRuns/r1", params={"updateMask": "x"}, json={}
    )
    assert not_updatable.status_code == 400
    assert "cannot be updated" in error_of(not_updatable)["message"]


def test_internal_errors_hide_the_details(store: Store) -> None:
    def broken(_ctx: ServiceContext, _res: Resource, _body: dict[str, Any], _full: bool) -> None:
        raise RuntimeError("secret-internal-detail at /srv/app.py line 42")

    app = create_app(store, auth=False)
    ctx: ServiceContext = app.state.ctx
    ctx.decorators.append(broken)
    with TestClient(app, raise_server_exceptions=False) as http:
        created = http.post(URL, json=golden("Boom"))
    error = error_of(created)
    assert created.status_code == 500 and error["status"] == "INTERNAL"
    assert "secret-internal-detail" not in created.text and "line 42" not in created.text


def test_decorators_see_every_rendered_evaluation(store: Store) -> None:
    calls: list[tuple[str, bool]] = []

    def mark(_ctx: ServiceContext, res: Resource, body: dict[str, Any], full: bool) -> None:
        calls.append((res.id, full))
        body["evaluationRuns"] = [f"apps/{res.app}/evaluationRuns/for-{res.id}"]

    app = create_app(store, auth=False)
    app.state.ctx.decorators.append(mark)
    with TestClient(app) as http:
        created = http.post(URL, params={"evaluationId": "e1"}, json=golden("Deco")).json()
        assert created["evaluationRuns"] == ["apps/shop/evaluationRuns/for-e1"]
        http.get("/v1/apps/shop/evaluations/e1", params={"view": "FULL"})
        http.get(URL)
        http.post("/v1/apps/shop/personas", json={"displayName": "P", "personality": "calm"})
    assert calls == [("e1", False), ("e1", True), ("e1", False)]


class _DeclaringAgent:
    """An agent whose adapter declares its tools (what `invalid` is checked against)."""

    name = "weather"

    async def start_session(self, case: Any, options: Any = None) -> Any:
        raise AssertionError("not run in these tests")

    def app_details(self) -> dict[str, Any]:
        tools = [{"function_declarations": [{"name": "get_weather", "parameters": {}}]}]
        return {"agent_details": {"weather": {"name": "weather", "tool_declarations": tools}}}


def test_invalid_marks_evaluations_naming_unknown_tools(store: Store) -> None:
    with TestClient(create_app(store, auth=False, agent=_DeclaringAgent())) as http:
        known = http.post(URL, json=golden("Known")).json()
        by_path = http.post(
            URL, json=golden("Path", tool="projects/p/locations/l/apps/a/tools/get_weather")
        ).json()
        unknown = http.post(URL, json=golden("Unknown", tool="get_forecast")).json()
        assert (known["invalid"], by_path["invalid"], unknown["invalid"]) == (False, False, True)
        listed = {e["displayName"]: e["invalid"] for e in http.get(URL).json()["evaluations"]}
    assert listed == {"Known": False, "Path": False, "Unknown": True}
    # Without an agent declaring tools, nothing can be judged invalid.
    with TestClient(create_app(store, auth=False)) as http:
        assert not any(e["invalid"] for e in http.get(URL).json()["evaluations"])


def test_openapi_documents_the_api(client: httpx.Client) -> None:
    doc = client.get("/openapi.json").json()
    paths = doc["paths"]
    for collection in ("evaluations", "evaluationDatasets", "personas"):
        ops = paths[f"/v1/apps/{{app}}/{collection}"]
        assert {"get", "post"} <= set(ops)
        assert ops["post"]["summary"].startswith("Create an")
        assert "displayName is required" in ops["post"]["description"]
    generic = paths["/v1/{name}"]
    assert {"get", "patch", "delete"} <= set(generic)
    params = {p["name"] for p in generic["patch"]["parameters"]}
    assert "updateMask" in params
    assert "409" in generic["patch"]["responses"]
    assert "ErrorBody" in doc["components"]["schemas"]


def test_migration_0002_adds_and_removes_the_keys_table(store_url: str) -> None:
    with Store.open(store_url) as store, store.engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0001")
        assert "api_keys" not in inspect(conn).get_table_names()
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0001"
    with Store.open(store_url) as store:  # opening upgrades to the newest revision again
        _info, secret = store.api_keys.create("after upgrade")
        assert store.api_keys.verify(secret) is not None
