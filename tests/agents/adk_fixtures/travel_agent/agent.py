"""A flight-booking ADK agent on the scripted test model, plus the rule that model follows.

Tests activate the rule with `script(MODEL, travel_rule)`; `BOOKINGS` records every real
run of `book_flight`, so a test can tell a mocked call from a real one.
"""

from __future__ import annotations

import re
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.tools.tool_context import ToolContext

from adk_fixtures.scripted import call, last_function_response, reply, say, user_texts

MODEL = "scripted-test-travel"
BOOKINGS: list[str] = []


def find_flights(origin: str, destination: str) -> dict[str, Any]:
    """Find flights between two cities."""
    code = f"{origin[:3].upper()}-{destination[:3].upper()}-1"
    return {"flights": [{"id": code, "price_eur": 120}]}


def book_flight(flight_id: str, tool_context: ToolContext) -> dict[str, Any]:
    """Book a flight by its id."""
    BOOKINGS.append(flight_id)
    tool_context.state["booking"] = flight_id
    return {"booking": flight_id, "status": "CONFIRMED"}


def travel_rule(request: LlmRequest) -> LlmResponse:
    """Find flights, book the first one, confirm; thank-yous get a polite answer."""
    answer = last_function_response(request)
    if answer is not None and answer.name == "find_flights":
        flights = (answer.response or {}).get("flights") or []
        if not flights:
            return say("I found no flights.")
        return reply(call("book_flight", flight_id=flights[0]["id"]))
    if answer is not None and answer.name == "book_flight":
        result = answer.response or {}
        if "booking" not in result:
            return say(f"I could not book it: {result}")
        return say(f"Booked flight {result['booking']}.")
    texts = user_texts(request)
    route = re.search(r"from (\w+) to (\w+)", texts[-1] if texts else "")
    if route is None:
        return say("You're welcome.")
    return reply(call("find_flights", origin=route.group(1), destination=route.group(2)))


root_agent = LlmAgent(
    name="travel_agent",
    model=MODEL,
    instruction="You book flights. Traveller: {traveller?}",
    tools=[find_flights, book_flight],
)
