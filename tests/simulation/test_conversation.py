"""`simulate` against the OpenAI-compatible stand-in on 127.0.0.1 with a CallableAgent."""

from __future__ import annotations

import asyncio

import pytest
from simulation_support import Recorder, simulator

from assay.agents.base import SessionOptions
from assay.agents.callable import CallableAgent
from assay.core.cases import EvalCase, Initiator, Scenario, Turn, UserFact
from assay.core.error_types import ErrorType
from assay.errors import QuotaExhaustedError
from assay.simulation import OPENING_EVENT, SimulationResult, UserSimulator, simulate
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest


def _case(**scenario: object) -> EvalCase:
    fields: dict[str, object] = {"task": "Book a table for two tonight"}
    fields.update(scenario)
    return EvalCase(id="booking", scenario=Scenario.model_validate(fields))


def _run(agent: CallableAgent, case: EvalCase, sim: UserSimulator) -> SimulationResult:
    async def go() -> SimulationResult:
        try:
            return await simulate(agent, case, SessionOptions.for_case(case), sim)
        finally:
            await sim.aclose()

    return asyncio.run(go())


def test_starting_prompt_is_sent_verbatim_and_the_stop_signal_ends_it(
    server: JudgeServer,
) -> None:
    rec = Recorder()
    sim = simulator(server, ["For two, at 8pm.", "Thanks, that's all. </finished>"])
    case = _case(
        starting_prompt="  Hi, a table please ", user_facts=[UserFact(name="party", value="2")]
    )
    result = _run(rec.agent(), case, sim)
    assert result.stopped_by == "stop_signal" and result.error is None
    # verbatim: not stripped, and no model call was made for it
    assert [t.user_input.text for t in result.turns] == [
        "  Hi, a table please ",
        "For two, at 8pm.",
    ]
    assert [i.text for i in rec.inputs] == ["  Hi, a table please ", "For two, at 8pm."]
    assert len(server.requests) == 2
    assert result.metadata["simulator_calls"] == 2
    assert "</finished>" in result.metadata["stop_message"]
    # the simulated user saw the task, the user facts and the agent's replies, not tools
    first = server.requests[0]
    assert "Book a table for two tonight" in first.system and "- party: 2" in first.system
    assert "agent: agent saw:   Hi, a table please" in first.user
    assert "user: For two, at 8pm." in server.requests[1].user


def test_a_never_stopping_user_hits_max_turns(server: JudgeServer) -> None:
    rec = Recorder()
    sim = simulator(server, StandinReply(text="And another thing..."), max_turns=7)
    result = _run(rec.agent(), _case(max_turns=3), sim)
    assert result.stopped_by == "max_turns" and result.error is None
    assert len(result.turns) == 3 and len(server.requests) == 3
    # without scenario.max_turns the simulator's own limit applies
    sim = simulator(server, StandinReply(text="More please"), max_turns=2)
    result = _run(Recorder().agent(), _case(), sim)
    assert result.stopped_by == "max_turns" and len(result.turns) == 2


def test_a_persistent_server_error_is_a_user_simulation_failure_with_partial_turns(
    server: JudgeServer,
) -> None:
    def script(request: StandinRequest) -> StandinReply:
        return StandinReply.server_error(503, "overloaded")

    sim = simulator(server, script, max_retries=1)
    result = _run(Recorder().agent(), _case(starting_prompt="Hello"), sim)
    assert result.error_type == ErrorType.USER_SIMULATION_FAILURE
    assert result.stopped_by == "error"
    assert [t.user_input.text for t in result.turns] == ["Hello"]  # kept
    assert "503" in (result.error or "") and "openai:user-sim" in (result.error or "")
    assert len(server.requests) == 2  # one retry by the judge client's policy


def test_garbage_and_empty_replies_are_retried_once_then_fail(server: JudgeServer) -> None:
    sim = simulator(server, [StandinReply.garbage(), StandinReply.garbage()])
    result = _run(Recorder().agent(), _case(), sim)
    assert result.error_type == ErrorType.USER_SIMULATION_FAILURE and result.turns == []
    assert "2 attempts" in (result.error or "") and len(server.requests) == 2

    sim = simulator(server, ['"  "', "user: I'd like a table"])
    result = _run(Recorder().agent(), _case(max_turns=1), sim)
    assert result.error is None and result.turns[0].user_input.text == "I'd like a table"


def test_a_persistent_429_is_quota_exhausted(server: JudgeServer) -> None:
    sim = simulator(server, StandinReply.rate_limited(None), max_retries=1)
    result = _run(Recorder().agent(), _case(starting_prompt="Hi"), sim)
    assert result.error_type == ErrorType.QUOTA_EXHAUSTED
    assert "429" in (result.error or "") and len(result.turns) == 1


def test_an_agent_raising_is_a_runtime_failure(server: JudgeServer) -> None:
    def flaky(text: str) -> str:
        if "second" in text:
            raise ValueError("database is down")
        return "ok"

    sim = simulator(server, ["the second message"])
    result = _run(CallableAgent(flaky, name="flaky"), _case(starting_prompt="first"), sim)
    assert result.error_type == ErrorType.RUNTIME_FAILURE and result.stopped_by == "error"
    assert "ValueError" in (result.error or "") and "database is down" in (result.error or "")
    assert "user turn 2" in (result.error or "")
    assert [t.final_response for t in result.turns] == ["ok"]

    async def out_of_quota(text: str) -> str:
        raise QuotaExhaustedError("model endpoint kept answering 429")

    sim = simulator(server, ["unused"])
    result = _run(CallableAgent(out_of_quota), _case(starting_prompt="hi"), sim)
    assert result.error_type == ErrorType.QUOTA_EXHAUSTED


def test_agent_initiated_conversation(server: JudgeServer) -> None:
    rec = Recorder()
    sim = simulator(server, ["A table for two, please.", "</finished>"])
    case = _case(initiator=Initiator.AGENT)
    result = _run(rec.agent(), case, sim)
    assert result.stopped_by == "stop_signal"
    opening = result.turns[0]
    assert opening.user_input.text is None and opening.user_input.event == OPENING_EVENT
    assert rec.inputs[0] == opening.user_input
    assert result.turns[1].user_input.text == "A table for two, please."
    assert result.metadata["user_turns"] == 1 and result.metadata["initiator"] == "AGENT"
    # the user's first message was written after seeing the agent's greeting
    assert "agent: Welcome to Bella Notte" in server.requests[0].user


def test_starting_prompt_follows_an_agent_opening(server: JudgeServer) -> None:
    rec = Recorder()
    sim = simulator(server, [])  # the model is never asked
    case = _case(initiator=Initiator.AGENT, starting_prompt="Hello there", max_turns=1)
    result = _run(rec.agent(), case, sim)
    assert [t.user_input.text for t in result.turns] == [None, "Hello there"]
    assert result.stopped_by == "max_turns" and server.requests == []


def test_temperature_and_concurrent_conversations_share_one_simulator(
    server: JudgeServer,
) -> None:
    sim = simulator(server, StandinReply(text="</finished>", delay=0.2), temperature=0.7)

    async def go() -> list[SimulationResult]:
        cases = [_case(starting_prompt=f"hello {i}") for i in range(8)]
        try:
            return await asyncio.gather(
                *(simulate(Recorder().agent(), c, SessionOptions.for_case(c), sim) for c in cases)
            )
        finally:
            await sim.aclose()

    results = asyncio.run(go())
    assert all(r.stopped_by == "stop_signal" and len(r.turns) == 1 for r in results)
    assert server.peak_in_flight == 8  # not serialised
    assert {r.temperature for r in server.requests} == {0.7}


def test_a_cancelled_conversation_leaves_its_turns_in_the_transcript(server: JudgeServer) -> None:
    sim = simulator(server, StandinReply(text="still here", delay=5.0))
    case = _case(starting_prompt="first")
    transcript: list[Turn] = []

    async def go() -> None:
        session = SessionOptions.for_case(case)
        try:
            await asyncio.wait_for(
                simulate(Recorder().agent(), case, session, sim, transcript=transcript), 0.5
            )
        finally:
            await sim.aclose()

    with pytest.raises(TimeoutError):
        asyncio.run(go())
    assert [t.user_input.text for t in transcript] == ["first"]
