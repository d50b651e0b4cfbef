"""A travel assistant: an OpenAI-compatible chat model plus two plain Python tools.

`agent` is what assay runs (``--agent examples.openai_tools.agent:agent``). The model
is `ASSAY_EXAMPLE_MODEL` (default ``gpt-4o-mini``) at ``OPENAI_BASE_URL`` with
``OPENAI_API_KEY``, so the same file runs against OpenAI, a local server (vLLM,
Ollama) or, offline, the scripted stand-in in `standin.py`.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from assay.agents.openai_tools import OpenAIToolsAgent

_FORECAST: dict[str, dict[str, Any]] = {
    "paris": {"condition": "sunny", "high_c": 24},
    "oslo": {"condition": "rainy", "high_c": 11},
    "tokyo": {"condition": "cloudy", "high_c": 19},
}


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, Any]:
    """Today's weather forecast for a city.

    Args:
        city: The city, e.g. "Paris".
        unit: The unit of the temperatures in the answer.
    """
    forecast = _FORECAST.get(city.strip().lower())
    if forecast is None:
        return {"error": f"no forecast for {city}; known cities: Paris, Oslo, Tokyo"}
    high = forecast["high_c"] if unit == "celsius" else round(forecast["high_c"] * 9 / 5 + 32)
    return {"city": city, "condition": forecast["condition"], "high": high, "unit": unit}


def add_to_trip(city: str, days: int, state: dict[str, Any]) -> dict[str, Any]:
    """Add a stop to the traveller's trip plan.

    Args:
        city: Where to stop.
        days: How many days to stay there.
    """
    if days < 1:
        return {"error": "days must be at least 1"}
    trip = [*state.get("trip", []), {"city": city, "days": days}]
    state["trip"] = trip  # the session state: assay reports the change as a variables update
    return {"trip": trip, "total_days": sum(stop["days"] for stop in trip)}


agent = OpenAIToolsAgent(
    os.environ.get("ASSAY_EXAMPLE_MODEL", "gpt-4o-mini"),
    [get_weather, add_to_trip],
    name="travel_assistant",
    instructions=(
        "You are a travel assistant. Use get_weather for forecasts and add_to_trip to "
        "plan the trip; answer in one short sentence from what the tools returned."
    ),
    temperature=0.0,
)
