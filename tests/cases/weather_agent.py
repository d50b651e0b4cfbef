"""A tool-using callable agent for the golden replay tests of `assay cases`: its tool
runs through the session's `ToolHook`, so FAKE runs answer it from the case's mocks.

The real tool answers a new temperature on each call (and logs it), so an answer that
repeats a blessed temperature came from the mock, not the tool.
"""

from __future__ import annotations

from itertools import count
from typing import Any

from assay.agents.tools import ToolHook
from assay.core.cases import Step, ToolCall, ToolResponse, Turn

REAL_CALLS: list[str] = []
_DEGREES = count(21)


def get_weather(city: str) -> dict[str, Any]:
    REAL_CALLS.append(city)
    return {"city": city, "temperature_c": next(_DEGREES)}


async def weather_agent(prompt: str, tools: ToolHook) -> Turn:
    city = prompt.rstrip("?").split()[-1]
    call = ToolCall(name="get_weather", args={"city": city})
    payload, _seconds = await tools.execute(call, lambda: get_weather(city))
    steps = [
        Step(tool_call=call),
        Step(tool_response=ToolResponse(name=call.name, response=payload)),
    ]
    if not isinstance(payload, dict) or "temperature_c" not in payload:
        return Turn(steps=steps, final_response=f"I could not get the weather: {payload}")
    return Turn(steps=steps, final_response=f"It is {payload['temperature_c']} degrees in {city}.")
