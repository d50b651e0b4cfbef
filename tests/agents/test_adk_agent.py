"""The ADK adapter on real ADK agents, real Python tools and ADK's Runner.

The model is `ScriptedLlm`, registered through ADK's `LLMRegistry` (adk_fixtures):
each test scripts how it answers, so everything else (the flow, tool execution,
callbacks, transfers, session state) is google-adk's own code.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any

import pytest
from adk_fixtures.scripted import (
    OUTPUT_TOKENS,
    PROMPT_TOKENS,
    call,
    last_function_response,
    reply,
    say,
    script,
    text,
)
from adk_fixtures.weather_app import (
    BILLING,
    CASE,
    ROOT,
    Scripted,
    Tools,
    build,
    mock,
    one_turn,
    scripted_models,
)
from google.adk.agents import LlmAgent
from google.adk.apps.app import App
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.tool_context import ToolContext
from google.genai import errors, types

from assay.agents.adk import AdkAgent
from assay.agents.base import SessionOptions
from assay.agents.tools import ToolBehavior, ToolHook
from assay.core.cases import (
    AgentMessage,
    AgentTransfer,
    Blob,
    Step,
    ToolCall,
    UserInput,
)
from assay.errors import AgentError, QuotaExhaustedError


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    with scripted_models() as requests:
        yield requests


async def test_tool_call_with_real_response_state_usage_and_latency(scripted: Scripted) -> None:
    tools = Tools()
    turn = await one_turn(AdkAgent(build(tools)), "weather in Paris?")
    assert tools.weather_runs == ["Paris"]
    kinds = [s.kind for s in turn.steps]
    assert kinds == ["agent_message", "tool_call", "tool_response", "variables_update"]
    assert turn.steps[0].agent_message == AgentMessage(author="root", text="Checking.")
    assert turn.tool_calls() == [ToolCall(id="call-1", name="get_weather", args={"city": "Paris"})]
    response = turn.tool_responses()[0]
    assert (response.id, response.name) == ("call-1", "get_weather")
    assert response.response == {"city": "Paris", "forecast": "sunny"}
    assert response.latency_s is not None and 0 <= response.latency_s < 5
    assert turn.steps[3].variables_update == {"last_city": "Paris"}
    assert turn.final_response == "Weather: {'city': 'Paris', 'forecast': 'sunny'}"
    # Two model calls: the tool call, then the answer.
    assert turn.usage is not None
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (
        2 * PROMPT_TOKENS,
        2 * OUTPUT_TOKENS,
    )
    assert turn.latency_s is not None and turn.latency_s > 0
    assert turn.user_input.text == "weather in Paris?"


async def test_fake_mock_answers_and_the_real_tool_never_runs(scripted: Scripted) -> None:
    tools = Tools()
    hook = ToolHook(ToolBehavior.FAKE, [mock("get_weather", {"forecast": "snow"}, city="Oslo")])
    turn = await one_turn(AdkAgent(build(tools)), "weather in Oslo?", tools=hook)
    assert tools.weather_runs == []
    assert turn.tool_responses()[0].response == {"forecast": "snow"}
    assert turn.final_response == "Weather: {'forecast': 'snow'}"
    assert hook.used == [0]
    # The tool never ran, so it never updated the state either.
    assert not any(s.variables_update for s in turn.steps)


async def test_fake_without_a_matching_mock_gives_the_agent_an_error(scripted: Scripted) -> None:
    tools = Tools()
    hook = ToolHook(ToolBehavior.FAKE, [mock("get_weather", {"forecast": "snow"}, city="Oslo")])
    turn = await one_turn(AdkAgent(build(tools)), "weather in Rome?", tools=hook)
    assert tools.weather_runs == []
    assert "no mock_tool_response matches" in turn.tool_responses()[0].response["error"]
    assert [c.args for c in hook.unmatched] == [{"city": "Rome"}]


async def test_non_dict_mock_payload_is_wrapped_as_result(scripted: Scripted) -> None:
    hook = ToolHook(ToolBehavior.FAKE, [mock("get_weather", "hail")])
    turn = await one_turn(AdkAgent(build(Tools())), "weather in Oslo?", tools=hook)
    assert turn.tool_responses()[0].response == {"result": "hail"}


async def test_mixed_mocks_one_tool_and_runs_the_other_for_real(scripted: Scripted) -> None:
    tools = Tools()
    agent = AdkAgent(build(tools))
    hook = ToolHook(ToolBehavior.MIXED, [mock("pay", {"paid": "mocked"})])
    session = await agent.start_session(CASE, SessionOptions(tools=hook))
    weather = await session.send(UserInput(text="weather in Lyon?"))
    bill = await session.send(UserInput(text="pay my bill"))
    await session.close()
    assert tools.weather_runs == ["Lyon"]  # no mock: the real tool answered
    assert weather.tool_responses()[0].response == {"city": "Lyon", "forecast": "sunny"}
    assert tools.payments == []  # mocked
    assert bill.final_response == "Paid: {'paid': 'mocked'}"


async def test_transfer_to_a_sub_agent(scripted: Scripted) -> None:
    tools = Tools()
    # FAKE without mocks: transfers still happen (they are not tools of the app), the
    # sub-agent's own tool is not run.
    hook = ToolHook(ToolBehavior.FAKE)
    turn = await one_turn(AdkAgent(build(tools)), "pay my bill", tools=hook)
    assert turn.steps[0] == Step(
        agent_message=AgentMessage(author="root", text="Let me hand you over.")
    )
    assert [s.kind for s in turn.steps[1:]] == [
        "tool_call",
        "tool_response",
        "agent_transfer",
        "tool_call",
        "tool_response",
    ]
    transfer_call = turn.steps[1].tool_call
    assert transfer_call is not None
    assert (transfer_call.name, transfer_call.args) == (
        "transfer_to_agent",
        {"agent_name": "billing"},
    )
    assert turn.steps[3].agent_transfer == AgentTransfer(target_agent="billing")
    assert turn.tool_calls()[1].name == "pay"
    assert tools.payments == []
    assert "not run" in turn.tool_responses()[1].response["error"]
    assert turn.final_response is not None and turn.final_response.startswith("Paid:")


async def test_concurrent_sessions_each_use_their_own_tool_hook(scripted: Scripted) -> None:
    tools = Tools()
    agent = AdkAgent(build(tools))
    fake = ToolHook(ToolBehavior.FAKE, [mock("get_weather", {"forecast": "mocked"})])
    real, mocked = await asyncio.gather(
        one_turn(agent, "weather in Nice?"), one_turn(agent, "weather in Bern?", tools=fake)
    )
    assert real.tool_responses()[0].response == {"city": "Nice", "forecast": "sunny"}
    assert mocked.tool_responses()[0].response == {"forecast": "mocked"}
    assert tools.weather_runs == ["Nice"]


async def test_user_callbacks_run_first_and_the_users_agent_is_untouched(
    scripted: Scripted,
) -> None:
    seen: list[str] = []

    def guard(tool: Any, args: dict[str, Any], tool_context: ToolContext) -> dict[str, Any] | None:
        seen.append(args["city"])
        return {"refused": True} if args["city"] == "Atlantis" else None

    tools = Tools()
    root = build(tools, before_tool_callback=guard)
    billing = root.sub_agents[0]
    assert isinstance(billing, LlmAgent)
    agent = AdkAgent(root)
    hook = ToolHook(ToolBehavior.FAKE, [mock("get_weather", {"forecast": "mocked"})])
    refused = await one_turn(agent, "weather in Atlantis?", tools=hook)
    mocked = await one_turn(agent, "weather in Paris?", tools=hook)
    assert seen == ["Atlantis", "Paris"]
    assert refused.tool_responses()[0].response == {"refused": True}
    assert mocked.tool_responses()[0].response == {"forecast": "mocked"}
    assert hook.used == [0]  # the refused call never reached the mock
    # The user's objects are as they were: same callback, same sub-agent and parent.
    assert root.before_tool_callback is guard
    assert billing.before_tool_callback is None
    assert root.sub_agents == [billing] and billing.parent_agent is root


async def test_app_details_list_each_agent_instructions_and_tools() -> None:
    def dynamic(ctx: Any) -> str:
        return "computed"

    tools = Tools()
    root = build(tools)
    billing = root.sub_agents[0]
    assert isinstance(billing, LlmAgent)
    billing.instruction = dynamic
    details = AdkAgent(root).app_details()["agent_details"]
    assert set(details) == {"root", "billing"}
    assert details["root"]["instructions"] == "You help with weather and bills."
    assert "computed at run time" in details["billing"]["instructions"]
    (tool_group,) = details["root"]["tool_declarations"]
    (declaration,) = tool_group["function_declarations"]
    assert declaration["name"] == "get_weather"
    assert declaration["description"] == "Return the weather in a city."
    schema = declaration.get("parameters_json_schema") or declaration.get("parameters")
    assert "city" in schema["properties"] and "tool_context" not in schema["properties"]
    assert details["billing"]["tool_declarations"][0]["function_declarations"][0]["name"] == "pay"


async def test_a_429_from_the_model_is_quota_exhausted() -> None:
    def exhausted(request: LlmRequest) -> LlmResponse:
        body = {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}
        raise errors.ClientError(429, body)

    with script(ROOT, exhausted), pytest.raises(QuotaExhaustedError, match="429"):
        await one_turn(AdkAgent(build(Tools())), "weather in Paris?")


async def test_other_model_failures_are_agent_errors() -> None:
    def broken(request: LlmRequest) -> LlmResponse:
        raise ValueError("model exploded")

    with script(ROOT, broken), pytest.raises(AgentError, match="model exploded") as raised:
        await one_turn(AdkAgent(build(Tools())), "weather in Paris?")
    assert not isinstance(raised.value, QuotaExhaustedError)


async def test_files_reach_the_model_and_events_alone_are_refused(scripted: Scripted) -> None:
    root_requests, _ = scripted
    agent = AdkAgent(build(Tools()))
    session = await agent.start_session(CASE)
    data = base64.b64encode(b"PNG...").decode()
    await session.send(
        UserInput(text="weather in Kyiv?", blobs=[Blob(mime_type="image/png", data=data)])
    )
    parts = root_requests[0].contents[-1].parts or []
    assert any(p.inline_data and p.inline_data.data == b"PNG..." for p in parts)
    with pytest.raises(AgentError, match="not named events"):
        await session.send(UserInput(event="welcome"))
    await session.close()


async def test_an_adk_app_runs_with_its_name_and_plugins(scripted: Scripted) -> None:
    from google.adk.plugins.base_plugin import BasePlugin

    class CountModelCalls(BasePlugin):
        calls = 0

        async def before_model_callback(self, **kwargs: Any) -> None:
            CountModelCalls.calls += 1

    app = App(name="weather_app", root_agent=build(Tools()), plugins=[CountModelCalls(name="c")])
    agent = AdkAgent(app)
    assert (agent.app_name, agent.name) == ("weather_app", "root")
    turn = await one_turn(agent, "weather in Paris?")
    assert turn.tool_calls()[0].args == {"city": "Paris"}
    assert CountModelCalls.calls == 2
    assert app.plugins[0].name == "c" and len(app.plugins) == 1


def test_not_an_adk_agent() -> None:
    with pytest.raises(AgentError, match="not an ADK agent"):
        AdkAgent(lambda text: text)


async def test_user_state_reaches_tools_through_send_variables(scripted: Scripted) -> None:
    seen: dict[str, Any] = {}

    def get_weather(city: str, tool_context: ToolContext) -> dict[str, Any]:
        """Weather."""
        seen.update(tool_context.state.to_dict())
        return {"ok": True}

    root = LlmAgent(name="root", model=ROOT, tools=[get_weather])
    session = await AdkAgent(root).start_session(CASE, SessionOptions(state={"tier": "gold"}))
    await session.send(UserInput(text="weather in Bonn?", variables={"unit": "C"}))
    await session.close()
    assert seen == {"tier": "gold", "unit": "C"}


def test_only_the_last_final_text_is_the_response_and_thoughts_are_skipped() -> None:
    from google.adk.events.event import Event

    from assay.agents._adk_events import events_to_turn

    def event(author: str, *parts: types.Part, **kw: Any) -> Event:
        return Event(author=author, content=types.Content(role="model", parts=list(parts)), **kw)

    events = [
        event("user", text("hi")),
        event("planner", types.Part(text="thinking...", thought=True), text("Plan ready.")),
        event("writer", text("Draft one."), partial=True),
        event("writer", text("Here is"), text("the answer.")),
        event("writer", error_code="SAFETY", error_message="blocked"),
    ]
    turn = events_to_turn(events, UserInput(text="hi"))
    assert turn.agent_messages() == [AgentMessage(author="planner", text="Plan ready.")]
    assert turn.final_response == "Here is\nthe answer."
    assert turn.error == "writer: SAFETY: blocked"
    assert turn.usage is None


def test_grounding_metadata_of_events_is_kept_on_the_turn() -> None:
    from google.adk.events.event import Event

    from assay.agents._adk_events import events_to_turn
    from assay.metrics.judged.context import grounding_before, render_grounding

    grounding = types.GroundingMetadata(
        web_search_queries=["weather Bonn"],
        grounding_chunks=[
            types.GroundingChunk(web=types.GroundingChunkWeb(uri="https://w.example"))
        ],
    )
    events = [
        Event(author="user", content=types.Content(role="user", parts=[text("hi")])),
        Event(author="searcher", content=types.Content(role="model", parts=[text("Looking.")])),
        Event(
            author="searcher",
            content=types.Content(role="model", parts=[text("Sunny in Bonn.")]),
            grounding_metadata=grounding,
        ),
    ]
    turn = events_to_turn(events, UserInput(text="hi"))
    assert turn.final_response == "Sunny in Bonn."
    (kept,) = turn.grounding or []
    assert (kept.step, kept.author, kept.first_step) == (1, "searcher", 1)
    assert kept.metadata["web_search_queries"] == ["weather Bonn"]
    # The intermediate message "Looking." (step 0) came before the grounded event.
    assert grounding_before(turn, 0) == [] and grounding_before(turn, 1) == [kept]
    assert "https://w.example" in render_grounding(turn.grounding)


async def test_tools_of_an_agent_used_as_a_tool_are_mocked_too() -> None:
    from google.adk.tools.agent_tool import AgentTool

    tools = Tools()
    helper = LlmAgent(
        name="forecaster", model=BILLING, description="Forecasts.", tools=[tools.get_weather]
    )

    def helper_rule(request: LlmRequest) -> LlmResponse:
        answer = last_function_response(request)
        if answer is not None:
            return say(f"Forecast: {answer.response}")
        return reply(call("get_weather", city="Turin"))

    def outer_rule(request: LlmRequest) -> LlmResponse:
        answer = last_function_response(request)
        if answer is not None:
            return say(f"Outer: {answer.response}")
        return reply(call("forecaster", request="Turin"))

    root = LlmAgent(name="root", model=ROOT, tools=[AgentTool(agent=helper)])
    hook = ToolHook(ToolBehavior.FAKE, [mock("get_weather", {"forecast": "fog"})])
    with script(ROOT, outer_rule), script(BILLING, helper_rule):
        turn = await one_turn(AdkAgent(root), "weather?", tools=hook)
    assert tools.weather_runs == []  # the inner tool was mocked
    assert hook.used == [0]
    assert [c.name for c in turn.tool_calls()] == ["forecaster"]  # the agent tool itself ran
    assert "fog" in str(turn.tool_responses()[0].response)
    assert helper.before_tool_callback is None
