"""OpenAIToolsAgent against the OpenAI-compatible stand-in on 127.0.0.1, real SDK and tools."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.agents.base import SessionOptions, app_details_of
from assay.agents.openai_tools import NOT_RECORDED, OpenAIToolsAgent, history_messages
from assay.agents.tools import ToolBehavior, ToolHook, ToolMock
from assay.config import load_config
from assay.core.cases import (
    AgentMessage,
    EvalCase,
    EvalSet,
    Expectation,
    SessionInput,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    UserInput,
)
from assay.engine import RunMethod, RunOptions, arun, build_metrics
from assay.errors import AgentError, QuotaExhaustedError
from assay.formats import load
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openai_tools"
calls_run: list[tuple[str, dict[str, Any]]] = []
_lock = threading.Lock()


def get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
    """Today's weather.

    Args:
        city: The city.
        unit: celsius or fahrenheit.
    """
    with _lock:
        calls_run.append(("get_weather", {"city": city, "unit": unit}))
    return {"city": city, "high": 24 if unit == "celsius" else 75}


async def book_table(people: int, state: dict[str, Any]) -> str:
    """Book a table (async tool that writes the session state)."""
    await asyncio.sleep(0)
    with _lock:
        calls_run.append(("book_table", {"people": people}))
    state["booking"] = {"people": people}
    return f"booked for {people}"


def broken(reason: str) -> str:
    """A tool that fails."""
    raise RuntimeError(f"backend down: {reason}")


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    calls_run.clear()


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer("unused") as running:
        yield running


def make_agent(server: JudgeServer, **kwargs: Any) -> OpenAIToolsAgent:
    kwargs.setdefault("instructions", "You help with dinner plans.")
    return OpenAIToolsAgent(
        "standin-model",
        [get_weather, book_table, broken],
        base_url=server.openai_base_url,
        api_key="test-key",
        **kwargs,
    )


def weather(city: str, call_id: str | None = None, **extra: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"name": "get_weather", "arguments": {"city": city, **extra}}
    if call_id:
        call["id"] = call_id
    return call


async def one_turn(
    agent: OpenAIToolsAgent, text: str, options: SessionOptions | None = None
) -> Turn:
    session = await agent.start_session(EvalCase(id="c"), options)
    try:
        return await session.send(UserInput(text=text))
    finally:
        await session.close()


async def test_tool_round_trip_with_real_tools(server: JudgeServer) -> None:
    server.set_script(
        [
            StandinReply(
                "Checking both.",
                tool_calls=[weather("Paris", "call-p"), weather("Oslo", "call-o", unit="f")],
                input_tokens=30,
                output_tokens=12,
            ),
            StandinReply("Paris 24, Oslo 75.", input_tokens=50, output_tokens=5),
        ]
    )
    agent = make_agent(server)
    turn = await one_turn(agent, "Weather in Paris and Oslo?")
    assert [s.kind for s in turn.steps] == [
        "agent_message",
        "tool_call",
        "tool_response",
        "tool_call",
        "tool_response",
    ]
    assert turn.steps[0].agent_message == AgentMessage(
        author="standin-model", text="Checking both."
    )
    assert turn.tool_calls() == [
        ToolCall(id="call-p", name="get_weather", args={"city": "Paris"}),
        ToolCall(id="call-o", name="get_weather", args={"city": "Oslo", "unit": "f"}),
    ]
    responses = turn.tool_responses()
    assert [(r.id, r.response) for r in responses] == [
        ("call-p", {"city": "Paris", "high": 24}),
        ("call-o", {"city": "Oslo", "high": 75}),
    ]
    assert all(r.latency_s is not None and r.latency_s >= 0 for r in responses)
    assert calls_run == [
        ("get_weather", {"city": "Paris", "unit": "celsius"}),
        ("get_weather", {"city": "Oslo", "unit": "f"}),
    ]
    assert turn.final_response == "Paris 24, Oslo 75."
    assert turn.usage is not None
    assert (turn.usage.input_tokens, turn.usage.output_tokens) == (80, 17)
    assert turn.latency_s is not None and turn.latency_s > 0
    first, second = server.requests
    assert first.system == "You help with dinner plans."
    assert [t["name"] for t in first.tools] == ["get_weather", "book_table", "broken"]
    assert first.tools[0]["parameters"]["required"] == ["city"]
    # the results went back under the model's call ids, after its assistant message
    assert second.tool_results == (
        {"id": "call-p", "name": "get_weather", "content": '{"city": "Paris", "high": 24}'},
        {"id": "call-o", "name": "get_weather", "content": '{"city": "Oslo", "high": 75}'},
    )
    assert [m["role"] for m in second.body["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
    ]
    assert second.body["messages"][2]["tool_calls"][1]["id"] == "call-o"
    assert not server.errors


async def test_several_rounds_async_tool_and_state_updates(server: JudgeServer) -> None:
    server.set_script(
        [
            StandinReply(tool_calls=[weather("Paris")]),
            StandinReply(tool_calls=[{"name": "book_table", "arguments": {"people": "4"}}]),
            StandinReply("Booked for 4; it will be warm."),
            StandinReply("Still booked."),
        ]
    )
    agent = make_agent(server)
    state: dict[str, Any] = {"user": "ann"}
    session = await agent.start_session(EvalCase(id="c"), SessionOptions(state=state))
    turn = await session.send(UserInput(text="Book dinner for 4 if it's warm"))
    assert [s.kind for s in turn.steps] == [
        "tool_call",
        "tool_response",
        "tool_call",
        "tool_response",
        "variables_update",
    ]
    assert turn.steps[-1].variables_update == {"booking": {"people": 4}}
    assert turn.tool_responses()[1].response == "booked for 4"
    assert state == {"user": "ann", "booking": {"people": 4}}
    assert [name for name, _ in calls_run] == ["get_weather", "book_table"]
    # the next turn continues the same conversation
    await session.send(UserInput(text="thanks"))
    last = server.requests[-1]
    roles = [m["role"] for m in last.messages]
    assert roles == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert last.messages[-2]["content"] == "Booked for 4; it will be warm."


async def _paris_mocked_turn(server: JudgeServer, behavior: ToolBehavior) -> tuple[Turn, ToolHook]:
    """One turn calling the weather of Paris and Rome, with Paris's response mocked."""
    server.set_script([StandinReply(tool_calls=[weather("Paris"), weather("Rome")]), "ok"])
    mock = ToolMock(
        call=ToolCall(name="get_weather", args={"city": "Paris"}),
        response=ToolResponse(name="get_weather", response={"high": -5}),
    )
    hook = ToolHook(behavior, [mock])
    turn = await one_turn(make_agent(server), "weather?", SessionOptions(tools=hook))
    return turn, hook


async def test_fake_mocks_answer_and_the_real_tool_is_not_run(server: JudgeServer) -> None:
    turn, hook = await _paris_mocked_turn(server, ToolBehavior.FAKE)
    assert calls_run == []
    paris, rome = turn.tool_responses()
    assert paris.response == {"high": -5}
    assert "no mock_tool_response matches" in rome.response["error"]
    assert hook.used == [0] and [c.args for c in hook.unmatched] == [{"city": "Rome"}]
    sent = [json.loads(r["content"]) for r in server.requests[1].tool_results]
    assert sent[0] == {"high": -5} and "error" in sent[1]


async def test_mixed_mocks_what_matches_and_runs_the_rest(server: JudgeServer) -> None:
    turn, _hook = await _paris_mocked_turn(server, ToolBehavior.MIXED)
    assert calls_run == [("get_weather", {"city": "Rome", "unit": "celsius"})]
    assert [r.response for r in turn.tool_responses()] == [
        {"high": -5},
        {"city": "Rome", "high": 24},
    ]


async def test_tool_problems_are_answers_the_model_sees(server: JudgeServer) -> None:
    server.set_script(
        [
            StandinReply(
                tool_calls=[
                    {"name": "teleport", "arguments": {"to": "Mars"}},
                    {"name": "get_weather", "arguments": "{city: Paris"},
                    {"name": "get_weather", "arguments": {"town": "Paris"}},
                    {"name": "broken", "arguments": {"reason": "maintenance"}},
                    {"name": "book_table", "arguments": {"people": "many"}},
                ]
            ),
            "Sorry, nothing worked.",
        ]
    )
    turn = await one_turn(make_agent(server), "do things")
    errors = [r.response["error"] for r in turn.tool_responses()]
    assert "'teleport' is not available" in errors[0]
    assert "not valid JSON" in errors[1]
    assert "unexpected argument(s) town" in errors[2]
    assert "RuntimeError: backend down: maintenance" in errors[3]
    assert "invalid argument 'people'" in errors[4]
    assert turn.tool_calls()[1].args == {}
    assert calls_run == []
    assert len(server.requests[1].tool_results) == 5
    assert turn.final_response == "Sorry, nothing worked."


async def test_max_tool_rounds_exceeded_is_an_agent_error(server: JudgeServer) -> None:
    server.set_script(StandinReply(tool_calls=[weather("Paris")]))
    agent = make_agent(server, max_tool_rounds=2)
    with pytest.raises(
        AgentError, match=r"still asked for tools \(get_weather\).*max_tool_rounds=2"
    ):
        await one_turn(agent, "loop forever")
    assert len(server.requests) == 3
    assert len(calls_run) == 2
    with pytest.raises(AgentError, match="at least 1"):
        make_agent(server, max_tool_rounds=0)


async def test_rate_limit_after_retries_is_quota_exhausted(server: JudgeServer) -> None:
    server.set_script(StandinReply.rate_limited(retry_after=0.01, message="quota gone"))
    agent = make_agent(server, max_retries=2)
    with pytest.raises(QuotaExhaustedError, match=r"429.*after 2 retries: quota gone"):
        await one_turn(agent, "hi")
    assert len(server.requests) == 3  # the first try and the SDK's two retries
    server.set_script([StandinReply.rate_limited(retry_after=0.01), "recovered"])
    turn = await one_turn(agent, "hi")
    assert turn.final_response == "recovered"


async def test_other_failures_are_agent_errors_naming_the_endpoint(server: JudgeServer) -> None:
    server.set_script(StandinReply(status=400, text="model not found"))
    agent = make_agent(server)
    with pytest.raises(AgentError, match=r"standin-model.*answered HTTP 400: model not found"):
        await one_turn(agent, "hi")
    url = server.openai_base_url
    server.stop()
    gone = OpenAIToolsAgent("m", base_url=url, max_retries=0, timeout_s=2)
    with pytest.raises(AgentError, match="could not be reached"):
        await one_turn(gone, "hi")


async def test_history_is_seeded_as_chat_messages(server: JudgeServer) -> None:
    history = [
        Turn(
            user_input=UserInput(text="Weather in Paris?"),
            steps=[
                Step(agent_message=AgentMessage(text="Let me look.")),
                Step(tool_call=ToolCall(name="get_weather", args={"city": "Paris"})),
                Step(tool_call=ToolCall(id="w2", name="get_weather", args={"city": "Oslo"})),
                Step(tool_response=ToolResponse(id="w2", name="get_weather", response={"h": 9})),
                Step(tool_response=ToolResponse(name="get_weather", response={"h": 24})),
                Step(variables_update={"asked": True}),
            ],
            final_response="Paris 24, Oslo 9.",
        ),
        Turn(
            user_input=UserInput(text="Book for 2"),
            steps=[Step(tool_call=ToolCall(name="book_table", args={"people": 2}))],
            final_response="Booked.",
        ),
    ]
    server.set_script("You're welcome.")
    state: dict[str, Any] = {}
    options = SessionOptions(history=history, state=state)
    turn = await one_turn(make_agent(server), "Thanks!", options)
    assert turn.final_response == "You're welcome."
    assert state == {"asked": True}  # seeded turns' updates are in the state
    sent = server.requests[0].body["messages"]
    assert sent == [
        {"role": "system", "content": "You help with dinner plans."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "hist_0_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "w2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "w2", "content": '{"h": 9}'},
        {"role": "tool", "tool_call_id": "hist_0_1", "content": '{"h": 24}'},
        {"role": "assistant", "content": "Paris 24, Oslo 9."},
        {"role": "user", "content": "Book for 2"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "hist_1_0",
                    "type": "function",
                    "function": {"name": "book_table", "arguments": '{"people": 2}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "hist_1_0", "content": json.dumps(NOT_RECORDED)},
        {"role": "assistant", "content": "Booked."},
        {"role": "user", "content": "Thanks!"},
    ]
    assert history_messages([]) == []


def test_missing_key_env_and_app_details(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AgentError, match="needs an API key: set OPENAI_API_KEY"):
        OpenAIToolsAgent("gpt-x")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    agent = OpenAIToolsAgent("local-model", [get_weather], instructions="Be brief.", name="bot")
    assert agent.base_url == "http://127.0.0.1:9/v1"
    details = app_details_of(agent)
    assert details is not None
    bot = details["agent_details"]["bot"]
    assert bot["instructions"] == "Be brief."
    (declaration,) = bot["tool_declarations"][0]["function_declarations"]
    assert declaration["name"] == "get_weather"
    assert declaration["description"] == "Today's weather."
    assert declaration["parameters"]["properties"]["city"]["description"] == "The city."
    with pytest.raises(AgentError, match="two tools are named 'get_weather'"):
        OpenAIToolsAgent("m", [get_weather, get_weather])


def test_one_agent_serves_several_event_loops(server: JudgeServer) -> None:
    server.set_script(StandinReply("hello"))
    agent = make_agent(server)
    for _ in range(2):  # a client bound to the first (closed) loop must not be reused
        assert asyncio.run(one_turn(agent, "hi")).final_response == "hello"


def dinner_script(request: StandinRequest) -> StandinReply:
    """A model that checks the weather once, then answers from the result."""
    if request.tool_results:
        high = json.loads(request.tool_results[-1]["content"])["high"]
        return StandinReply(f"It will be {high} degrees.")
    city = request.user.rsplit(" ", 1)[-1].rstrip("?")
    return StandinReply(tool_calls=[weather(city)])


async def test_engine_end_to_end_with_trajectory_metrics(server: JudgeServer) -> None:
    server.set_script(dinner_script)

    def case(case_id: str, city: str, expected_city: str) -> EvalCase:
        ref = Turn(
            user_input=UserInput(text=f"Weather in {city}?"),
            expectations=[
                Expectation(tool_call=ToolCall(name="get_weather", args={"city": expected_city}))
            ],
            steps=[Step(tool_call=ToolCall(name="get_weather", args={"city": expected_city}))],
            final_response="It will be 24 degrees.",
        )
        return EvalCase(id=case_id, reference=[ref], session_input=SessionInput(state={}))

    evalset = EvalSet(
        id="dinner", cases=[case("right", "Paris", "Paris"), case("wrong", "Rome", "Oslo")]
    )
    metrics = build_metrics(names={"tool_trajectory_avg_score": 1.0})
    result = await arun([evalset], metrics, agent=make_agent(server))
    by_case = {c.case_id: c for c in result.cases}
    assert by_case["right"].metrics["tool_trajectory_avg_score"].score == 1.0
    assert by_case["wrong"].metrics["tool_trajectory_avg_score"].score == 0.0
    assert by_case["right"].error is None
    actual = by_case["right"].invocations[0].actual
    assert actual.final_response == "It will be 24 degrees."
    assert actual.tool_responses()[0].latency_s is not None


async def test_bundled_example_runs_offline_against_the_stand_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from examples.openai_tools.standin import script

    with JudgeServer(script) as standin:
        monkeypatch.setenv("OPENAI_BASE_URL", standin.openai_base_url)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        from examples.openai_tools import agent as example

        agent = OpenAIToolsAgent(
            "example-model",
            [example.get_weather, example.add_to_trip],
            instructions=example.agent.instructions,
        )
        evalset = load(EXAMPLE / "travel.evalset.json")
        metrics = build_metrics(load_config(EXAMPLE / "test_config.json"))
        # one session for the whole conversation, as `adk eval` runs it
        options = RunOptions(tool_behavior=ToolBehavior.REAL, run_method=RunMethod.NAIVE)
        result = await arun([evalset], metrics, agent=agent, options=options)
        assert not standin.errors
    assert {c.case_id: c.status.value for c in result.cases} == {
        "weather_paris": "PASSED",
        "weather_two_cities": "PASSED",
        "weather_fahrenheit": "PASSED",
        "plan_trip": "PASSED",
    }
    plan = next(c for c in result.cases if c.case_id == "plan_trip")
    updates = [s.variables_update for s in plan.invocations[1].actual.steps if s.variables_update]
    assert updates == [{"trip": [{"city": "Oslo", "days": 3}, {"city": "Tokyo", "days": 5}]}]


async def test_engine_fake_run_answers_from_the_golden_mocks(server: JudgeServer) -> None:
    server.set_script(dinner_script)
    expected = ToolCall(name="get_weather", args={"city": "Paris"})
    ref = Turn(
        user_input=UserInput(text="Weather in Paris?"),
        expectations=[
            Expectation(tool_call=expected),
            Expectation(mock_tool_response=ToolResponse(name="get_weather", response={"high": -7})),
        ],
    )
    evalset = EvalSet(id="fake", cases=[EvalCase(id="mocked", reference=[ref])])
    metrics = build_metrics(names={"tool_trajectory_avg_score": 1.0})
    options = RunOptions(tool_behavior=ToolBehavior.FAKE)
    result = await arun([evalset], metrics, agent=make_agent(server), options=options)
    (case,) = result.cases
    assert calls_run == []
    assert case.invocations[0].actual.final_response == "It will be -7 degrees."
    assert case.metrics["tool_trajectory_avg_score"].score == 1.0
