"""HttpAgent against a real HTTP endpoint the test serves on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from assay.agents.base import SessionOptions
from assay.agents.http import HttpAgent
from assay.agents.tools import ToolBehavior, ToolHook, ToolMock
from assay.core.cases import (
    AgentTransfer,
    EvalCase,
    EvalSet,
    Expectation,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    Usage,
    UserInput,
)
from assay.engine import arun, build_metrics
from assay.errors import AgentError, QuotaExhaustedError

# (status, headers, body) for a request body; a dict body is sent as JSON
Reply = tuple[int, dict[str, str], Any]


class Endpoint:
    """An HTTP server whose answers come from `handler`; it logs what it received."""

    def __init__(self) -> None:
        self.handler: Callable[[dict[str, Any]], Reply] = lambda body: (200, {}, {})
        self.received: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                body = json.loads(raw)
                owner.received.append(body)
                owner.headers.append({k.lower(): v for k, v in self.headers.items()})
                status, headers, payload = owner.handler(body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(ConnectionError):  # the timeout test's client left
                    self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # a short poll keeps shutdown (once per test) quick
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/agent"


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    server = Endpoint()
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def weather_agent(body: dict[str, Any]) -> Reply:
    """A tiny agent honouring the contract: mocks in FAKE mode, state, transfers."""
    text = body["messages"][-1]["text"]
    call = {"type": "tool_call", "id": f"c{body['turn_index']}", "name": "get_weather"}
    call["args"] = {"city": text.split()[-1].rstrip("?")}
    mocks = [m for m in body["tool_mocks"] if m["name"] == "get_weather"]
    # FAKE / MIXED: a matching mock answers instead of the (pretend) weather service
    result = mocks[0]["response"] if body["tools_mode"] != "REAL" and mocks else {"high": 20}
    events = [
        {"type": "message", "author": "router", "text": "Routing to weather."},
        {"type": "transfer", "target_agent": "weather_agent"},
        call,
        {"type": "tool_response", "id": call["id"], "name": "get_weather", "response": result},
        {"type": "state_update", "delta": {"asked": body["state"].get("asked", 0) + 1}},
    ]
    reply = {
        "events": events,
        "final_response": f"High of {result['high']}.",
        "usage": {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14},
    }
    return 200, {}, reply


async def test_events_become_steps_and_the_session_carries_on(endpoint: Endpoint) -> None:
    endpoint.handler = weather_agent
    agent = HttpAgent(endpoint.url, headers={"Authorization": "Bearer t0k"}, name="weather")
    case = EvalCase(id="case-1")
    session = await agent.start_session(case, SessionOptions(state={"user": "ann"}))
    turn = await session.send(UserInput(text="Weather in Paris?"))
    assert [s.kind for s in turn.steps] == [
        "agent_message",
        "agent_transfer",
        "tool_call",
        "tool_response",
        "variables_update",
    ]
    assert turn.steps[0].agent_message is not None
    assert turn.steps[0].agent_message.author == "router"
    assert turn.steps[1].agent_transfer == AgentTransfer(target_agent="weather_agent")
    assert turn.tool_calls() == [ToolCall(id="c0", name="get_weather", args={"city": "Paris"})]
    assert turn.tool_responses() == [
        ToolResponse(id="c0", name="get_weather", response={"high": 20})
    ]
    assert turn.steps[-1].variables_update == {"asked": 1}
    assert turn.final_response == "High of 20."
    assert turn.usage == Usage(input_tokens=10, output_tokens=4)
    assert turn.latency_s is not None and turn.latency_s > 0
    second = await session.send(UserInput(text="And in Oslo?"))
    assert second.steps[-1].variables_update == {"asked": 2}
    first_body, second_body = endpoint.received
    assert first_body["case_id"] == "case-1"
    assert first_body["session_id"] == second_body["session_id"]
    assert (first_body["turn_index"], second_body["turn_index"]) == (0, 1)
    assert first_body["state"] == {"user": "ann"}
    assert second_body["state"] == {"user": "ann", "asked": 1}
    assert first_body["user_input"] == {"text": "Weather in Paris?"}
    assert first_body["tools_mode"] == "REAL" and first_body["tool_mocks"] == []
    assert second_body["messages"] == [
        {"role": "user", "text": "Weather in Paris?"},
        {"role": "agent", "text": "High of 20."},
        {"role": "user", "text": "And in Oslo?"},
    ]
    (earlier,) = second_body["history"]
    assert earlier["final_response"] == "High of 20."
    assert earlier["steps"][2] == {
        "tool_call": {"id": "c0", "name": "get_weather", "args": {"city": "Paris"}}
    }
    assert endpoint.headers[0]["authorization"] == "Bearer t0k"
    other = await agent.start_session(case, SessionOptions())
    await other.send(UserInput(text="Weather in Rome?"))
    assert endpoint.received[-1]["session_id"] != first_body["session_id"]


async def test_fake_mode_sends_the_mocks_for_the_endpoint_to_honour(endpoint: Endpoint) -> None:
    endpoint.handler = weather_agent
    mock = ToolMock(
        call=ToolCall(name="get_weather", args={"city": "Paris"}),
        response=ToolResponse(name="get_weather", response={"high": -3}),
        note="cold snap",
    )
    options = SessionOptions(tools=ToolHook(ToolBehavior.FAKE, [mock]))
    session = await HttpAgent(endpoint.url).start_session(EvalCase(id="c"), options)
    turn = await session.send(UserInput(text="Weather in Paris?"))
    assert turn.final_response == "High of -3."
    sent = endpoint.received[0]
    assert sent["tools_mode"] == "FAKE"
    assert sent["tool_mocks"] == [
        {
            "name": "get_weather",
            "args": {"city": "Paris"},
            "response": {"high": -3},
            "note": "cold snap",
        }
    ]


async def test_seeded_history_and_its_state_updates_are_sent(endpoint: Endpoint) -> None:
    endpoint.handler = lambda body: (200, {}, {"final_response": "ok"})
    history = [
        Turn(
            user_input=UserInput(text="Book for 2"),
            steps=[Step(variables_update={"party": 2})],
            final_response="Booked.",
            expectations=[Expectation(agent_response="Booked.")],
        )
    ]
    options = SessionOptions(history=history, state={"party": 0})
    session = await HttpAgent(endpoint.url).start_session(EvalCase(id="c"), options)
    turn = await session.send(UserInput(text="Thanks"))
    assert turn.steps == [] and turn.final_response == "ok" and turn.usage is None
    sent = endpoint.received[0]
    assert sent["turn_index"] == 1
    assert sent["state"] == {"party": 2}
    assert [m["text"] for m in sent["messages"]] == ["Book for 2", "Booked.", "Thanks"]
    assert "expectations" not in sent["history"][0]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ((500, {}, {"detail": "db down"}), r"answered 500 Internal Server Error: .*db down"),
        ((404, {}, b"no such agent"), r"answered 404 Not Found: no such agent"),
        ((200, {}, b"<html>oops"), r"answered 200 OK with a body that is not JSON: '<html>oops'"),
        (
            (200, {}, {"events": [{"type": "message", "text": "x"}, {"type": "thought"}]}),
            r"does not follow the assay HTTP agent contract.*events\.1: .*'thought'",
        ),
        (
            (200, {}, {"events": [{"type": "tool_call", "args": {}}]}),
            r"events\.0\.tool_call\.name: Field required",
        ),
        ((200, {}, {"answer": "x"}), r"answer: Extra inputs are not permitted"),
        ((200, {}, ["not", "an", "object"]), r"does not follow the assay HTTP agent contract"),
    ],
)
async def test_bad_replies_are_agent_errors_naming_url_and_problem(
    endpoint: Endpoint, reply: Reply, message: str
) -> None:
    endpoint.handler = lambda body: reply
    agent = HttpAgent(endpoint.url)
    session = await agent.start_session(EvalCase(id="c"))
    with pytest.raises(AgentError, match=message) as caught:
        await session.send(UserInput(text="hi"))
    assert endpoint.url in str(caught.value)
    assert not isinstance(caught.value, QuotaExhaustedError)


async def test_429_is_retried_then_quota_exhausted(endpoint: Endpoint) -> None:
    endpoint.handler = lambda body: (429, {"Retry-After": "0"}, {"error": "slow down"})
    session = await HttpAgent(endpoint.url, max_retries=2).start_session(EvalCase(id="c"))
    with pytest.raises(QuotaExhaustedError, match=r"kept answering 429.*3 attempt.*slow down"):
        await session.send(UserInput(text="hi"))
    assert len(endpoint.received) == 3
    replies = iter([(429, {"Retry-After": "0.01"}, {}), (200, {}, {"final_response": "back"})])
    endpoint.handler = lambda body: next(replies)
    assert (await session.send(UserInput(text="hi"))).final_response == "back"


async def test_a_long_retry_after_gives_up_at_once(endpoint: Endpoint) -> None:
    endpoint.handler = lambda body: (429, {"Retry-After": "3600"}, {})
    session = await HttpAgent(endpoint.url, max_retries=5).start_session(EvalCase(id="c"))
    with pytest.raises(QuotaExhaustedError, match="1 attempt"):
        await session.send(UserInput(text="hi"))


async def test_timeouts_and_unreachable_endpoints(endpoint: Endpoint) -> None:
    def slow(body: dict[str, Any]) -> Reply:
        time.sleep(0.5)
        return 200, {}, {"final_response": "late"}

    endpoint.handler = slow
    session = await HttpAgent(endpoint.url, timeout_s=0.1).start_session(EvalCase(id="c"))
    with pytest.raises(AgentError, match=r"did not answer within 0\.1s"):
        await session.send(UserInput(text="hi"))
    url = endpoint.url
    endpoint.httpd.shutdown()
    endpoint.httpd.server_close()
    gone = await HttpAgent(url).start_session(EvalCase(id="c"))
    with pytest.raises(AgentError, match="could not be reached"):
        await gone.send(UserInput(text="hi"))
    with pytest.raises(AgentError, match="must start with http"):
        HttpAgent("ftp://example.com/agent")
    with pytest.raises(AgentError, match="timeout must be positive"):
        HttpAgent(url, timeout_s=0)


async def test_engine_end_to_end(endpoint: Endpoint) -> None:
    endpoint.handler = weather_agent

    def case(case_id: str, city: str) -> EvalCase:
        expected = ToolCall(name="get_weather", args={"city": "Paris"})
        ref = Turn(
            user_input=UserInput(text=f"Weather in {city}?"),
            steps=[Step(tool_call=expected)],
            expectations=[Expectation(tool_call=expected)],
        )
        return EvalCase(id=case_id, reference=[ref])

    evalset = EvalSet(id="http", cases=[case("paris", "Paris"), case("rome", "Rome")])
    metrics = build_metrics(names={"tool_trajectory_avg_score": 1.0})
    result = await arun([evalset], metrics, agent=HttpAgent(endpoint.url))
    scores = {c.case_id: c.metrics["tool_trajectory_avg_score"].score for c in result.cases}
    assert scores == {"paris": 1.0, "rome": 0.0}
    assert {c.case_id: c.error for c in result.cases} == {"paris": None, "rome": None}
