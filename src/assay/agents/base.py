"""The agent adapter protocol: start a session for a case, send user inputs, get Turns."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from assay.model.core import EvalCase, Turn, UserInput


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

    async def start_session(self, case: EvalCase) -> AgentSession:
        """Open a fresh session seeded with the case's `session_input` state."""
        ...
