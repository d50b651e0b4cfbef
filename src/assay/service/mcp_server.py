"""The MCP server (streamable HTTP at /mcp) exposing the evaluation service as tools.

Built on the official `mcp` SDK's low-level `Server` and its
`StreamableHTTPSessionManager` (stateless, JSON responses), mounted as a plain route of
the FastAPI app, so the app's API-key and body-size middleware guard it like every
REST path. The tools (`_mcp_tools.TOOLS`) call the same operations as the REST routes;
a failure becomes a tool result with `isError` and the status text (e.g.
`ABORTED: evaluations 'x' was changed since it was read ...`), never a protocol error.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import anyio.to_thread
import mcp_types as types
from fastapi import FastAPI
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import (
    StreamableHTTPASGIApp,
    StreamableHTTPSessionManager,
)
from starlette.routing import Route

from assay.service._mcp_arguments import ArgumentsChecker
from assay.service._mcp_tools import TOOLS, ToolSpec
from assay.service.context import ServiceContext
from assay.service.errors import from_exception
from assay.service.labels_api import CALLER, caller_of

PATH = "/mcp"
SERVER_NAME = "assay"
INSTRUCTIONS = (
    "Manage and run agent evaluations (CES-compatible): evaluations, evaluation datasets, "
    "personas, evaluation runs and results. Collections are addressed as apps/{app}."
)

# Arguments are checked against the schema each tool declares, before it runs.
_CHECKERS = {name: ArgumentsChecker(spec.input_schema) for name, spec in TOOLS.items()}


def tool_definition(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def _result(payload: dict[str, Any]) -> types.CallToolResult:
    text = json.dumps(payload, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=payload
    )


def _error(code: str, message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{code}: {message}")], is_error=True
    )


def call_tool(ctx: ServiceContext, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """Run one tool synchronously (in a worker thread); errors become tool errors."""
    spec = TOOLS.get(name)
    if spec is None:
        return _error("NOT_FOUND", f"no tool {name!r}; list_tools shows the tools")
    try:
        _CHECKERS[name].check(arguments)
        return _result(spec.handler(ctx, arguments))
    except Exception as exc:  # every failure is the tool's error, never the session's
        error = from_exception(exc)
        return _error(error.code, error.message)


def build_server(ctx: ServiceContext) -> Server[Any]:
    """The MCP server of one app's context."""
    tools = [tool_definition(spec) for spec in TOOLS.values()]

    async def list_tools(
        _rc: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(
        _rc: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        # Who calls (a label's author); the worker thread runs in a copy of this context.
        CALLER.set(caller_of(getattr(_rc.request, "scope", None) or {}))
        # The operations use the store synchronously: keep the event loop free.
        return await anyio.to_thread.run_sync(call_tool, ctx, params.name, arguments)

    return Server(
        SERVER_NAME,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=on_call_tool,
    )


def install(app: FastAPI, ctx: ServiceContext) -> contextlib.AbstractAsyncContextManager[None]:
    """Mount the MCP endpoint on `app`; return the session manager's lifespan context."""
    manager = StreamableHTTPSessionManager(
        app=build_server(ctx),
        json_response=True,
        stateless=True,
        max_request_body_size=ctx.max_body_bytes,
    )
    app.router.routes.append(
        # POST only. The streamable-HTTP spec lets GET open a stream for messages the
        # server starts on its own, or answer 405: a stateless server never starts any,
        # so a GET stream would stay open forever with nothing on it. DELETE ends a
        # session, and there are none. Both are 405 with `Allow: POST`.
        Route(PATH, endpoint=StreamableHTTPASGIApp(manager), methods=["POST"])
    )

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with manager.run():
            yield

    return lifespan()
