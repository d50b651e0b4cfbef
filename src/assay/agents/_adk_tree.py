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
from assay.core.cases import ToolCall

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
    tool: BaseTool, args: dict[str, object], tool_context: ToolContext
) -> dict[str, object] | None:
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


def _merged(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _length(intervals: list[tuple[float, float]]) -> float:
    return sum(end - start for start, end in intervals)


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    return sum(
        max(0.0, min(e1, e2) - max(s1, s2)) for s1, e1 in _merged(a) for s2, e2 in _merged(b)
    )


class AssayPlugin(BasePlugin):
    """Per-session observer: tool call and model call timings, default retry options."""

    def __init__(self) -> None:
        super().__init__(name="assay")
        self._started: dict[str, float] = {}
        self.latencies: dict[str, float] = {}
        self._tool_spans: list[tuple[float, float]] = []
        self._model_open: dict[str, float] = {}
        self._model_spans: list[tuple[float, float]] = []

    def take_timings(self) -> tuple[float, float]:
        """(model seconds, tool seconds) since the last call, as ADK splits a turn.

        Model time is the union of the model calls' intervals (concurrent calls counted
        once); tool time is the union of the tools' intervals less the model time inside
        them (an AgentTool awaits a model), so the two never double count.
        """
        now = time.perf_counter()
        model = self._model_spans + [(s, now) for s in self._model_open.values()]
        tools = _merged(self._tool_spans)
        model_s = _length(_merged(model))
        tool_s = max(_length(tools) - _overlap(tools, model), 0.0)
        self._tool_spans, self._model_spans, self._model_open = [], [], {}
        return round(model_s, 6), round(tool_s, 6)

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        config = llm_request.config
        config.http_options = config.http_options or types.HttpOptions()
        config.http_options.retry_options = config.http_options.retry_options or _RETRY_OPTIONS
        self._model_open[callback_context.agent_name] = time.perf_counter()
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        # Streaming calls answer in several responses: the call ends at its last one.
        started = self._model_open.pop(callback_context.agent_name, None)
        if started is not None:
            self._model_spans.append((started, time.perf_counter()))
        elif self._model_spans:
            last_start, _ = self._model_spans[-1]
            self._model_spans[-1] = (last_start, time.perf_counter())
        return None

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, object], tool_context: ToolContext
    ) -> dict[str, object] | None:
        if tool_context.function_call_id:
            self._started[tool_context.function_call_id] = time.perf_counter()
        return None

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, object],
        tool_context: ToolContext,
        result: dict[str, object],
    ) -> dict[str, object] | None:
        started = self._started.pop(tool_context.function_call_id or "", None)
        if started is not None and tool_context.function_call_id:
            ended = time.perf_counter()
            self.latencies[tool_context.function_call_id] = ended - started
            self._tool_spans.append((started, ended))
        return None


# -- app details -----------------------------------------------------------------------------


def _instruction_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, types.Content):
        return "\n".join(p.text for p in value.parts or [] if p.text)
    if callable(value):
        name = getattr(value, "__qualname__", type(value).__name__)
        return f"(instructions computed at run time by {name})"
    return ""


def _declaration(tool: Any) -> dict[str, object]:
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


def agent_details(root: BaseAgent) -> dict[str, object]:
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
