"""The tool-executor hook: which tool calls run the real tool and which a mock answers.

CES calls this the tool call behaviour of an evaluation run:

- `REAL`: every call runs the agent's own tool; mocks are ignored.
- `FAKE`: a `mock_tool_response` (a golden turn's expectation, or a scenario's
  `tool_expectation.mock_tool_response`) answers each matching call instead of the
  tool. A call that no mock matches is NOT run: the agent gets an error payload
  (`{"error": "..."}`) saying no mock answers it, so an evaluation never touches a real
  system by accident.
- `MIXED` (`--tools mixed`): mocks answer the calls they match, the real tool answers
  the others.

A mock matches a call when the tool names are equal and every argument of the mock's
expected call (if it has one) equals the call's argument of that name; extra arguments
of the actual call are allowed. Among matching mocks the one naming the most arguments
wins; among equals, the first one not used yet (so a sequence of mocks for repeated
calls of one tool answers them in order), else the last one.

Adapters call `ToolHook.intercept(call)` before running a tool (ADK does it from its
`before_tool_callback`) or `await ToolHook.execute(call, real)` to let the hook run the
real tool too and time it. The engine builds one hook per session.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from assay.core.cases import EvalCase, ToolCall, ToolResponse, Turn
from assay.core.jsonvalue import json_equal
from assay.errors import parse_choice


class ToolBehavior(StrEnum):
    REAL = "REAL"
    FAKE = "FAKE"
    MIXED = "MIXED"

    @classmethod
    def parse(cls, value: str | ToolBehavior) -> ToolBehavior:
        """Accept any case (`fake`, `FAKE`); raise ConfigError naming the choices."""
        return parse_choice(cls, value, "tool call behaviour")


@dataclass(frozen=True, slots=True)
class ToolMock:
    """A canned tool response, for calls of `call.name` whose args contain `call.args`."""

    call: ToolCall
    response: ToolResponse
    note: str | None = None


def no_mock_error(call: ToolCall) -> dict[str, object]:
    """The payload an agent gets for a FAKE call that no mock answers."""
    return {
        "error": (
            f"tool {call.name!r} was not run: tool call behaviour is FAKE and no "
            f"mock_tool_response matches this call (args {call.args!r})"
        )
    }


@dataclass
class ToolHook:
    """Per-session tool policy: mocks, the behaviour, and a log of what answered what."""

    behavior: ToolBehavior = ToolBehavior.REAL
    mocks: Sequence[ToolMock] = ()
    used: list[int] = field(default_factory=list)
    """Indexes into `mocks` of the mocks that answered a call, in call order."""
    unmatched: list[ToolCall] = field(default_factory=list)
    """FAKE calls no mock answered (the agent got `no_mock_error`)."""
    timings: list[tuple[str, float]] = field(default_factory=list)
    """(tool name, seconds) of every call answered through `execute`, in call order."""

    def _match(self, call: ToolCall) -> int | None:
        matching = [
            i
            for i, mock in enumerate(self.mocks)
            if mock.call.name == call.name
            and all(
                k in call.args and json_equal(v, call.args[k]) for k, v in mock.call.args.items()
            )
        ]
        if not matching:
            return None
        most = max(len(self.mocks[i].call.args) for i in matching)
        top = [i for i in matching if len(self.mocks[i].call.args) == most]
        unused = [i for i in top if i not in self.used]
        return unused[0] if unused else top[-1]

    def intercept(self, call: ToolCall) -> Any | None:
        """The response payload to give instead of running the tool, or None to run it."""
        if self.behavior is ToolBehavior.REAL:
            return None
        index = self._match(call)
        if index is not None:
            self.used.append(index)
            return self.mocks[index].response.response
        if self.behavior is ToolBehavior.FAKE:
            self.unmatched.append(call)
            return no_mock_error(call)
        return None

    async def execute(
        self, call: ToolCall, real: Callable[[], object] | None
    ) -> tuple[object, float]:
        """Answer `call` (mock, real tool, or the no-mock error) and time it.

        `real` runs the tool: a sync function (run in a worker thread) or one returning
        an awaitable. An exception from the real tool becomes `{"error": "..."}`, as a
        tool failure the agent sees, not a crash of the run. Returns (payload, seconds).
        """
        started = time.perf_counter()
        payload = await self._answer(call, real)
        seconds = time.perf_counter() - started
        self.timings.append((call.name, seconds))
        return payload, seconds

    async def _answer(self, call: ToolCall, real: Callable[[], object] | None) -> object:
        mocked = self.intercept(call)
        if mocked is not None or self.behavior is ToolBehavior.FAKE:
            return mocked
        if real is None:
            return {"error": f"tool {call.name!r} is not available to this agent"}
        try:
            if inspect.iscoroutinefunction(real):
                payload = await real()
            else:
                payload = await asyncio.to_thread(real)
                if inspect.isawaitable(payload):
                    payload = await _await(payload)
        except Exception as exc:  # a failing tool is an answer the agent must handle
            payload = {"error": f"{type(exc).__name__}: {exc}"}
        return payload


async def _await(value: Awaitable[object]) -> object:
    return await value


def _turn_mocks(turn: Turn) -> Iterable[ToolMock]:
    """Each mock with the expected call it answers: when a tool has as many mocks as
    expected calls, the k-th mock answers the k-th call (a played turn calling one tool
    twice with other arguments); otherwise the tool's last expected call."""
    calls: dict[str, list[ToolCall]] = {}
    mocked: dict[str, int] = {}
    for e in turn.expectations:
        if e.tool_call is not None:
            calls.setdefault(e.tool_call.name, []).append(e.tool_call)
        if e.mock_tool_response is not None:
            mocked[e.mock_tool_response.name] = mocked.get(e.mock_tool_response.name, 0) + 1
    used: dict[str, int] = {}
    for e in turn.expectations:
        if e.mock_tool_response is None:
            continue
        name = e.mock_tool_response.name
        named = calls.get(name, [])
        k = used.get(name, 0)
        used[name] = k + 1
        if named and len(named) == mocked[name]:
            call = named[k]
        else:
            call = named[-1] if named else ToolCall(name=name)
        yield ToolMock(call=call, response=e.mock_tool_response, note=e.note)


def golden_mocks(case: EvalCase, turn_index: int | None = None) -> list[ToolMock]:
    """The mocks of a golden conversation: one turn's (`turn_index`) or every turn's."""
    turns = case.reference or []
    if turn_index is not None:
        turns = turns[turn_index : turn_index + 1]
    return [m for t in turns for m in _turn_mocks(t)]


def scenario_mocks(case: EvalCase) -> list[ToolMock]:
    """The mocks of a scenario: its tool expectations that carry a mock response."""
    if case.scenario is None:
        return []
    return [
        ToolMock(
            call=e.tool_expectation.expected_tool_call,
            response=e.tool_expectation.mock_tool_response,
            note=e.note,
        )
        for e in case.scenario.expectations
        if e.tool_expectation is not None and e.tool_expectation.mock_tool_response is not None
    ]


def case_mocks(case: EvalCase, turn_index: int | None = None) -> list[ToolMock]:
    """Every mock a run of `case` may use (scenario mocks, else golden ones)."""
    if case.scenario is not None:
        return scenario_mocks(case)
    return golden_mocks(case, turn_index)
