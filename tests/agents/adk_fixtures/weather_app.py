"""A two-agent ADK app (weather + billing) on the scripted model, shared by the tests.

`root` answers weather questions with `get_weather` and transfers bills to `billing`,
which calls `pay`. `Tools` records every real tool run, so a test can tell a mocked
call from a real one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.tool_context import ToolContext

from adk_fixtures.scripted import call, last_function_response, reply, say, script, text, user_texts
from assay.agents.adk import AdkAgent
from assay.agents.base import SessionOptions
from assay.agents.tools import ToolMock
from assay.core.cases import EvalCase, ToolCall, ToolResponse, Turn, UserInput

ROOT, BILLING = "scripted-test-root", "scripted-test-billing"
CASE = EvalCase(id="case-1")


class Tools:
    """Real tools that record each real run."""

    def __init__(self) -> None:
        self.weather_runs: list[str] = []
        self.payments: list[int] = []

    def get_weather(self, city: str, tool_context: ToolContext) -> dict[str, Any]:
        """Return the weather in a city."""
        self.weather_runs.append(city)
        tool_context.state["last_city"] = city
        return {"city": city, "forecast": "sunny"}

    def pay(self, amount: int) -> dict[str, Any]:
        """Pay an amount in euros."""
        self.payments.append(amount)
        return {"paid": amount}


def build(tools: Tools, **root_kwargs: Any) -> LlmAgent:
    billing = LlmAgent(
        name="billing", model=BILLING, instruction="You take payments.", tools=[tools.pay]
    )
    return LlmAgent(
        name="root",
        model=ROOT,
        instruction=root_kwargs.pop("instruction", "You help with weather and bills."),
        tools=[tools.get_weather],
        sub_agents=[billing],
        **root_kwargs,
    )


def root_rule(request: LlmRequest) -> LlmResponse:
    """Weather questions call get_weather; bills are transferred to `billing`."""
    answer = last_function_response(request)
    if answer is not None:
        return say(f"Weather: {answer.response}")
    asked = user_texts(request)[-1]
    if "bill" in asked:
        return reply(text("Let me hand you over."), call("transfer_to_agent", agent_name="billing"))
    city = asked.rsplit(" ", 1)[-1].strip("?")
    return reply(text("Checking."), call("get_weather", call_id="call-1", city=city))


def billing_rule(request: LlmRequest) -> LlmResponse:
    answer = last_function_response(request)
    if answer is not None and answer.name == "pay":
        return say(f"Paid: {answer.response}")
    return reply(call("pay", amount=30))


Scripted = tuple[list[LlmRequest], list[LlmRequest]]
"""The requests the root and billing models received."""


@contextmanager
def scripted_models() -> Iterator[Scripted]:
    """Both models scripted; yields the requests each one received."""
    with script(ROOT, root_rule) as root_requests, script(BILLING, billing_rule) as billing_reqs:
        yield root_requests, billing_reqs


async def one_turn(agent: AdkAgent, said: str, **options: Any) -> Turn:
    session = await agent.start_session(CASE, SessionOptions(**options))
    try:
        return await session.send(UserInput(text=said))
    finally:
        await session.close()


def mock(name: str, response: Any, **args: Any) -> ToolMock:
    return ToolMock(ToolCall(name=name, args=args), ToolResponse(name=name, response=response))
