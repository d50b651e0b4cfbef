"""Adapter for an OpenAI-compatible chat model given plain Python functions as tools.

`OpenAIToolsAgent(model, tools)` is an agent for people without an agent framework: a
chat-completions model (OpenAI, or any compatible server: vLLM, Ollama, LM Studio,
llama.cpp) plus Python functions, declared to the model from their signatures and
docstrings (`assay.agents._tool_schema`). Each `send()` runs the usual tool loop: send
the conversation, run the tool calls the model asks for through the session's
`ToolHook` (so FAKE / MIXED mocks answer instead of the real tools), send the results
back, and repeat until the model answers in text or `max_tool_rounds` is used up.

A tool whose signature has a ``state`` parameter receives the session state (a dict,
seeded from the case); a change it makes is reported as a `variables_update` step.
Seeded history turns become chat messages, tool calls and results included. The
endpoint is `base_url`, else ``OPENAI_BASE_URL``, else OpenAI; the key `api_key`,
else ``OPENAI_API_KEY`` (OpenAI itself needs one; other endpoints get a placeholder).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import os
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from pydantic_core import to_jsonable_python

from assay.agents._session_support import PerLoop, apply_input_variables, initial_state
from assay.agents._tool_schema import ToolArgumentError, ToolSpec
from assay.agents.base import SessionOptions
from assay.core.cases import (
    AgentMessage,
    EvalCase,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    Usage,
    UserInput,
)
from assay.errors import AgentError, QuotaExhaustedError
from assay.models.http import (
    PLACEHOLDER_API_KEY,
    error_detail,
    is_retryable_status,
    retry_after_seconds,
)
from assay.models.registry import ModelRegistry, pacing_in_run

#: what a seeded tool call whose response was not recorded answers in the history
NOT_RECORDED = {"note": "no response was recorded for this tool call"}
_OPENAI_HOST = "api.openai.com"


def _openai_sdk() -> ModuleType:
    try:
        import openai
    except ImportError:
        raise AgentError(
            "OpenAIToolsAgent needs the openai SDK: pip install -e '.[openai]'"
        ) from None
    return openai


#: calls in flight to the agent's endpoint outside a run: no bound of its own (the
#: limiter still pauses on Retry-After and halves on 429 / 5xx)
OWN_CONCURRENCY = 1024


def _retry_after(exc: object) -> float | None:
    response = getattr(exc, "response", None)
    return retry_after_seconds(getattr(response, "headers", None))


def _detail(exc: Any) -> str:
    """The endpoint's own error message (the SDK's `message` adds "Error code: ...")."""
    return error_detail(exc.body) or str(exc.message)


def _content(payload: object) -> str:
    """A tool result as the text of a ``tool`` message."""
    if isinstance(payload, str):
        return payload
    return json.dumps(payload, ensure_ascii=False, default=str)


def history_messages(turns: Sequence[Turn]) -> list[dict[str, object]]:
    """Earlier turns as chat messages: user text, assistant text and tool calls, results.

    Calls without ids get ``hist_<turn>_<n>``; a response without an id answers the
    first open call of its tool. Every call gets a ``tool`` message before the next
    assistant or user message, as the API requires: a call whose response was not
    recorded answers `NOT_RECORDED`. Transfers and variable updates have no chat form
    and are left out.
    """
    messages: list[dict[str, Any]] = []
    open_calls: list[tuple[str, str]] = []  # (id, name) of calls not answered yet
    calling: dict[str, Any] | None = None  # the assistant message taking tool calls

    def close() -> None:
        nonlocal calling
        for call_id, _ in open_calls:
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": _content(NOT_RECORDED)}
            )
        open_calls.clear()
        calling = None

    for t, turn in enumerate(turns):
        close()
        messages.append({"role": "user", "content": user_text(turn.user_input)})
        for n, step in enumerate(turn.steps):
            if step.agent_message is not None:
                close()
                calling = {"role": "assistant", "content": step.agent_message.text}
                messages.append(calling)
            elif step.tool_call is not None:
                if calling is None or messages[-1] is not calling:
                    close()
                    calling = {"role": "assistant", "content": None}
                    messages.append(calling)
                call_id = step.tool_call.id or f"hist_{t}_{n}"
                calling.setdefault("tool_calls", []).append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": step.tool_call.name,
                            "arguments": json.dumps(step.tool_call.args, default=str),
                        },
                    }
                )
                open_calls.append((call_id, step.tool_call.name))
            elif step.tool_response is not None:
                response = step.tool_response
                match = next((c for c in open_calls if c[0] == response.id), None) or next(
                    (c for c in open_calls if c[1] == response.name), None
                )
                if match is None:
                    continue  # a response to no call has no place in a chat
                open_calls.remove(match)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": match[0],
                        "content": _content(response.response),
                    }
                )
        close()
        if turn.final_response:
            messages.append({"role": "assistant", "content": turn.final_response})
    return messages


def user_text(user_input: UserInput) -> str:
    """What the model reads as the user's message ("" when the input has no text)."""
    if user_input.text:
        return user_input.text
    if user_input.event:
        return f"[event: {user_input.event}]"
    return ""


def _state_delta(before: dict[str, object], after: dict[str, object]) -> dict[str, object]:
    """Keys a tool set or changed (removed ones as None), JSON-safe copies."""
    delta = {k: v for k, v in after.items() if k not in before or before[k] != v}
    delta.update({k: None for k in before if k not in after})
    return dict(to_jsonable_python(delta, fallback=str))


class OpenAIToolsSession:
    """One conversation: the chat messages so far and the session state."""

    def __init__(self, agent: OpenAIToolsAgent, case: EvalCase, options: SessionOptions) -> None:
        self._agent = agent
        self._hook = options.tools
        self.state = initial_state(case, options)
        system = [{"role": "system", "content": agent.instructions}] if agent.instructions else []
        self.messages: list[dict[str, Any]] = system + history_messages(options.history)

    async def send(self, user_input: UserInput) -> Turn:
        started = time.perf_counter()
        apply_input_variables(self.state, user_input)
        messages = [*self.messages, {"role": "user", "content": user_text(user_input)}]
        steps: list[Step] = []
        usage = Usage()
        rounds = 0
        while True:
            message, round_usage = await self._agent.complete(messages)
            usage.input_tokens += round_usage.input_tokens
            usage.output_tokens += round_usage.output_tokens
            calls = [c for c in message.tool_calls or () if c.type == "function"]
            if not calls:
                messages.append({"role": "assistant", "content": message.content or ""})
                break
            if rounds >= self._agent.max_tool_rounds:
                names = ", ".join(c.function.name for c in calls)
                raise AgentError(
                    f"{self._agent.label} still asked for tools ({names}) after "
                    f"max_tool_rounds={self._agent.max_tool_rounds} rounds of tool calls "
                    "without answering; raise max_tool_rounds or check the tools' results"
                )
            rounds += 1
            if message.content:
                steps.append(
                    Step(agent_message=AgentMessage(author=self._agent.name, text=message.content))
                )
            # Only the request fields: reply-only ones (annotations, audio) may be refused.
            messages.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        {"id": c.id, "type": "function", "function": c.function.model_dump()}
                        for c in calls
                    ],
                }
            )
            for call in calls:
                result_steps, payload = await self._run_tool(call.id, call.function)
                steps += result_steps
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": _content(payload)}
                )
        self.messages = messages
        return Turn(
            user_input=user_input,
            steps=steps,
            final_response=message.content,
            latency_s=time.perf_counter() - started,
            usage=usage,
        )

    async def _run_tool(self, call_id: str, function: Any) -> tuple[list[Step], object]:
        name: str = function.name
        args: dict[str, Any] = {}
        problem: str | None = None
        try:
            decoded = json.loads(function.arguments or "{}")
        except ValueError as exc:
            problem = f"the arguments are not valid JSON ({exc}): {function.arguments!r}"
        else:
            if isinstance(decoded, dict):
                args = decoded
            else:
                problem = f"the arguments must be a JSON object, got {function.arguments!r}"
        call = ToolCall(id=call_id, name=name, args=args)
        spec = self._agent.tools.get(name)
        before = copy.deepcopy(self.state) if spec is not None and spec.wants_state else None
        real = None if spec is None else self._real(spec, args, problem)
        payload, seconds = await self._hook.execute(call, real)
        payload = to_jsonable_python(payload, fallback=str)
        steps = [
            Step(tool_call=call),
            Step(
                tool_response=ToolResponse(
                    id=call_id, name=name, response=payload, latency_s=seconds
                )
            ),
        ]
        if before is not None and self.state != before:
            steps.append(Step(variables_update=_state_delta(before, self.state)))
        return steps, payload

    def _real(
        self, spec: ToolSpec, args: dict[str, object], problem: str | None
    ) -> Callable[[], object]:
        """The call of the real tool, as the hook wants it (async for async tools)."""
        state = self.state

        def kwargs() -> dict[str, object]:
            if problem is not None:
                raise ToolArgumentError(problem)
            bound = spec.bind(args)
            if spec.wants_state:
                bound["state"] = state
            return bound

        if spec.is_async:

            async def run_async() -> object:
                return await spec.fn(**kwargs())

            return run_async

        def run() -> object:
            return spec.fn(**kwargs())

        return run

    async def close(self) -> None:
        return None


class OpenAIToolsAgent:
    """A chat-completions model with Python tools, evaluated as an agent."""

    def __init__(
        self,
        model: str,
        tools: Sequence[Callable[..., object]] = (),
        *,
        instructions: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        name: str | None = None,
        max_tool_rounds: int = 10,
        temperature: float | None = None,
        max_retries: int = 3,
        timeout_s: float = 120.0,
    ) -> None:
        if max_tool_rounds < 1:
            raise AgentError(f"max_tool_rounds must be at least 1, got {max_tool_rounds}")
        self.model = model
        self.name = name or model
        self.instructions = instructions
        self.max_tool_rounds = max_tool_rounds
        self.temperature = temperature
        self.tools: dict[str, ToolSpec] = {}
        for fn in tools:
            spec = ToolSpec.from_function(fn)
            if spec.name in self.tools:
                raise AgentError(f"agent {self.name}: two tools are named {spec.name!r}")
            self.tools[spec.name] = spec
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key or os.environ.get("OPENAI_API_KEY") or None
        if key is None:
            if self.base_url is None or _OPENAI_HOST in self.base_url:
                raise AgentError(
                    f"agent {self.name}: OpenAI model {model!r} needs an API key: set "
                    "OPENAI_API_KEY (or api_key=...), or point OPENAI_BASE_URL (or "
                    "base_url=...) at an OpenAI-compatible server such as vLLM or Ollama"
                )
            key = PLACEHOLDER_API_KEY  # self-hosted servers ignore it; the SDK needs one
        self.label = f"OpenAI model {model!r} at {self.base_url or 'https://' + _OPENAI_HOST}"
        self._sdk = sdk = _openai_sdk()
        self._clients: PerLoop[Any] = PerLoop(
            lambda: sdk.AsyncOpenAI(
                api_key=key,
                base_url=self.base_url,
                # assay's retry policy is the only one (as for judges): the SDK tries once.
                max_retries=0,
                timeout=timeout_s,
                # The SDK's own client closes itself on garbage collection by scheduling
                # a task on whatever loop runs then, which fails once its loop is gone.
                http_client=sdk.DefaultAsyncHttpxClient(),
            ),
            lambda client: client.close(),
        )
        if max_retries < 0:
            raise AgentError(f"agent {self.name}: max_retries must be 0 or more, got {max_retries}")
        self._max_retries = max_retries
        # Outside a run the agent paces itself; in a run it shares the run's pacing of
        # its endpoint with the judges and the simulated user calling the same server.
        self._own_pacing = ModelRegistry(concurrency=OWN_CONCURRENCY, max_retries=max_retries)
        self._endpoint: str | None = None

    def declarations(self) -> list[dict[str, object]]:
        """The tools as ``{"name", "description", "parameters"}``."""
        return [spec.declaration() for spec in self.tools.values()]

    def app_details(self) -> dict[str, object]:
        """Instructions and tool declarations in ADK's app-details shape (for judges)."""
        declarations = self.declarations()
        return {
            "agent_details": {
                self.name: {
                    "name": self.name,
                    "instructions": self.instructions or "",
                    "tool_declarations": (
                        [{"function_declarations": declarations}] if declarations else []
                    ),
                }
            }
        }

    async def complete(self, messages: Sequence[dict[str, object]]) -> tuple[Any, Usage]:
        """One chat completion: (the reply message, its token usage).

        Rate limits, server errors, timeouts and lost connections are retried
        (`max_retries`, honouring Retry-After) with the run's pacing of this endpoint
        (`assay.models.registry`): the limiter and retry policy the judges and the
        simulated user calling it share too. A 429 that outlasts them is
        QuotaExhaustedError.
        """
        params: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if self.tools:
            params["tools"] = [{"type": "function", "function": d} for d in self.declarations()]
        if self.temperature is not None:
            params["temperature"] = self.temperature
        client, sdk = self._clients.get(), self._sdk
        if self._endpoint is None:
            self._endpoint = str(client.base_url)
        pacing = pacing_in_run("openai", self._endpoint, fallback=self._own_pacing)
        limiter, retry = pacing.limiter, pacing.with_retries(self._max_retries)
        for attempt in itertools.count():
            permit = await limiter.acquire()
            try:
                completion = await client.chat.completions.create(**params)
            except sdk.APIStatusError as exc:
                status = exc.status_code
                retryable, asked = is_retryable_status(status), _retry_after(exc)
                limiter.release(
                    permit, ok=False, overloaded=status == 429 or status >= 500, retry_after=asked
                )
                if not retry.should_retry(attempt, retryable):
                    raise self._failure(exc) from None
            except sdk.APIConnectionError as exc:  # timeouts included
                limiter.release(permit, ok=False)
                if not retry.should_retry(attempt, True):
                    raise self._failure(exc) from None
                asked = None
            except BaseException:
                limiter.release(permit, ok=False)
                raise
            else:
                limiter.release(permit, ok=True)
                break
            await asyncio.sleep(retry.delay(attempt + 1, asked))
        if not completion.choices:
            raise AgentError(f"{self.label} answered with no choices")
        usage = completion.usage
        counted = Usage(
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
        )
        return completion.choices[0].message, counted

    def _failure(self, exc: Exception) -> AgentError:
        """The error a call that failed for good raises (QuotaExhaustedError for 429)."""
        sdk = self._sdk
        if isinstance(exc, sdk.RateLimitError):
            return QuotaExhaustedError(
                f"{self.label} kept answering 429 (rate limit or quota) after "
                f"{self._max_retries} retries: {_detail(exc)}"
            )
        if isinstance(exc, sdk.APIStatusError):
            return AgentError(f"{self.label} answered HTTP {exc.status_code}: {_detail(exc)}")
        if isinstance(exc, sdk.APITimeoutError):
            return AgentError(f"{self.label} did not answer in time")
        return AgentError(f"{self.label} could not be reached: {exc}")

    async def start_session(
        self, case: EvalCase, options: SessionOptions | None = None
    ) -> OpenAIToolsSession:
        return OpenAIToolsSession(self, case, options or SessionOptions.for_case(case))

    async def aclose(self) -> None:
        """Close this event loop's HTTP client."""
        await self._clients.aclose()
