"""The OpenAPI document tells the truth: a property-based test over it finds nothing.

For every operation of `/openapi.json`, hypothesis draws path and query parameters
(from the declared schemas and from arbitrary text) and a JSON body; each answer must be
a status the operation declares, never a 5xx, and in the error shape. Fixed seed and a
bounded example count, so the test is repeatable and quick.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from assay.service.app import create_app
from assay.store import Store

EXAMPLES = 25

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, Any]]]:
    path: Path = tmp_path_factory.mktemp("openapi") / "store.db"
    with Store.open(f"sqlite:///{path}") as store:
        _info, key = store.api_keys.create("openapi")
        app = create_app(store)
        with TestClient(app, raise_server_exceptions=False) as client:
            client.headers["Authorization"] = f"Bearer {key}"
            spec = client.get("/openapi.json").json()
            # Something to find: one of each resource.
            client.post("/v1/apps/shop/personas", params={"personaId": "p1"},
                        json={"displayName": "P", "personality": "calm"})  # fmt: skip
            yield client, spec


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, op)
        for path, item in spec["paths"].items()
        for method, op in item.items()
    ]


def _value(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    kinds = [s.get("type") for s in schema.get("anyOf", [schema])]
    options: list[st.SearchStrategy[Any]] = [st.text(max_size=40)]
    if "integer" in kinds:
        options.append(st.integers(min_value=-(2**70), max_value=2**70))
    if "boolean" in kinds:
        options.append(st.sampled_from(["true", "false", "yes"]))
    if "enum" in schema:
        options.append(st.sampled_from(schema["enum"]))
    options.append(st.sampled_from(["shop", "p1", "apps/shop/personas/p1", "0", "-1", "\u00b2"]))
    return st.one_of(options)


def test_every_operation_answers_only_what_it_declares(
    api: tuple[TestClient, dict[str, Any]],
) -> None:
    client, spec = api
    operations = _operations(spec)
    assert len(operations) >= 15

    @seed(20261124)
    @settings(
        max_examples=EXAMPLES * len(operations),
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        method, path, op = data.draw(st.sampled_from(operations))
        url = path
        query: dict[str, str] = {}
        for param in op.get("parameters", []):
            value = data.draw(_value(param.get("schema", {})))
            if param["in"] == "path":
                # Percent-encoded, so any text is a well-formed URL (a name keeps its
                # slashes: it is a path).
                safe = "/" if param["name"] == "name" else ""
                url = url.replace("{" + param["name"] + "}", quote(str(value), safe=safe) or "x")
            elif data.draw(st.booleans()):
                query[param["name"]] = str(value)
        body = None
        if "requestBody" in op:
            body = json.dumps(data.draw(_JSON))
        reply = client.request(
            method, url, params=query, content=body,
            headers={"content-type": "application/json"} if body is not None else {},
        )  # fmt: skip
        declared = set(op["responses"])
        assert reply.status_code < 500, (method, url, query, body, reply.text)
        assert str(reply.status_code) in declared, (
            f"{method} {path} answered {reply.status_code} ({reply.text[:200]}); "
            f"the spec declares {sorted(declared)} (url {url}, query {query})"
        )
        if reply.status_code >= 400:
            error = reply.json()["error"]
            assert error["code"] == reply.status_code and error["status"] and error["message"]

    check()


def test_every_operation_declares_the_errors_every_route_can_answer(
    api: tuple[TestClient, dict[str, Any]],
) -> None:
    _client, spec = api
    for method, path, op in _operations(spec):
        # Every route needs a key (401), reads parameters (400) and has a body limit (413).
        for status in ("400", "401", "413"):
            assert status in op["responses"], (method, path, status)
