"""The agent adapter protocol: start a session for a case, send user inputs, get Turns.

`Agent.start_session(case, options)` opens one conversation. `SessionOptions` carries
what the engine decides for that session:

- `tools`: the tool-executor hook (`assay.agents.tools.ToolHook`). Adapters that run
  tools themselves (OpenAI tools, ADK) ask it before each tool call, so FAKE / MIXED
  mocking works the same for every adapter. Adapters that never see tool calls (a plain
  callable, an HTTP endpoint that runs its own tools) may ignore it.
- `history`: earlier turns to seed the session with, as if they had happened (golden
  replay, run method STABLE: turn N runs in a fresh session holding the expected turns
  0..N-1).
- `state`: the session state to start from (the case's `session_input.state`, with a
  scenario's `variable_overrides` applied).

An adapter may also expose `app_details() -> dict | None` in ADK's shape
(`{"agent_details": {NAME: {name, instructions, tool_declarations}}}`); the engine puts
it in `case.metadata["app_details"]` so judges see the instructions and tools.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from assay.agents.tools import ToolHook
from assay.core.cases import EvalCase, Turn, UserInput


@dataclass
class SessionOptions:
    """What the engine gives a new session: tool hook, seeded history, starting state."""

    tools: ToolHook = field(default_factory=ToolHook)
    history: Sequence[Turn] = ()
    state: dict[str, Any] | None = None

    @classmethod
    def for_case(cls, case: EvalCase, **kwargs: Any) -> SessionOptions:
        """Options whose `state` is a copy of the case's session state (overrides applied)."""
        state = copy.deepcopy(case.session_input.state) if case.session_input else {}
        if case.scenario is not None and case.scenario.variable_overrides:
            state.update(copy.deepcopy(case.scenario.variable_overrides))
        kwargs.setdefault("state", state)
        return cls(**kwargs)


@runtime_checkable
class AgentSession(Protocol):
    """One conversation with the agent under test."""

    async def send(self, user_input: UserInput) -> Turn:
        """Send one user turn; return everything the agent did in reply."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class Agent(Protocol):
    """Something assay can run: adapters for callables, ADK agents, HTTP endpoints..."""

    name: str

    async def start_session(
        self, case: EvalCase, options: SessionOptions | None = None
    ) -> AgentSession:
        """Open a fresh session for `case` (options None: `SessionOptions.for_case`)."""
        ...


def app_details_of(agent: Agent) -> dict[str, object] | None:
    """The agent's instructions and tool declarations, when its adapter knows them."""
    describe = getattr(agent, "app_details", None)
    if not callable(describe):
        return None
    details = describe()
    return details if isinstance(details, dict) else None
