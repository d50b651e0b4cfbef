"""Seeding an ADK session with earlier turns (golden replay, run method STABLE).

The seeded events are real ADK session events: the tests check what the scripted
model is shown and which agent answers next.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from adk_fixtures.weather_app import CASE, Scripted, Tools, build, one_turn, scripted_models

from assay.agents.adk import AdkAgent
from assay.agents.base import SessionOptions
from assay.core.cases import AgentTransfer, Step, ToolCall, ToolResponse, Turn, UserInput


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    with scripted_models() as requests:
        yield requests


async def test_history_and_state_seed_the_session(scripted: Scripted) -> None:
    root_requests, _ = scripted
    history = [
        Turn(
            user_input=UserInput(text="weather in Paris?"),
            steps=[
                Step(tool_call=ToolCall(name="get_weather", args={"city": "Paris"})),
                Step(tool_response=ToolResponse(name="get_weather", response={"sky": "blue"})),
                Step(variables_update={"mood": "sunny"}),
            ],
            final_response="It is blue over Paris.",
        )
    ]
    tools = Tools()
    agent = AdkAgent(build(tools, instruction="Mood {mood}, plan {plan}."))
    turn = await one_turn(agent, "weather in Rome?", history=history, state={"plan": "gold"})
    assert tools.weather_runs == ["Rome"]  # only the new turn ran a tool
    first = root_requests[0]
    # The state (given, and set by the seeded turn) reached the instruction template.
    assert "Mood sunny, plan gold." in str(first.config.system_instruction)
    contents = [p.model_dump(exclude_none=True) for c in first.contents for p in c.parts or []]
    assert contents[0] == {"text": "weather in Paris?"}
    call_part, response_part = contents[1]["function_call"], contents[2]["function_response"]
    assert (call_part["name"], call_part["args"]) == ("get_weather", {"city": "Paris"})
    # The response without an id was paired with its call.
    assert response_part["id"] == call_part["id"]
    assert response_part["response"] == {"sky": "blue"}
    assert contents[3] == {"text": "It is blue over Paris."}
    assert contents[4] == {"text": "weather in Rome?"}
    assert turn.final_response == "Weather: {'city': 'Rome', 'forecast': 'sunny'}"


async def test_a_seeded_transfer_makes_the_sub_agent_answer_next(scripted: Scripted) -> None:
    root_requests, billing_requests = scripted
    history = [
        Turn(
            user_input=UserInput(text="I have a bill"),
            steps=[Step(agent_transfer=AgentTransfer(target_agent="billing"))],
            final_response="Billing here, how much?",
        )
    ]
    tools = Tools()
    turn = await one_turn(AdkAgent(build(tools)), "thirty euros", history=history)
    assert root_requests == []  # billing was talking, so billing answers
    assert len(billing_requests) == 2
    assert tools.payments == [30]
    assert turn.final_response == "Paid: {'paid': 30}"


async def test_unanswered_seeded_calls_are_left_out_unless_the_next_message_answers_them(
    scripted: Scripted,
) -> None:
    root_requests, _ = scripted
    history = [
        Turn(
            user_input=UserInput(text="weather in Paris?"),
            steps=[Step(tool_call=ToolCall(name="get_weather", args={"city": "Paris"}))],
            final_response="Sunny.",
        ),
        Turn(
            user_input=UserInput(text="where am I?"),
            steps=[Step(tool_call=ToolCall(name="get_location", args={}))],
        ),
    ]
    agent = AdkAgent(build(Tools()))
    # The client answers the last turn's call (a client-side tool) in its next message.
    client_answer = ToolResponse(name="get_location", response={"city": "Lyon"})
    session = await agent.start_session(CASE, SessionOptions(history=history))
    turn = await session.send(UserInput(tool_responses=[client_answer]))
    await session.close()
    contents = [p for c in root_requests[0].contents for p in c.parts or []]
    calls = [p.function_call for p in contents if p.function_call]
    answers = [p.function_response for p in contents if p.function_response]
    assert [c.name for c in calls] == ["get_location"]  # the unanswered Paris call is gone
    assert [a.name for a in answers] == ["get_location"]
    assert answers[0].id == calls[0].id and answers[0].response == {"city": "Lyon"}
    assert turn.final_response == "Weather: {'city': 'Lyon'}"
