"""Golden replay: send a golden conversation's user turns to the agent (CES run methods).

- `STABLE`: every turn N runs in a fresh session seeded with the expected turns
  0..N-1, so one wrong answer early on does not derail the turns after it. The tool
  mocks are turn N's own `mock_tool_response` expectations.
- `NAIVE`: one session for the whole conversation; the agent sees its own earlier
  answers, and every turn's mocks are available throughout.

Without an explicit method, CES goldens replay STABLE and other conversations NAIVE
(`default_method`).

The seeded history is the golden turns as they were expected to go: a turn without a
recorded response takes its expected agent response, a turn without recorded steps
takes its expected tool calls (answered by their mock responses when given),
agent transfers and variable updates.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from assay.agents.base import Agent, SessionOptions
from assay.agents.tools import ToolBehavior, ToolHook, golden_mocks
from assay.config import expects_checks
from assay.core.cases import AgentTransfer, EvalCase, Step, ToolResponse, Turn
from assay.engine.infer import Inference, guarded, send_turn, with_tools_not_run
from assay.errors import parse_choice


class RunMethod(StrEnum):
    STABLE = "STABLE"
    NAIVE = "NAIVE"

    @classmethod
    def parse(cls, value: str | RunMethod) -> RunMethod:
        """Accept any case (`naive`, `NAIVE`); raise ConfigError naming the choices."""
        return parse_choice(cls, value, "run method")


def default_method(case: EvalCase) -> RunMethod:
    """The run method when none is asked for: each source format's own.

    CES goldens (turns carrying CES expectations, not only tool mocks) replay STABLE, as CES does by
    default; other conversations (ADK eval cases, recorded turns) run NAIVE, in one
    session, as `adk eval` runs them, so agents that keep memory in their session
    state behave as they do there.
    """
    reference = case.reference or []
    return RunMethod.STABLE if any(expects_checks(t) for t in reference) else RunMethod.NAIVE


def expected_turn(turn: Turn) -> Turn:
    """A golden turn as it was expected to happen (its expectations made into steps)."""
    updates: dict[str, object] = {}
    if turn.final_response is None:
        responses = [e.agent_response for e in turn.expectations if e.agent_response]
        if responses:
            updates["final_response"] = responses[-1]
    if not turn.steps:
        mocks = {
            e.mock_tool_response.name: e.mock_tool_response
            for e in turn.expectations
            if e.mock_tool_response is not None
        }
        steps: list[Step] = []
        for e in turn.expectations:
            if e.tool_call is not None:
                steps.append(Step(tool_call=e.tool_call))
                mock = mocks.get(e.tool_call.name)
                if mock is not None:
                    answer = ToolResponse(id=e.tool_call.id, name=mock.name, response=mock.response)
                    steps.append(Step(tool_response=answer))
            elif e.agent_transfer is not None:
                steps.append(Step(agent_transfer=AgentTransfer(target_agent=e.agent_transfer)))
            elif e.updated_variables is not None:
                steps.append(Step(variables_update=e.updated_variables))
        if steps:
            updates["steps"] = steps
    return turn.model_copy(update=updates) if updates else turn


def expected_history(turns: Sequence[Turn], upto: int) -> list[Turn]:
    """The expected turns 0..upto-1, to seed a STABLE session for turn `upto`."""
    return [expected_turn(t) for t in turns[:upto]]


async def replay(
    agent: Agent,
    case: EvalCase,
    *,
    behavior: ToolBehavior,
    method: RunMethod | None,
    timeout_s: float | None,
) -> Inference:
    """Run the case's user turns through `agent`; never raises for the agent's failures.

    `method` None: `default_method(case)`.
    """
    method = method or default_method(case)
    refs = case.user_turns()
    turns: list[Turn] = []
    hooks: list[ToolHook] = []

    async def stable() -> None:
        for index, ref in enumerate(refs):
            hook = ToolHook(behavior, golden_mocks(case, index))
            hooks.append(hook)
            options = SessionOptions.for_case(
                case, tools=hook, history=expected_history(refs, index)
            )
            session = await agent.start_session(case, options)
            try:
                turns.append(await send_turn(session, ref, hook))
            finally:
                await session.close()

    async def naive() -> None:
        hook = ToolHook(behavior, golden_mocks(case))
        hooks.append(hook)
        session = await agent.start_session(case, SessionOptions.for_case(case, tools=hook))
        try:
            for ref in refs:
                turns.append(await send_turn(session, ref, hook))
        finally:
            await session.close()

    inference = await guarded(stable if method is RunMethod.STABLE else naive, turns, timeout_s)
    return with_tools_not_run(inference, hooks)
