"""Adapter for an agent behind an HTTP endpoint: POST the conversation, read back events.

For each user turn `HttpAgent` POSTs one JSON request to the endpoint's URL and reads
one JSON reply (contract in docs/http-agent.md):

request::

    {"session_id": "...", "case_id": "...", "turn_index": 0,
     "user_input": {"text": "..."},
     "messages": [{"role": "user" | "agent", "text": "..."}],   # so far, new input last
     "history": [<assay Turn JSON>, ...],                        # earlier turns, in full
     "state": {...},                                             # session state
     "tools_mode": "REAL" | "FAKE" | "MIXED",
     "tool_mocks": [{"name", "args", "response", "note"}]}      # [] when REAL

reply::

    {"events": [{"type": "tool_call", "id", "name", "args"},
                {"type": "tool_response", "id", "name", "response", "latency_s"},
                {"type": "message", "author", "text"},
                {"type": "transfer", "target_agent"},
                {"type": "state_update", "delta": {...}}],
     "final_response": "...", "usage": {"input_tokens": 0, "output_tokens": 0}}

The endpoint runs its own tools, so FAKE / MIXED mocking is its job: the request
carries the session's mocks and the mode so it can answer matching calls from them.
The adapter keeps the session: a new `session_id` per session, the history, and the
state with every ``state_update`` applied. A 429 is retried (`max_retries`, honouring
Retry-After, backing off as judge calls do, through the run's pacing of the URL in
`assay.models.registry`) and then
raises QuotaExhaustedError; any other failure raises AgentError
naming the URL and what was wrong.
"""

from __future__ import annotations

import asyncio
import copy
import time
import uuid
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.agents._session_support import PerLoop, apply_input_variables, initial_state
from assay.agents.base import SessionOptions
from assay.agents.tools import ToolBehavior, ToolMock
from assay.core.cases import (
    AgentMessage,
    AgentTransfer,
    EvalCase,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    Usage,
    UserInput,
)
from assay.errors import AgentError, QuotaExhaustedError
from assay.models.http import retry_after_seconds
from assay.models.registry import ModelRegistry, pacing_in_run
from assay.redact import redact_url, remember, remember_url

#: calls in flight to the endpoint outside a run: no bound of its own (the limiter
#: still pauses on Retry-After and halves on 429 / 5xx)
OWN_CONCURRENCY = 1024
#: longest Retry-After the adapter waits for before giving up on a 429
MAX_RETRY_AFTER_S = 30.0
#: the most of an error reply's body kept with the case (its traceback, if it sent one)
REMOTE_BODY_CHARS = 64_000


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCallEvent(_Event):
    type: Literal["tool_call"]
    id: str | None = None
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolResponseEvent(_Event):
    type: Literal["tool_response"]
    id: str | None = None
    name: str
    response: Any = None
    latency_s: float | None = None


class MessageEvent(_Event):
    type: Literal["message"]
    author: str | None = None
    text: str


class TransferEvent(_Event):
    type: Literal["transfer"]
    target_agent: str


class StateUpdateEvent(_Event):
    type: Literal["state_update"]
    delta: dict[str, Any]


Event = Annotated[
    ToolCallEvent | ToolResponseEvent | MessageEvent | TransferEvent | StateUpdateEvent,
    Field(discriminator="type"),
]


class ReplyUsage(BaseModel):
    """Token counts; other counters an endpoint sends (``total_tokens``) are ignored."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class AgentReply(_Event):
    """The JSON an endpoint answers for one turn."""

    events: list[Event] = Field(default_factory=list)
    final_response: str | None = None
    usage: ReplyUsage | None = None


def _step(event: Event) -> Step:
    if isinstance(event, ToolCallEvent):
        return Step(tool_call=ToolCall(id=event.id, name=event.name, args=event.args))
    if isinstance(event, ToolResponseEvent):
        response = ToolResponse(
            id=event.id, name=event.name, response=event.response, latency_s=event.latency_s
        )
        return Step(tool_response=response)
    if isinstance(event, MessageEvent):
        return Step(agent_message=AgentMessage(author=event.author, text=event.text))
    if isinstance(event, TransferEvent):
        return Step(agent_transfer=AgentTransfer(target_agent=event.target_agent))
    return Step(variables_update=event.delta)


def mock_json(mock: ToolMock) -> dict[str, object]:
    """A tool mock as the request's ``tool_mocks`` entries carry it."""
    return {
        "name": mock.call.name,
        "args": mock.call.args,
        "response": mock.response.response,
        "note": mock.note,
    }


def conversation(turns: list[Turn], user_input: UserInput) -> list[dict[str, str]]:
    """The texts so far as ``{"role": "user" | "agent", "text"}``, the new input last."""
    messages = []
    for turn in turns:
        if turn.user_input.text:
            messages.append({"role": "user", "text": turn.user_input.text})
        if turn.final_response:
            messages.append({"role": "agent", "text": turn.final_response})
    messages.append({"role": "user", "text": user_input.text or ""})
    return messages


class HttpSession:
    """One conversation with the endpoint."""

    def __init__(self, agent: HttpAgent, case: EvalCase, options: SessionOptions) -> None:
        self._agent = agent
        self._case = case
        self._hook = options.tools
        self.session_id = uuid.uuid4().hex
        self.turns: list[Turn] = list(options.history)
        self.state = initial_state(case, options)

    def request_body(self, user_input: UserInput) -> dict[str, object]:
        """The JSON posted for `user_input`."""
        mode = self._hook.behavior
        mocks = [] if mode is ToolBehavior.REAL else [mock_json(m) for m in self._hook.mocks]
        return {
            "session_id": self.session_id,
            "case_id": self._case.id,
            "turn_index": len(self.turns),
            "user_input": user_input.model_dump(mode="json", exclude_defaults=True),
            "messages": conversation(self.turns, user_input),
            "history": [
                t.model_dump(mode="json", exclude_none=True, exclude={"expectations", "rubrics"})
                for t in self.turns
            ],
            "state": self.state,
            "tools_mode": mode.value,
            "tool_mocks": mocks,
        }

    async def send(self, user_input: UserInput) -> Turn:
        started = time.perf_counter()
        apply_input_variables(self.state, user_input)
        reply = await self._agent.post(self.request_body(user_input))
        steps = [_step(event) for event in reply.events]
        for event in reply.events:
            if isinstance(event, StateUpdateEvent):
                self.state.update(copy.deepcopy(event.delta))
        turn = Turn(
            user_input=user_input,
            steps=steps,
            final_response=reply.final_response,
            latency_s=time.perf_counter() - started,
            usage=Usage(**reply.usage.model_dump()) if reply.usage else None,
        )
        self.turns.append(turn)
        return turn

    async def close(self) -> None:
        return None


class HttpAgent:
    """An agent served over HTTP, spoken to with assay's JSON contract."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = 60.0,
        name: str | None = None,
        max_retries: int = 2,
    ) -> None:
        # The URL's password and secret query values are sent, never shown (issue #31).
        shown = self.shown = redact_url(url)
        remember_url(url)
        for value in (headers or {}).values():
            remember(value)
            remember(value.partition(" ")[2] or None)  # "Bearer TOKEN"
        if not url.startswith(("http://", "https://")):
            raise AgentError(f"HTTP agent URL must start with http:// or https://, got {shown!r}")
        if timeout_s <= 0:
            raise AgentError(f"HTTP agent {shown}: timeout must be positive, got {timeout_s}")
        self.url = url
        self.name = name or shown
        self.timeout_s = timeout_s
        if max_retries < 0:
            raise AgentError(
                f"HTTP agent {shown}: max_retries must be 0 or more, got {max_retries}"
            )
        self.max_retries = max_retries
        # Outside a run the agent paces itself; in a run its endpoint's pacing is the
        # run's (assay.models.registry), shared with any other caller of the same URL.
        self._own_pacing = ModelRegistry(concurrency=OWN_CONCURRENCY, max_retries=max_retries)
        fixed = dict(headers or {})
        self._clients: PerLoop[httpx.AsyncClient] = PerLoop(
            lambda: httpx.AsyncClient(headers=fixed, timeout=timeout_s),
            lambda client: client.aclose(),
        )

    async def post(self, body: dict[str, object]) -> AgentReply:
        """POST one request; the parsed reply, or AgentError / QuotaExhaustedError."""
        client = self._clients.get()
        pacing = pacing_in_run("http", self.url, fallback=self._own_pacing)
        limiter, retry = pacing.limiter, pacing.with_retries(self.max_retries)
        for attempt in range(self.max_retries + 1):
            permit = await limiter.acquire()
            try:
                response = await client.post(self.url, json=body)
            except httpx.TimeoutException:
                limiter.release(permit, ok=False)
                raise AgentError(
                    f"HTTP agent {self.shown} did not answer within {self.timeout_s:g}s"
                ) from None
            except httpx.RemoteProtocolError as exc:
                # It was reached, then broke off (a crash mid-call): not an address problem.
                raise AgentError(
                    f"HTTP agent {self.shown} dropped the connection before a complete reply: {exc}"
                ) from None
            except httpx.HTTPError as exc:
                limiter.release(permit, ok=False)
                raise AgentError(f"HTTP agent {self.shown} could not be reached: {exc}") from None
            except BaseException:
                limiter.release(permit, ok=False)
                raise
            status = response.status_code
            asked = retry_after_seconds(response.headers) if status == 429 else None
            limiter.release(
                permit,
                ok=response.is_success,
                overloaded=status == 429 or status >= 500,
                # A wait longer than the adapter accepts ends this call (below); the
                # endpoint is not paused for the run's other callers that long.
                retry_after=asked if (asked or 0) <= MAX_RETRY_AFTER_S else None,
            )
            if status != 429:
                break
            if not retry.should_retry(attempt, True) or (asked or 0) > MAX_RETRY_AFTER_S:
                raise QuotaExhaustedError(
                    f"HTTP agent {self.shown} kept answering 429 Too Many Requests "
                    f"({attempt + 1} attempt(s)): {response.text[:300]}"
                )
            await asyncio.sleep(retry.delay(attempt + 1, asked))
        return self._reply(response)

    def _reply(self, response: httpx.Response) -> AgentReply:
        status = f"{response.status_code} {response.reason_phrase}".strip()
        if not response.is_success:
            raise AgentError(
                f"HTTP agent {self.shown} answered {status}: {response.text[:300]}",
                remote=response.text[:REMOTE_BODY_CHARS],
            )
        try:
            data = response.json()
        except ValueError:
            raise AgentError(
                f"HTTP agent {self.shown} answered {status} with a body that is not JSON: "
                f"{response.text[:120]!r}",
                remote=response.text[:REMOTE_BODY_CHARS],
            ) from None
        try:
            return AgentReply.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'reply'}: {e['msg']}" for e in exc.errors()
            )
            raise AgentError(
                f"HTTP agent {self.shown} answered {status} with a reply that does not follow "
                f"the assay HTTP agent contract (docs/http-agent.md): {problems}"
            ) from None

    async def start_session(
        self, case: EvalCase, options: SessionOptions | None = None
    ) -> HttpSession:
        return HttpSession(self, case, options or SessionOptions.for_case(case))

    async def aclose(self) -> None:
        """Close this event loop's HTTP client."""
        await self._clients.aclose()
