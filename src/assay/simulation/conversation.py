"""`simulate`: one scenario conversation between the agent under test and the simulated user.

The loop, for a case with a `scenario`:

1. Resolve the persona (an unknown id ends the case as `CONFIG_ERROR`) and open an
   agent session with the engine's `SessionOptions` (tool hook with the scenario's
   mocks, starting state with `variable_overrides` applied).
2. `initiator` AGENT: the agent speaks first. Its session is sent a `UserInput` with no
   text and the event `conversation_start` (`OPENING_EVENT`); that opening turn is
   the first turn of the result and does not count as a user turn.
3. The first user message is the scenario's `starting_prompt`, verbatim, when it has
   one (no model call); every other one comes from the simulated user, who sees the
   conversation so far.
4. The conversation ends when the simulated user sends the stop signal (that reply is
   not sent to the agent) or after `max_turns` user messages (the scenario's, else the
   simulator's): `stopped_by` is "stop_signal" or "max_turns".

Failures never raise: the result carries the turns completed so far, `stopped_by`
"error", the error text and its CES error type (`RUNTIME_FAILURE` when the agent
raised, `QUOTA_EXHAUSTED` for a `QuotaExhaustedError` from either side,
`USER_SIMULATION_FAILURE` when the simulated user failed). Cancellation (the engine's
per-case timeout) propagates after the agent session is closed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.agents.base import Agent, AgentSession, SessionOptions
from assay.core.cases import EvalCase, Initiator, Turn, UserInput
from assay.core.error_types import ErrorType
from assay.errors import ConfigError, QuotaExhaustedError
from assay.simulation.personas import resolve_persona
from assay.simulation.simulator import UserSimulationError, UserSimulator

OPENING_EVENT = "conversation_start"

STOP_SIGNAL = "stop_signal"
MAX_TURNS = "max_turns"
ERROR = "error"


@dataclass
class SimulationResult:
    """One simulated conversation: its turns, why it ended, and any failure."""

    turns: list[Turn]
    stopped_by: str  # "stop_signal" | "max_turns" | "error"
    error: str | None = None
    error_type: ErrorType | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class _Failed(Exception):
    """Ends the conversation loop with an error text and its CES error type."""

    def __init__(self, message: str, error_type: ErrorType) -> None:
        super().__init__(message)
        self.message = message
        self.error_type = error_type


def _agent_failure(agent: Agent, exc: Exception, doing: str) -> _Failed:
    if isinstance(exc, QuotaExhaustedError):
        return _Failed(f"agent {agent.name} {doing}: {exc}", ErrorType.QUOTA_EXHAUSTED)
    return _Failed(
        f"agent {agent.name} raised {type(exc).__name__} {doing}: {exc}", ErrorType.RUNTIME_FAILURE
    )


async def _send(agent: Agent, session: AgentSession, user_input: UserInput, doing: str) -> Turn:
    try:
        turn = await session.send(user_input)
    except Exception as exc:  # the agent under test may raise anything
        raise _agent_failure(agent, exc, doing) from exc
    # Metrics read the simulated user's words from the turn: keep exactly what was sent.
    return (
        turn
        if turn.user_input == user_input
        else turn.model_copy(update={"user_input": user_input})
    )


async def simulate(
    agent: Agent,
    case: EvalCase,
    session: SessionOptions,
    simulator: UserSimulator,
    *,
    transcript: list[Turn] | None = None,
) -> SimulationResult:
    """Run `case.scenario` against `agent` with `simulator` as the user.

    `transcript`, when given, receives each turn as soon as it completes (and is the
    result's `turns`), so a caller that cancels the conversation, e.g. on a timeout,
    still has the turns so far.
    """
    scenario = case.scenario
    if scenario is None:
        return SimulationResult(
            [], ERROR, f"case {case.id!r} has no scenario to simulate", ErrorType.NOT_SUPPORTED
        )
    try:
        persona = resolve_persona(scenario.persona, simulator.options.personas)
    except ConfigError as exc:
        return SimulationResult([], ERROR, f"case {case.id!r}: {exc}", ErrorType.CONFIG_ERROR)
    max_turns = scenario.max_turns or simulator.options.max_turns
    metadata: dict[str, Any] = {
        "user_model": simulator.label,
        "persona": persona.id if persona is not None else None,
        "max_turns": max_turns,
        "initiator": scenario.initiator.value,
        "simulator_calls": 0,
    }
    turns: list[Turn] = transcript if transcript is not None else []
    try:
        try:
            agent_session = await agent.start_session(case, session)
        except Exception as exc:  # the agent under test may raise anything
            raise _agent_failure(agent, exc, "starting a session") from exc
        try:
            stopped_by = await _converse(
                agent, agent_session, case, simulator, persona, max_turns, turns, metadata
            )
        finally:
            try:
                await agent_session.close()
            except Exception as exc:  # a session that fails to close is the agent failing
                raise _agent_failure(agent, exc, "closing its session") from exc
    except _Failed as failed:
        metadata["user_turns"] = sum(1 for t in turns if t.user_input.event != OPENING_EVENT)
        return SimulationResult(turns, ERROR, failed.message, failed.error_type, metadata)
    metadata["user_turns"] = sum(1 for t in turns if t.user_input.event != OPENING_EVENT)
    return SimulationResult(turns, stopped_by, metadata=metadata)


async def _converse(
    agent: Agent,
    session: AgentSession,
    case: EvalCase,
    simulator: UserSimulator,
    persona: Any,
    max_turns: int,
    turns: list[Turn],
    metadata: dict[str, Any],
) -> str:
    """Alternate agent and simulated user into `turns`; returns why it stopped."""
    scenario = case.scenario
    assert scenario is not None  # checked by simulate
    if scenario.initiator is Initiator.AGENT:
        opening = UserInput(event=OPENING_EVENT)
        turns.append(await _send(agent, session, opening, "opening the conversation"))
    for sent in range(max_turns):
        if sent == 0 and scenario.starting_prompt:
            text = scenario.starting_prompt
        else:
            metadata["simulator_calls"] += 1
            try:
                move = await simulator.next_message(scenario, persona, turns)
            except QuotaExhaustedError as exc:
                raise _Failed(str(exc), ErrorType.QUOTA_EXHAUSTED) from exc
            except UserSimulationError as exc:
                raise _Failed(str(exc), ErrorType.USER_SIMULATION_FAILURE) from exc
            if move.text is None:
                metadata["stop_message"] = move.raw
                return STOP_SIGNAL
            text = move.text
        turns.append(await _send(agent, session, UserInput(text=text), f"on user turn {sent + 1}"))
    return MAX_TURNS
