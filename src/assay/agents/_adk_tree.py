"""The ADK agent tree as assay runs it: a mock-aware copy, app details, a timing plugin.

`instrumented_copy(root)` clones the user's agent tree (ADK's `BaseAgent.clone`, which
copies sub-agents recursively and leaves the original untouched) and appends one
`before_tool_callback` to every `LlmAgent` in it, after the agent's own callbacks. So a
mock stands exactly where the tool would have run: the agent's own guard callbacks still
see every call, and a call they answer never reaches the mock. The callback asks the
session's `ToolHook` (held in a context variable the session sets while it runs, which
ADK's tasks inherit, including the runs of agents wrapped as `AgentTool`) and returns
the mock payload as a dict; ADK then skips the real tool.

Calls that drive the agent itself are never intercepted: `transfer_to_agent`,
`exit_loop` and `AgentTool` (an agent used as a tool; its own tools are intercepted).

`AssayPlugin` is added to each session's Runner: it times every tool call (keyed by
function call id) and, as ADK's own eval does, gives model requests retry options when
they have none, so brief 429/5xx bursts are retried by the model client.
"""

from __future__ import annotations

import contextvars
import copy
import time
from collections.abc import Iterator
from typing import Any

from google.adk.agents.base_agent import BaseAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.llm_agent import LlmAgent
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.agent_tool import AgentTool
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.base_toolset import BaseToolset
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from assay.agents._adk_events import TRANSFER_TOOL, as_response_dict
from assay.agents.tools import ToolBehavior, ToolHook
from assay.model.core import ToolCall

CURRENT_HOOK: contextvars.ContextVar[ToolHook | None] = contextvars.ContextVar(
    "assay_adk_tool_hook", default=None
)
_AGENT_CONTROL_TOOLS = frozenset({TRANSFER_TOOL, "exit_loop"})

# Retried statuses and backoff for model calls, as google-adk's evaluation sets them
# when an agent configures none: request timeout, quota (429) and server errors.
_RETRY_OPTIONS = types.HttpRetryOptions(
    attempts=5,
    initial_delay=2.0,
    max_delay=60.0,
    exp_base=2.0,
    http_status_codes=[408, 429, 500, 502, 503, 504],
)


def walk(root: BaseAgent) -> Iterator[BaseAgent]:
    """The agents of a tree, root first, depth first."""
    yield root
    for sub in root.sub_agents:
        yield from walk(sub)


def mock_tool_call(
    tool: BaseTool, args: dict[str, Any], tool_context: ToolContext
) -> dict[str, Any] | None:
    """before_tool_callback: the mock answer for this call, or None to run the tool."""
    hook = CURRENT_HOOK.get()
    if hook is None or tool.name in _AGENT_CONTROL_TOOLS or isinstance(tool, AgentTool):
        return None
    call = ToolCall(id=tool_context.function_call_id, name=tool.name, args=dict(args))
    payload = hook.intercept(call)
    if payload is None and hook.behavior is not ToolBehavior.FAKE:
        return None  # REAL, or MIXED without a mock: the real tool answers
    return as_response_dict(payload)


def _instrument(agent: BaseAgent) -> None:
    for node in walk(agent):
        if not isinstance(node, LlmAgent):
            continue
        node.before_tool_callback = [*node.canonical_before_tool_callbacks, mock_tool_call]
        tools: list[Any] = []
        for tool in node.tools:
            if isinstance(tool, AgentTool):
                # The wrapped agent is shared with the user's tree: give the copy its own.
                tool = copy.copy(tool)
                tool.agent = instrumented_copy(tool.agent)
            tools.append(tool)
        node.tools = tools


def instrumented_copy(root: BaseAgent) -> BaseAgent:
    """A copy of the tree whose LlmAgents let the session's ToolHook answer tool calls."""
    clone = root.clone()
    _instrument(clone)
    return clone


class AssayPlugin(BasePlugin):
    """Per-session observer: tool call timings and default retry options."""

    def __init__(self) -> None:
        super().__init__(name="assay")
        self._started: dict[str, float] = {}
        self.latencies: dict[str, float] = {}

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        config = llm_request.config
        config.http_options = config.http_options or types.HttpOptions()
        config.http_options.retry_options = config.http_options.retry_options or _RETRY_OPTIONS
        return None

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        if tool_context.function_call_id:
            self._started[tool_context.function_call_id] = time.perf_counter()
        return None

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        started = self._started.pop(tool_context.function_call_id or "", None)
        if started is not None and tool_context.function_call_id:
            self.latencies[tool_context.function_call_id] = time.perf_counter() - started
        return None


# -- app details -----------------------------------------------------------------------------


def _instruction_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, types.Content):
        return "\n".join(p.text for p in value.parts or [] if p.text)
    if callable(value):
        name = getattr(value, "__qualname__", type(value).__name__)
        return f"(instructions computed at run time by {name})"
    return ""


def _declaration(tool: Any) -> dict[str, Any]:
    if isinstance(tool, BaseToolset):
        return {
            "name": type(tool).__name__,
            "description": "a toolset: its tools are listed when the agent runs",
        }
    if not isinstance(tool, BaseTool):
        tool = FunctionTool(tool)
    declaration = tool._get_declaration()
    if declaration is None:
        # A built-in tool the model runs itself (search, code execution): no schema.
        return {"name": tool.name, "description": tool.description}
    dumped: dict[str, Any] = declaration.model_dump(mode="json", exclude_none=True)
    return dumped


def agent_details(root: BaseAgent) -> dict[str, Any]:
    """ADK's `app_details` for the tree: each LlmAgent's instructions and tools."""
    details: dict[str, Any] = {}
    global_instruction = getattr(root, "global_instruction", "")
    for node in walk(root):
        if not isinstance(node, LlmAgent):
            continue
        texts = [
            _instruction_text(node.static_instruction),
            _instruction_text(global_instruction),
            _instruction_text(node.instruction),
        ]
        declarations = [_declaration(t) for t in node.tools]
        details[node.name] = {
            "name": node.name,
            "instructions": "\n\n".join(t for t in texts if t),
            "tool_declarations": [{"function_declarations": declarations}] if declarations else [],
        }
    return {"agent_details": details}
