"""MCP arguments are checked against each tool's input schema; GET /mcp is 405.

Before, `list_evaluations {"pageSize": "abc"}`, `filter: 1` or `pageToken: 1` reached
the handlers and came back as `INTERNAL`, and `GET /mcp` opened an event stream that
never ended.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from service_samples import error_of
from service_server import RunningServer, create_key

from assay.service._mcp_tools import TOOLS
from assay.service.app import create_app
from assay.store import Store

HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture
def http(tmp_path: Any) -> Iterator[TestClient]:
    with (
        Store.open(f"sqlite:///{tmp_path / 'mcp.db'}") as store,
        TestClient(create_app(store, auth=False), raise_server_exceptions=False) as client,
    ):
        yield client


def _call(http: TestClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    reply = http.post("/mcp", content=json.dumps(body), headers=HEADERS)
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()["result"]
    return result


def _error_text(result: dict[str, Any]) -> str:
    assert result["isError"] is True, result
    text: str = result["content"][0]["text"]
    return text


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        (
            "list_evaluations",
            {"parent": "apps/m", "pageSize": "abc"},
            "pageSize: expected an integer, got a string",
        ),
        ("list_evaluations", {"parent": "apps/m", "filter": 1}, "filter: expected a string"),
        ("list_evaluations", {"parent": "apps/m", "pageSize": -1}, "pageSize: must be at least 0"),
        (
            "list_evaluations",
            {"parent": "apps/m", "pageSize": True},
            "pageSize: expected an integer",
        ),
        (
            "list_evaluation_runs",
            {"parent": "apps/m", "pageToken": 1},
            "pageToken: expected a string, got an integer",
        ),
        ("list_evaluations", {}, "parent: required argument is missing"),
        ("list_evaluations", {"parent": "apps/m", "colour": "red"}, "colour: unknown argument"),
        ("get_evaluation", {"name": ["apps/m/evaluations/x"]}, "name: expected a string"),
        ("create_evaluation", {"parent": "apps/m", "evaluation": "x"}, "evaluation: expected an"),
        ("run_evaluation", {"app": "apps/m", "runCount": 0}, "runCount: must be at least 1"),
        (
            "run_evaluation",
            {"app": "apps/m", "goldenRunMethod": "FAST"},
            "goldenRunMethod: expected one of STABLE, NAIVE",
        ),
        (
            "run_evaluation",
            {"app": "apps/m", "config": {"toolCallBehaviour": 3}},
            "config.toolCallBehaviour: expected one of",
        ),
        ("run_evaluation", {"app": "apps/m", "evaluations": [1]}, "evaluations[0]: expected a"),
        (
            "run_evaluation",
            {"app": "apps/m", "assayJudgeBudget": {"maxCalls": 0}},
            "assayJudgeBudget.maxCalls: must be at least 1",
        ),
        (
            "run_evaluation",
            {"app": "apps/m", "assayJudgeBudget": {"maxUsd": "1"}},
            "assayJudgeBudget.maxUsd: expected a number",
        ),
        (
            "run_evaluation",
            {"app": "apps/m", "assayJudgeBudget": {"maxDollars": 1}},
            "assayJudgeBudget.maxDollars: unknown argument",
        ),
        ("delete_evaluation", {"name": "apps/m/evaluations/x", "force": "yes"}, "force: expected"),
    ],
)
def test_arguments_breaking_the_schema_are_tool_errors_naming_them(
    http: TestClient, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    text = _error_text(_call(http, tool, arguments))
    assert text.startswith(f"INVALID_ARGUMENT: {expected}"), text


def test_every_declared_property_is_enforced(http: TestClient) -> None:
    # For every tool and every property it declares with a type, a value of the wrong
    # type is refused naming that property — never INTERNAL.
    checked = 0
    for tool in TOOLS.values():
        schema = tool.input_schema
        valid = {name: _valid(schema["properties"][name]) for name in schema["required"]}
        for name, prop in schema["properties"].items():
            if "type" not in prop:
                continue
            text = _error_text(_call(http, tool.name, {**valid, name: _wrong(prop)}))
            assert text.startswith(f"INVALID_ARGUMENT: {name}: expected"), (tool.name, text)
            checked += 1
    assert checked >= 50


def _types(prop: dict[str, Any]) -> list[str]:
    """A property's JSON types (`"type"` may name one or list several)."""
    declared = prop["type"]
    return list(declared) if isinstance(declared, list) else [declared]


def _valid(prop: dict[str, Any]) -> Any:
    return {
        "string": "apps/m", "object": {}, "array": [], "integer": 1, "number": 1.5,
        "boolean": True,
    }[_types(prop)[0]]  # fmt: skip


def _wrong(prop: dict[str, Any]) -> Any:
    """A value of none of the property's types."""
    fits = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
    }
    types = _types(prop)
    return next(v for v in (7, "7", "true", [], {}) if not any(fits[t](v) for t in types))


def test_well_formed_arguments_still_run(http: TestClient) -> None:
    result = _call(http, "list_evaluations", {"parent": "apps/m", "pageSize": 5, "filter": ""})
    assert result.get("isError") is not True and result["structuredContent"] == {"evaluations": []}


def test_get_and_delete_on_mcp_are_405_with_allow(server: RunningServer, store: Store) -> None:
    key = create_key(store, "mcp")
    headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
    # A short read timeout: before, this GET opened a stream that never ended.
    with httpx.Client(base_url=server.base_url, headers=headers, timeout=10.0) as client:
        for method in ("GET", "DELETE"):
            reply = client.request(method, "/mcp")
            assert reply.status_code == 405, reply.text
            assert reply.headers["allow"] == "POST"
            assert error_of(reply)["message"].endswith("it accepts POST")


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/apps/shop/evaluations", "GET, POST, PATCH, DELETE"),
        ("PUT", "/v1/apps/shop/evaluations/x", "GET, PATCH, DELETE"),
        ("GET", "/v1/apps/shop/evaluations:run", None),
        ("DELETE", "/v1/apps/shop/evaluations:run", None),
        ("POST", "/v1/apps/shop/evaluationRuns/x", "GET, PATCH, DELETE"),
    ],
)
def test_rest_405_names_every_method_the_path_takes(
    http: TestClient, method: str, path: str, allowed: str | None
) -> None:
    reply = http.request(method, path)
    if allowed is None:
        # Served by the generic /v1/{name} routes: a 400 naming the bad resource name.
        assert reply.status_code == 400
        return
    assert reply.status_code == 405 and reply.headers["allow"] == allowed
    assert error_of(reply)["status"] == "UNIMPLEMENTED"
