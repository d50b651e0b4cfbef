"""Scenario cases: a simulated user (`assay.simulation`) talks to the agent under test.

One `UserSimulator` serves every scenario of a run (`user_simulator`). Each case gets a
session whose tool hook answers with the scenario's `tool_expectation.mock_tool_response`
mocks (under FAKE / MIXED), and the conversation runs within the per-case timeout.
`simulate` reports agent and simulator failures in its result (RUNTIME_FAILURE,
USER_SIMULATION_FAILURE, QUOTA_EXHAUSTED) with the turns completed so far; they
become the case's error and the partial conversation is still scored.

Without a user model the case is NOT_SUPPORTED, with a message saying how to give one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from assay.agents.base import Agent, SessionOptions
from assay.agents.tools import ToolBehavior, ToolHook, scenario_mocks
from assay.core.cases import EvalCase, Turn
from assay.core.error_types import ErrorType
from assay.engine.infer import Inference, fill_tool_latencies, guarded, with_tools_not_run

if TYPE_CHECKING:
    from assay.simulation import SimulationResult, SimulatorOptions, UserSimulator

NO_AGENT = "scenario cases need an agent (--agent) and a simulated user (--user-model)"


def simulates(options: SimulatorOptions | None) -> bool:
    """Whether scenario cases can run: a user model is configured."""
    return options is not None and options.model is not None


@asynccontextmanager
async def user_simulator(
    options: SimulatorOptions | None, needed: bool
) -> AsyncIterator[UserSimulator | None]:
    """The run's simulated user (None when no scenario runs or no model is set); it
    paces its calls through the run's model registry, found in the context."""
    if not needed or options is None or not simulates(options):
        yield None
        return
    from assay.simulation import UserSimulator

    simulator = UserSimulator(options)
    try:
        yield simulator
    finally:
        await simulator.aclose()


async def run_scenario(
    agent: Agent,
    case: EvalCase,
    *,
    behavior: ToolBehavior,
    simulator: UserSimulator | None,
    timeout_s: float | None,
) -> Inference:
    """Simulate the scenario's conversation with `agent`; never raises for its failures."""
    if simulator is None:
        from assay.simulation.options import NO_USER_MODEL_MESSAGE

        return Inference(None, error=NO_USER_MODEL_MESSAGE, error_type=ErrorType.NOT_SUPPORTED)
    from assay.simulation import simulate

    hook = ToolHook(behavior, scenario_mocks(case))
    session = SessionOptions.for_case(case, tools=hook)
    outcome: list[SimulationResult] = []
    # `simulate` fills `turns` as each one completes, so a timeout keeps them.
    turns: list[Turn] = []

    async def work() -> None:
        outcome.append(await simulate(agent, case, session, simulator, transcript=turns))

    inference = await guarded(work, turns, timeout_s, label="scenario conversation")
    if not outcome:  # timed out, or the simulation itself raised
        user_turns = sum(1 for t in turns if t.user_input.text is not None)
        timed_out = " timed out after " in (inference.error or "")
        stopped = "timeout" if timed_out else "error"
        inference.conversation = {"stopped_by": stopped, "user_turns": user_turns}
        return inference
    result = outcome[0]
    timings = list(hook.timings)
    inference.turns = [
        t.model_copy(update={"steps": fill_tool_latencies(t.steps, timings)}) if timings else t
        for t in result.turns
    ]
    inference.error, inference.error_type = result.error, result.error_type
    inference.conversation = {"stopped_by": result.stopped_by, **result.metadata}
    return with_tools_not_run(inference, [hook])
