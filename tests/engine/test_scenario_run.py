"""Scenario cases in a run: a simulated user on the stand-in server talks to a real agent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import assay.simulation
from assay.agents import CallableAgent
from assay.agents.tools import ToolBehavior, ToolHook
from assay.core import EvalCase, EvalSet, Score, Status, Step, ToolCall, ToolResponse, Turn
from assay.core.cases import Scenario, ScenarioExpectation, ToolExpectation
from assay.core.error_types import ErrorType
from assay.engine import RunOptions, build_metrics, run
from assay.metrics.base import Metric
from assay.simulation import SimulatorOptions
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest

LARGE_PARTY = (
    Path(__file__).resolve().parents[2]
    / "tests"
    / "data"
    / "realworld/ces/bella_notte/evaluations/Scenario_-_Large_Party_Rejection.json"
)


class _Turns(Metric):
    """1.0 per turn with an agent response (scores partial conversations too)."""

    name: ClassVar[str] = "answered"
    default_threshold = 1.0

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        return Score(1.0 if actual.final_response else 0.0)


class _Users:
    """The stand-in's script: simulated user messages in order, then the stop signal.

    `first_only`: every conversation gets the first message, then stops once the agent
    answered (for conversations running at the same time).
    """

    def __init__(self, *messages: str | StandinReply, first_only: bool = False) -> None:
        self.messages = list(messages)
        self.first_only = first_only
        self.simulator_calls = 0

    def __call__(self, request: StandinRequest) -> str | StandinReply:
        if "You play a human user" not in request.messages[0]["content"]:
            return json.dumps({"explanation": "fine", "score": 1})
        self.simulator_calls += 1
        if self.first_only:
            answered = "events@bellanotte.com" in request.messages[-1]["content"]
            return "</finished>" if answered else self.messages[0]
        return self.messages.pop(0) if self.messages else "</finished>"


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer("unused") as srv:
        yield srv


def _simulator(server: JudgeServer, users: _Users, **kw: Any) -> SimulatorOptions:
    server.set_script(users)
    return SimulatorOptions(
        model="openai:user-sim", base_url=server.openai_base_url, max_retries=0, **kw
    )


async def _maitre(prompt: str, tools: ToolHook) -> Turn:
    """Rejects parties over 8 after recording the size with set_party_size."""
    if "12" not in prompt:
        return Turn(final_response="Welcome to Bella Notte! How many guests?")
    call = ToolCall(id="p1", name="set_party_size", args={"size": 12})
    payload, _ = await tools.execute(call, lambda: {"stored": 12})
    return Turn(
        steps=[
            Step(tool_call=call),
            Step(tool_response=ToolResponse(id="p1", name="set_party_size", response=payload)),
        ],
        final_response="We seat parties of 1-8; for 12 please write to events@bellanotte.com.",
    )


def _scenario_case(case_id: str = "s1", **scenario: Any) -> EvalCase:
    scenario.setdefault("task", "Book a table for 12.")
    return EvalCase(id=case_id, scenario=Scenario(**scenario))


def test_real_ces_scenario_runs_five_times_by_default(server: JudgeServer) -> None:
    from assay import formats

    users = _Users("Hi, a table for 12 people tonight please.", first_only=True)
    evalset = formats.load(LARGE_PARTY)
    result = run(
        [evalset],
        [*build_metrics(names=["scenario_expectations"]), _Turns()],
        agent=CallableAgent(_maitre, name="maitre"),
        options=RunOptions(simulator=_simulator(server, users), tool_behavior=ToolBehavior.MIXED),
    )
    assert sorted(c.run_index for c in result.cases) == [0, 1, 2, 3, 4]
    assert users.simulator_calls == 10  # one message and one stop per conversation
    first = result.cases[0]
    assert first.error is None, first.error
    (turn,) = [inv.actual for inv in first.invocations]
    assert turn is not None and turn.user_input.text == "Hi, a table for 12 people tonight please."
    assert turn.tool_responses()[0].response == {"stored": 12}
    assert turn.tool_responses()[0].latency_s is not None
    assert first.metrics["scenario_expectations"].score == 1.0, first.metrics
    assert result.summary["runs"] == 5 and result.summary["pass^5"] == 1.0
    # Why each conversation ended travels with its result.
    conversation = first.conversation
    assert conversation is not None
    assert conversation["stopped_by"] == "stop_signal"
    assert conversation["user_turns"] == 1 and conversation["simulator_calls"] == 2
    assert conversation["user_model"] == "openai:user-sim"


def test_scenario_without_a_user_model_is_not_supported() -> None:
    result = run(
        [EvalSet(id="s", cases=[_scenario_case()])],
        [_Turns()],
        agent=CallableAgent(_maitre, name="maitre"),
    )
    (case,) = result.cases  # one run: nothing would differ between runs
    assert case.error_type == ErrorType.NOT_SUPPORTED
    assert "--user-model" in (case.error or "") and "openai:NAME" in (case.error or "")
    assert case.status is Status.NOT_EVALUATED


def test_simulator_failure_keeps_and_scores_the_partial_conversation(
    server: JudgeServer,
) -> None:
    users = _Users("A table for 12, please.", StandinReply.server_error(500, "down"))
    case = _scenario_case(starting_prompt="Hello there")
    result = run(
        [EvalSet(id="s", cases=[case])],
        [_Turns()],
        agent=CallableAgent(_maitre, name="maitre"),
        options=RunOptions(runs=1, simulator=_simulator(server, users)),
    )
    (only,) = result.cases
    assert only.error_type == ErrorType.USER_SIMULATION_FAILURE, only.error
    assert [inv.actual.user_input.text for inv in only.invocations if inv.actual] == [
        "Hello there",
        "A table for 12, please.",
    ]
    assert only.metrics["answered"].score == 1.0
    assert only.status is Status.NOT_EVALUATED and not only.failure


def test_fake_tools_answer_with_the_scenario_mocks(server: JudgeServer) -> None:
    mocked = ScenarioExpectation(
        tool_expectation=ToolExpectation(
            expected_tool_call=ToolCall(name="set_party_size", args={"size": 12}),
            mock_tool_response=ToolResponse(name="set_party_size", response={"mocked": True}),
        )
    )
    case = _scenario_case(starting_prompt="Table for 12", expectations=[mocked])
    result = run(
        [EvalSet(id="s", cases=[case])],
        [_Turns()],
        agent=CallableAgent(_maitre, name="maitre"),
        options=RunOptions(
            runs=1, simulator=_simulator(server, _Users()), tool_behavior=ToolBehavior.FAKE
        ),
    )
    (turn,) = [inv.actual for inv in result.cases[0].invocations]
    assert turn is not None and turn.tool_responses()[0].response == {"mocked": True}


def test_scenario_timeout_is_a_runtime_failure(server: JudgeServer) -> None:
    async def stalls(prompt: str) -> str:
        await asyncio.sleep(5)
        return "late"

    result = run(
        [EvalSet(id="s", cases=[_scenario_case(starting_prompt="hi")])],
        [_Turns()],
        agent=CallableAgent(stalls, name="stalls"),
        options=RunOptions(runs=1, timeout_s=0.3, simulator=_simulator(server, _Users())),
    )
    (only,) = result.cases
    assert only.error == "scenario conversation timed out after 0.3s"
    assert only.error_type == ErrorType.RUNTIME_FAILURE and only.status is Status.FAILED


def test_scenario_timeout_keeps_the_turns_completed_before_it(server: JudgeServer) -> None:
    calls = 0

    async def slows_down(prompt: str) -> str:
        nonlocal calls
        calls += 1
        if calls > 1:
            await asyncio.sleep(5)
        return "How many guests?"

    users = _Users("Twelve of us.")
    result = run(
        [EvalSet(id="s", cases=[_scenario_case(starting_prompt="hi")])],
        [_Turns()],
        agent=CallableAgent(slows_down, name="slows"),
        options=RunOptions(runs=1, timeout_s=1.0, simulator=_simulator(server, users)),
    )
    (only,) = result.cases
    assert only.error == "scenario conversation timed out after 1s (completed 1 turn(s))"
    assert [inv.actual.user_input.text for inv in only.invocations if inv.actual] == ["hi"]
    assert only.metrics["answered"].score == 1.0


def test_one_simulator_per_run_closed_at_the_end(
    server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []

    class Counting(assay.simulation.UserSimulator):
        def __init__(self, options: SimulatorOptions) -> None:
            events.append("open")
            super().__init__(options)

        async def aclose(self) -> None:
            events.append("close")
            await super().aclose()

    monkeypatch.setattr(assay.simulation, "UserSimulator", Counting)
    cases = [_scenario_case(f"s{i}", starting_prompt="Table for 12") for i in range(3)]
    golden = EvalCase(id="g", reference=[Turn(user_input="Table for 12")])
    result = run(
        [EvalSet(id="s", cases=[*cases, golden])],
        [_Turns()],
        agent=CallableAgent(_maitre, name="maitre"),
        options=RunOptions(simulator=_simulator(server, _Users()), concurrency=4),
    )
    assert events == ["open", "close"]
    # per-case run counts: scenarios 5 times, the golden once; pass@k per k
    assert len(result.cases) == 3 * 5 + 1
    assert result.repeated["s/g"]["runs"] == 1 and result.repeated["s/s0"]["runs"] == 5
    assert result.summary["runs"] == 5 and result.summary["pass@5"] == 1.0
    assert "pass@1" not in result.summary
