"""Adapter for an agent given as a plain Python callable (sync or async).

The callable receives the user's text as its first argument and, when its signature
names them, `state` (the session's mutable state dict, seeded from the case's
`session_input.state`), `history` (the earlier Turns of this session),
`user_input` (the full UserInput), `case` (the EvalCase) and `tools` (the session's
`ToolHook`: call `await tools.execute(call, real)` to let FAKE / MIXED mocks answer
tool calls). It returns:

- a string: the final response;
- a dict `{response, predicted_trajectory}` (Vertex style; the trajectory a list of
  `{tool_name, tool_input}`), optionally with `tool_responses`, `latency_in_seconds`;
- a `Turn`;
- None: no response.

Sync callables run in a worker thread, so a slow one does not block other cases.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
from collections.abc import Callable
from typing import Any

from assay.agents.base import SessionOptions
from assay.core.cases import EvalCase, Step, ToolCall, ToolResponse, Turn, UserInput
from assay.errors import AgentError

_KNOWN_PARAMS = ("state", "history", "user_input", "case", "tools")


def _accepted_params(fn: Callable[..., object]) -> tuple[set[str], bool]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return set(), False
    params = sig.parameters.values()
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    names = {p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL}
    return ({n for n in _KNOWN_PARAMS if n in names or var_kw}), var_kw


def _trajectory_steps(trajectory: object, where: str) -> list[Step]:
    if isinstance(trajectory, str):
        try:
            trajectory = json.loads(trajectory)
        except json.JSONDecodeError as exc:
            raise AgentError(
                f"{where}: predicted_trajectory is not valid JSON: {exc.msg}"
            ) from None
    if trajectory is None:
        return []
    if not isinstance(trajectory, list):
        raise AgentError(
            f"{where}: predicted_trajectory must be a list of {{tool_name, tool_input}}, "
            f"got {type(trajectory).__name__}"
        )
    steps = []
    for i, call in enumerate(trajectory):
        if isinstance(call, ToolCall):
            steps.append(Step(tool_call=call))
            continue
        if not isinstance(call, dict):
            raise AgentError(f"{where}: predicted_trajectory[{i}] must be an object")
        name = call.get("tool_name", call.get("name"))
        args = call.get("tool_input", call.get("args", {}))
        if not isinstance(name, str) or not isinstance(args, dict):
            raise AgentError(
                f"{where}: predicted_trajectory[{i}] needs tool_name (string) and "
                "tool_input (object)"
            )
        steps.append(Step(tool_call=ToolCall(id=call.get("id"), name=name, args=args)))
        if "tool_output" in call:
            steps.append(
                Step(
                    tool_response=ToolResponse(
                        id=call.get("id"), name=name, response=call["tool_output"]
                    )
                )
            )
    return steps


def to_turn(value: object, user_input: UserInput, where: str) -> Turn:
    """Normalise what an agent callable returned into a Turn."""
    if isinstance(value, Turn):
        if value.user_input == UserInput():
            return value.model_copy(update={"user_input": user_input})
        return value
    if value is None or isinstance(value, str):
        return Turn(user_input=user_input, final_response=value)
    if isinstance(value, dict):
        unknown = set(value) - {
            "response",
            "predicted_trajectory",
            "tool_responses",
            "latency_in_seconds",
        }
        if unknown:
            raise AgentError(
                f"{where}: returned dict has unknown keys {sorted(unknown)}; expected "
                "{response, predicted_trajectory}"
            )
        response = value.get("response")
        if response is not None and not isinstance(response, str):
            response = json.dumps(response, ensure_ascii=False)
        return Turn(
            user_input=user_input,
            steps=_trajectory_steps(value.get("predicted_trajectory"), where),
            final_response=response,
            latency_s=value.get("latency_in_seconds"),
        )
    raise AgentError(
        f"{where}: an agent callable must return a string, a dict "
        f"{{response, predicted_trajectory}} or a Turn, got {type(value).__name__}"
    )


class CallableSession:
    def __init__(self, agent: CallableAgent, case: EvalCase, options: SessionOptions) -> None:
        self._agent = agent
        self._case = case
        self._tools = options.tools
        self.state: dict[str, Any] = (
            options.state
            if options.state is not None
            else copy.deepcopy(case.session_input.state if case.session_input else {})
        )
        self.history: list[Turn] = list(options.history)

    async def send(self, user_input: UserInput) -> Turn:
        fn = self._agent.fn
        kwargs: dict[str, Any] = {}
        accepted = self._agent.accepted
        if "state" in accepted:
            kwargs["state"] = self.state
        if "history" in accepted:
            kwargs["history"] = list(self.history)
        if "user_input" in accepted:
            kwargs["user_input"] = user_input
        if "case" in accepted:
            kwargs["case"] = self._case
        if "tools" in accepted:
            kwargs["tools"] = self._tools
        text = user_input.text or ""
        if self._agent.is_async:
            value = await fn(text, **kwargs)
        else:
            value = await asyncio.to_thread(fn, text, **kwargs)
        turn = to_turn(value, user_input, f"agent {self._agent.name}")
        self.history.append(turn)
        return turn

    async def close(self) -> None:
        return None


class CallableAgent:
    """Wrap a sync or async callable as an `Agent`."""

    def __init__(self, fn: Callable[..., Any], name: str | None = None) -> None:
        if not callable(fn):
            raise AgentError(f"agent {name or fn!r} is not callable")
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", None) or type(fn).__name__
        self.accepted, _ = _accepted_params(fn)
        call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)

    def app_details(self) -> dict[str, Any] | None:
        """The callable's own `app_details()` (instructions and tool declarations in
        ADK's shape), when it has one."""
        describe = getattr(self.fn, "app_details", None)
        details = describe() if callable(describe) else None
        return details if isinstance(details, dict) else None

    async def start_session(
        self, case: EvalCase, options: SessionOptions | None = None
    ) -> CallableSession:
        return CallableSession(self, case, options or SessionOptions.for_case(case))
