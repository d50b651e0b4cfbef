"""The MCP server at /mcp, driven by the MCP SDK's own client as an MCP host would."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from service_samples import golden, persona
from service_server import RunningServer, create_key
from test_runs import weather_agent

from assay.agents.callable import CallableAgent
from assay.store import Store

CES_TOOLS = {
    "create_evaluation",
    "get_evaluation",
    "list_evaluations",
    "update_evaluation",
    "delete_evaluation",
    "run_evaluation",
    "get_evaluation_run",
    "list_evaluation_runs",
    "get_evaluation_result",
    "list_evaluation_results",
    "create_evaluation_dataset",
    "get_evaluation_dataset",
    "list_evaluation_datasets",
    "update_evaluation_dataset",
    "delete_evaluation_dataset",
    "create_persona",
    "get_persona",
    "list_personas",
    "update_persona",
    "delete_persona",
}


@asynccontextmanager
async def mcp_session(server: RunningServer, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(f"{server.base_url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(tool, args)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    text = result.content[0]
    assert (
        isinstance(text, types.TextContent) and json.loads(text.text) == result.structured_content
    )
    return result.structured_content


async def error(session: ClientSession, tool: str, args: dict[str, Any]) -> str:
    result = await session.call_tool(tool, args)
    assert result.is_error
    text = result.content[0]
    assert isinstance(text, types.TextContent)
    return text.text


def test_tools_are_listed_with_schemas_and_hints(store: Store, start_server: Any) -> None:
    server = start_server(store)

    async def scenario() -> None:
        async with mcp_session(server, create_key(store)) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
        # CES's tools plus assay's own: people's labels on results (issue #35).
        assert set(tools) == CES_TOOLS | {
            "list_labels",
            "set_label",
            "delete_label",
            "estimate_evaluation_run",
        }
        for tool in tools.values():
            assert tool.description and tool.input_schema["type"] == "object"
            assert tool.annotations is not None and tool.annotations.open_world_hint is False
        hints = {
            name: (
                t.annotations.read_only_hint,
                t.annotations.destructive_hint,
                t.annotations.idempotent_hint,
            )
            for name, t in tools.items()
            if t.annotations is not None
        }
        assert hints["get_evaluation"] == (True, False, True)
        assert hints["list_evaluation_results"] == (True, False, True)
        assert hints["delete_evaluation"] == (False, True, True)
        assert hints["update_evaluation"] == (False, False, False)
        assert hints["run_evaluation"] == (False, False, False)
        assert tools["update_evaluation"].input_schema["required"] == ["evaluation", "updateMask"]
        assert tools["run_evaluation"].input_schema["properties"]["goldenRunMethod"]["enum"] == [
            "STABLE",
            "NAIVE",
        ]

    asyncio.run(scenario())


def test_mcp_needs_the_api_key(store: Store, start_server: Any) -> None:
    server = start_server(store)
    reply = httpx.post(
        f"{server.base_url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert reply.status_code == 401
    assert reply.json()["error"]["status"] == "UNAUTHENTICATED"


def test_a_host_manages_and_runs_evaluations(store: Store, start_server: Any) -> None:
    server = start_server(store, agent=CallableAgent(weather_agent))

    async def scenario() -> None:
        async with mcp_session(server, create_key(store)) as session:
            created = await call(
                session,
                "create_evaluation",
                {"parent": "apps/shop", "evaluation": golden("paris"), "evaluationId": "paris"},
            )
            assert created["name"] == "apps/shop/evaluations/paris"
            got = await call(session, "get_evaluation", {"name": created["name"]})
            assert got["etag"] == created["etag"]
            listed = await call(session, "list_evaluations", {"parent": "apps/shop"})
            assert [e["name"] for e in listed["evaluations"]] == [created["name"]]

            changed = await call(
                session,
                "update_evaluation",
                {
                    "evaluation": {**got, "description": "edited"},
                    "updateMask": "description",
                },
            )
            assert changed["description"] == "edited" and changed["etag"] != got["etag"]
            stale = await error(
                session,
                "update_evaluation",
                {"evaluation": {**got, "description": "lost"}, "updateMask": "description"},
            )
            assert stale.startswith("ABORTED:")
            no_mask = await error(session, "update_evaluation", {"evaluation": changed})
            assert no_mask.startswith("INVALID_ARGUMENT:") and "updateMask" in no_mask

            dataset = await call(
                session,
                "create_evaluation_dataset",
                {
                    "parent": "apps/shop",
                    "evaluationDataset": {
                        "displayName": "smoke",
                        "evaluations": [created["name"]],
                    },
                },
            )
            operation = await call(
                session,
                "run_evaluation",
                {"app": "apps/shop", "evaluationDataset": dataset["name"], "appVersion": "v1"},
            )
            run_name = operation["metadata"]["evaluationRun"]
            for _ in range(400):
                run = await call(session, "get_evaluation_run", {"name": run_name})
                if run["state"] != "RUNNING":
                    break
                await asyncio.sleep(0.05)
            assert run["state"] == "COMPLETED" and run["progress"]["passedCount"] == 1
            runs = await call(session, "list_evaluation_runs", {"parent": "apps/shop"})
            assert [r["name"] for r in runs["evaluationRuns"]] == [run_name]
            results = await call(session, "list_evaluation_results", {"parent": created["name"]})
            (result,) = results["evaluationResults"]
            assert result["evaluationStatus"] == "PASS"
            assert await call(session, "get_evaluation_result", {"name": result["name"]}) == result
            full = await call(
                session, "get_evaluation", {"name": created["name"], "includeLastTenResults": True}
            )
            assert [r["name"] for r in full["lastTenResults"]] == [result["name"]]

            kept = await error(session, "delete_evaluation", {"name": created["name"]})
            assert kept.startswith("FAILED_PRECONDITION:")
            assert (
                await call(session, "delete_evaluation", {"name": created["name"], "force": True})
                == {}
            )
            gone = await error(session, "get_evaluation", {"name": created["name"]})
            assert gone.startswith("NOT_FOUND:")

            who = await call(
                session, "create_persona", {"parent": "apps/shop", "persona": persona("Rushed")}
            )
            renamed = await call(
                session,
                "update_persona",
                {
                    "persona": {"name": who["name"], "displayName": "Hurried"},
                    "updateMask": "displayName",
                },
            )
            assert renamed["displayName"] == "Hurried"
            personas = await call(session, "list_personas", {"parent": "apps/shop"})
            assert [p["displayName"] for p in personas["personas"]] == ["Hurried"]
            assert await call(session, "delete_persona", {"name": who["name"]}) == {}
            bad_parent = await error(session, "list_personas", {"parent": "shop"})
            assert bad_parent.startswith("INVALID_ARGUMENT:")

    asyncio.run(scenario())
