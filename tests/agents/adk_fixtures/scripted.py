"""A scripted model for ADK agents, registered through ADK's own `LLMRegistry`.

Any `LlmAgent(model="scripted-test-NAME")` resolves to `ScriptedLlm`. What it answers is a
rule (a function of the request) registered for that model name with `script()`:
rules decide from the request's contents, so concurrent sessions get consistent
answers. Every request is recorded in `requests_for(name)`, so tests can check what
the model was shown (seeded history, instructions, tools).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.models.registry import LLMRegistry
from google.genai import types

Rule = Callable[[LlmRequest], LlmResponse]

_RULES: dict[str, Rule] = {}
_REQUESTS: dict[str, list[LlmRequest]] = defaultdict(list)

PROMPT_TOKENS = 11
OUTPUT_TOKENS = 7


def _usage() -> types.GenerateContentResponseUsageMetadata:
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=PROMPT_TOKENS,
        candidates_token_count=OUTPUT_TOKENS,
        total_token_count=PROMPT_TOKENS + OUTPUT_TOKENS,
    )


def reply(*parts: types.Part) -> LlmResponse:
    """A model turn made of `parts`, with fixed token usage."""
    return LlmResponse(
        content=types.Content(role="model", parts=list(parts)), usage_metadata=_usage()
    )


def say(text: str) -> LlmResponse:
    return reply(types.Part(text=text))


def call(name: str, call_id: str | None = None, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args=args))


def text(value: str) -> types.Part:
    return types.Part(text=value)


def last_function_response(request: LlmRequest) -> types.FunctionResponse | None:
    """The function response the request ends with, if it ends with one."""
    if not request.contents:
        return None
    for part in reversed(request.contents[-1].parts or []):
        if part.function_response is not None:
            return part.function_response
    return None


def user_texts(request: LlmRequest) -> list[str]:
    """Every text part of the request's user-role contents, in order."""
    return [
        part.text
        for content in request.contents
        if content.role == "user"
        for part in content.parts or []
        if part.text
    ]


def requests_for(model: str) -> list[LlmRequest]:
    return _REQUESTS[model]


@contextmanager
def script(model: str, rule: Rule) -> Iterator[list[LlmRequest]]:
    """Make `model` answer with `rule` inside the block; yields the requests it got."""
    _RULES[model] = rule
    _REQUESTS[model] = []
    try:
        yield _REQUESTS[model]
    finally:
        _RULES.pop(model, None)


class ScriptedLlm(BaseLlm):
    """Answers each request with the rule scripted for its model name."""

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"scripted-test-.*"]

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        rule = _RULES.get(self.model)
        if rule is None:
            raise RuntimeError(f"no script for model {self.model!r}")
        _REQUESTS[self.model].append(llm_request)
        yield rule(llm_request)


LLMRegistry.register(ScriptedLlm)
