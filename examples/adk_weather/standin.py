"""A stand-in for the LLM, so the example runs offline: `ASSAY_EXAMPLE_MODEL=scripted-weather`.

It is not a language model. It follows the agent's instruction with a few rules: find
the city in the user's words (or the last one mentioned), call get_timezone when the
user mentions a time zone and get_weather otherwise, then phrase the tool's result in
one sentence. It is registered with ADK's own model registry, so the agent, its tools,
ADK's Runner and assay's adapter all run for real around it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.models.registry import LLMRegistry
from google.genai import types

_CITY = re.compile(r"\b(?:in|for|about)\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)")


def _user_texts(request: LlmRequest) -> list[str]:
    return [
        part.text
        for content in request.contents
        if content.role == "user"
        for part in content.parts or []
        if part.text
    ]


def _answer(response: types.FunctionResponse) -> str:
    result: dict[str, Any] = response.response or {}
    if "error" in result:
        return f"Sorry, I have {result['error']}."
    if response.name == "get_timezone":
        zone, offset = result["timezone"], result["utc_offset"]
        return f"{result['city']} is in the {zone} time zone (UTC{offset})."
    return f"It is {result['condition']} and {result['temperature_c']}°C in {result['city']}."


def _next_step(request: LlmRequest) -> types.Part:
    last_parts = (request.contents[-1].parts or []) if request.contents else []
    answers = [p.function_response for p in last_parts if p.function_response]
    if answers:
        return types.Part(text=" ".join(_answer(a) for a in answers))
    texts = _user_texts(request)
    current = texts[-1] if texts else ""
    city = next((m.group(1) for t in reversed(texts) if (m := _CITY.search(t))), None)
    if city is None:
        return types.Part(text="Which city do you mean?")
    tool = "get_timezone" if "time zone" in current.lower() else "get_weather"
    return types.Part(function_call=types.FunctionCall(name=tool, args={"city": city}))


class WeatherStandIn(BaseLlm):
    """Rule-based stand-in for the weather agent's model (no network, no weights)."""

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"scripted-weather"]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        # It reads and writes no tokens; saying so (zero, not missing) keeps ADK quiet.
        usage = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=0, candidates_token_count=0
        )
        content = types.Content(role="model", parts=[_next_step(llm_request)])
        yield LlmResponse(content=content, usage_metadata=usage)


LLMRegistry.register(WeatherStandIn)
