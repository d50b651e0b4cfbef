"""The scripted model that answers for the travel assistant offline.

It reads each chat request the way a model would and replies with tool calls or text:
a question about the weather gets one `get_weather` call per city it names; "add ...
for N days" gets `add_to_trip`; once tool results are back, it answers from them. Run
it with::

    python -m assay.testing.judge_server --port 8011 \
        --script examples.openai_tools.standin:script
"""

from __future__ import annotations

import json
import re
from typing import Any

from assay.testing.judge_server import StandinReply, StandinRequest

CITIES = ("Paris", "Oslo", "Tokyo")


def _answer(results: list[dict[str, Any]]) -> str:
    sentences = []
    for result in results:
        content = json.loads(result["content"])
        if "error" in content:
            sentences.append(f"Sorry: {content['error']}.")
        elif result["name"] == "get_weather":
            degrees = "°C" if content["unit"] == "celsius" else "°F"
            sentences.append(
                f"It's {content['condition']} in {content['city']} today, "
                f"with a high of {content['high']} {degrees}."
            )
        else:
            stop = content["trip"][-1]
            sentences.append(f"Added {stop['city']} to your trip for {stop['days']} days.")
    return " ".join(sentences)


def script(request: StandinRequest) -> StandinReply:
    """One reply of the stand-in model to `request`."""
    trailing = 0
    for message in reversed(request.messages):
        if message["role"] != "tool":
            break
        trailing += 1
    if trailing:
        return StandinReply(_answer([dict(r) for r in request.tool_results[-trailing:]]))
    text = request.user
    cities = [c for c in CITIES if c.lower() in text.lower()]
    if "weather" in text.lower() and cities:
        unit = "fahrenheit" if "fahrenheit" in text.lower() else "celsius"
        calls = [{"name": "get_weather", "arguments": {"city": c, "unit": unit}} for c in cities]
        return StandinReply(tool_calls=calls)
    days = re.search(r"(\d+) days?", text)
    if re.search(r"\b(add|trip)\b", text.lower()) and cities and days:
        call = {"name": "add_to_trip", "arguments": {"city": cities[0], "days": int(days[1])}}
        return StandinReply(tool_calls=[call])
    return StandinReply("I can check the weather in Paris, Oslo or Tokyo and plan your trip.")
