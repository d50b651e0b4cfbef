"""The weather agent: one ADK LlmAgent with two Python tools.

The model is `ASSAY_EXAMPLE_MODEL` (default "gemini-2.5-flash", which needs
GOOGLE_API_KEY or Vertex AI settings). `ASSAY_EXAMPLE_MODEL=scripted-weather` runs it
offline on a small rule-based stand-in model (`standin.py`) instead.
"""

from __future__ import annotations

import os

from google.adk.agents import LlmAgent

from .tools import get_timezone, get_weather

MODEL = os.environ.get("ASSAY_EXAMPLE_MODEL", "gemini-2.5-flash")
if MODEL.startswith("scripted-"):
    from . import standin  # noqa: F401  (registers the stand-in model with ADK)

root_agent = LlmAgent(
    name="weather_agent",
    model=MODEL,
    description="Answers questions about the weather and time zones of cities.",
    instruction=(
        "You answer questions about the current weather and the time zone of cities. "
        "Call get_weather for the weather and get_timezone for time zones, then answer "
        "in one sentence from the tool's result, with the temperature in Celsius. If a "
        "tool returns an error, say you have no data for that city. When the user says "
        "'there', they mean the city they asked about last."
    ),
    tools=[get_weather, get_timezone],
)
