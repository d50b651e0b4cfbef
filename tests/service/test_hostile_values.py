"""Values the store or the CES schema cannot hold are refused with 400 naming the field.

Before, each of these reached the store and came back as `500 INTERNAL "the store
failed to answer"` (or, for NaN, was silently stored as null). Checked over REST and
over MCP tool calls, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from service_samples import error_of, golden, scenario

from assay.service.app import create_app
from assay.store import Store

URL = "/v1/apps/shop/evaluations"
ARGS = "golden.turns[0].steps[1].expectation.toolCall.args"


@pytest.fixture
def http(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store, auth=False), raise_server_exceptions=False) as client:
        yield client


def _with_args(args_json: str) -> str:
    """A golden evaluation as JSON text whose tool call args are `args_json` verbatim."""
    text = json.dumps(golden("hostile"))
    return text.replace('{"city": "Paris"}', args_json)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


HOSTILE = [
    # (name, body text, field named, words in the message)
    ("big int", _with_args('{"n": 100000000000000000000}'), f"{ARGS}.n", "64-bit"),
    ("negative big int", _with_args('{"n": -9223372036854775809}'), f"{ARGS}.n", "64-bit"),
    ("NaN", _with_args('{"x": NaN}'), f"{ARGS}.x", "finite"),
    ("Infinity", _with_args('{"x": -Infinity}'), f"{ARGS}.x", "finite"),
    ("overflowing float", _with_args('{"x": 1e400}'), f"{ARGS}.x", "finite"),
    ("lone surrogate", json.dumps(golden("x\ud800")), "displayName", "surrogate"),
    ("surrogate in a key", _with_args('{"k\\udfff": 1}'), ARGS, "surrogate"),
    ("NUL", json.dumps(golden("x\u0000y")), "displayName", "NUL"),
    ("nested 300 deep", _with_args('{"a": ' + _deep(300) + "}"), f"{ARGS}.a[0]", "deeper"),
    ("nested 900 deep", _with_args('{"a": ' + _deep(900) + "}"), f"{ARGS}.a[0]", "deeper"),
]


@pytest.mark.parametrize(("name", "body", "field", "words"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_rest_refuses_values_the_store_cannot_hold(
    http: TestClient, name: str, body: str, field: str, words: str
) -> None:
    reply = http.post(URL, content=body, headers={"content-type": "application/json"})
    error = error_of(reply)
    assert reply.status_code == 400 and error["status"] == "INVALID_ARGUMENT", reply.text
    assert error["message"].startswith(field) and words in error["message"], error["message"]
    violation = error["details"][0]["fieldViolations"][0]
    assert violation["field"].startswith(field)
    # Nothing was stored, and the service still answers.
    assert http.get(URL).json() == {"evaluations": []}


def test_a_finite_value_in_range_is_stored_unchanged(http: TestClient) -> None:
    body = _with_args('{"n": 9223372036854775807, "m": -9223372036854775808, "x": 1.5e300}')
    created = http.post(URL, content=body, headers={"content-type": "application/json"})
    assert created.status_code == 200, created.text
    stored = http.get(f"/v1/{created.json()['name']}").json()
    args = stored["golden"]["turns"][0]["steps"][1]["expectation"]["toolCall"]["args"]
    assert args == {"n": 2**63 - 1, "m": -(2**63), "x": 1.5e300}


@pytest.mark.parametrize("turns", [0, -1, 2**31, 2**64, 1.5, "6", True])
def test_max_turns_outside_the_ces_range_is_refused(http: TestClient, turns: Any) -> None:
    body = scenario("too many turns")
    body["scenario"]["maxTurns"] = turns
    reply = http.post(URL, json=body)
    error = error_of(reply)
    assert reply.status_code == 400 and error["message"].startswith("scenario.maxTurns"), reply.text


def test_run_requests_are_checked_too(http: TestClient) -> None:
    reply = http.post(
        "/v1/apps/shop/evaluations:run",
        content='{"evaluations": ["a"], "displayName": "x\\ud800"}',
        headers={"content-type": "application/json"},
    )
    assert reply.status_code == 400 and "displayName" in error_of(reply)["message"]


def test_update_refuses_them_and_keeps_the_stored_value(http: TestClient) -> None:
    created = http.post(URL, json=golden("kept")).json()
    reply = http.patch(
        f"/v1/{created['name']}",
        params={"updateMask": "description"},
        content='{"description": NaN}',
        headers={"content-type": "application/json"},
    )
    assert reply.status_code == 400 and error_of(reply)["message"].startswith("description")
    assert http.get(f"/v1/{created['name']}").json()["description"] == "weather question"


def _mcp(http: TestClient, tool: str, arguments_json: str) -> dict[str, Any]:
    body = (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
        f'"params": {{"name": "{tool}", "arguments": {arguments_json}}}}}'
    )
    reply = http.post(
        "/mcp",
        content=body,
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        },
    )
    assert reply.status_code == 200, reply.text
    result: dict[str, Any] = reply.json()["result"]
    return result


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ('{"n": 100000000000000000000}', f"{ARGS}.n"),
        ('{"x": NaN}', f"{ARGS}.x"),
        # Deeper than the MCP SDK's JSON parser allows (~200) is its parse error, below.
        ('{"a": ' + _deep(150) + "}", f"{ARGS}.a[0]"),
    ],
)
def test_mcp_tool_calls_refuse_them_as_tool_errors(http: TestClient, args: str, field: str) -> None:
    evaluation = _with_args(args)
    result = _mcp(
        http, "create_evaluation", f'{{"parent": "apps/shop", "evaluation": {evaluation}}}'
    )
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith(f"INVALID_ARGUMENT: {field}"), text
    assert http.get(URL).json() == {"evaluations": []}


def test_mcp_bodies_deeper_than_its_parser_allows_are_a_parse_error(http: TestClient) -> None:
    evaluation = _with_args('{"a": ' + _deep(300) + "}")
    body = (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
        '"create_evaluation", "arguments": {"parent": "apps/shop", "evaluation": '
        f"{evaluation}}}}}}}"
    )
    reply = http.post(
        "/mcp",
        content=body,
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        },
    )
    assert reply.status_code == 400 and reply.json()["error"]["code"] == -32700
