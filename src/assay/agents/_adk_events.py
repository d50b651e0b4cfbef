"""Translation between ADK events and assay Turns, both ways (used by `assay.agents.adk`).

ADK → assay mirrors how google-adk's own evaluation (`EvaluationGenerator`) turns one
invocation's events into an `Invocation`: the text of the LAST event that
`is_final_response()` is the final response (parts joined by newlines), and every other
agent text, function call and function response is intermediate data, here the Turn's
ordered steps. Thought parts are not responses and are skipped. On top of ADK's view the
steps also record `actions.transfer_to_agent` (an `agent_transfer` step after the
`transfer_to_agent` call and response, which stay tool steps as ADK's trajectories keep
them) and `actions.state_delta` (a `variables_update` step). Token usage sums the
events' `usage_metadata` per token type as ADK's `token_usage_v1` does (input = prompt +
tool-use prompt, output = candidates + thoughts), and events with usage or a model
version count as model calls (`inference_call_count_v1`). Events' `grounding_metadata`
is kept on the turn (`Turn.grounding`), for the judges that show it as ADK's do.

assay → ADK builds the events a seeded session holds: for each earlier Turn the user's
message, then its steps and final response authored by the agent that produced them, so
ADK's routing (which agent answers next) and state (`variables_update` steps become
`state_delta`s) continue from where the seeded conversation left off.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Iterable, Mapping, Sequence

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from assay.core.cases import (
    AgentMessage,
    AgentTransfer,
    Grounding,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    Usage,
    UserInput,
)
from assay.errors import AgentError

USER_AUTHOR = "user"
TRANSFER_TOOL = "transfer_to_agent"


def as_response_dict(payload: object) -> dict[str, object]:
    """A function response payload as ADK carries it: a dict (others under "result")."""
    return payload if isinstance(payload, dict) else {"result": payload}


def _texts(content: types.Content | None) -> list[str]:
    return [p.text for p in (content.parts or []) if p.text and not p.thought] if content else []


def _is_final_with_text(event: Event) -> bool:
    return event.is_final_response() and bool(_texts(event.content))


# Turn `Usage` fields <- genai usage metadata attributes (ADK's token types).
_USAGE_COUNTS = {
    "prompt_tokens": "prompt_token_count",
    "tool_use_tokens": "tool_use_prompt_token_count",
    "cached_tokens": "cached_content_token_count",
    "candidates_tokens": "candidates_token_count",
    "reasoning_tokens": "thoughts_token_count",
}


def _usage(counts: dict[str, int | None]) -> Usage | None:
    """The invocation's usage as ADK sums it: input = prompt + tool-use prompt tokens,
    output = candidates + thoughts; None when no model call reported any count."""
    if all(v is None for v in counts.values()):
        return None
    inputs = (counts["prompt_tokens"] or 0) + (counts["tool_use_tokens"] or 0)
    outputs = (counts["candidates_tokens"] or 0) + (counts["reasoning_tokens"] or 0)
    return Usage(input_tokens=inputs, output_tokens=outputs, **counts)


def events_to_turn(
    events: Sequence[Event],
    user_input: UserInput,
    *,
    latencies: Mapping[str, float] | None = None,
    latency_s: float | None = None,
) -> Turn:
    """One Turn from the events of one invocation (user events are skipped).

    `latencies` maps function call ids to the seconds their tool took.
    """
    agent_events = [e for e in events if not e.partial and e.author != USER_AUTHOR]
    final = next((e for e in reversed(agent_events) if _is_final_with_text(e)), None)
    steps: list[Step] = []
    counts: dict[str, int | None] = dict.fromkeys(_USAGE_COUNTS)
    model_calls = 0
    errors: list[str] = []
    grounding: list[Grounding] = []
    for index, event in enumerate(agent_events):
        if event.grounding_metadata is not None:
            found = event.grounding_metadata.model_dump(mode="json", exclude_none=True)
            grounding.append(
                Grounding(step=index, author=event.author, metadata=found, first_step=len(steps))
            )
        usage = event.usage_metadata
        if usage is not None or event.model_version is not None:
            model_calls += 1  # what ADK's inference_call_count_v1 counts
        if usage is not None:
            for field, attr in _USAGE_COUNTS.items():
                value = getattr(usage, attr, None)
                if value is not None:
                    counts[field] = (counts[field] or 0) + value
        if event.error_code or event.error_message:
            errors.append(f"{event.author}: {event.error_code or 'error'}: {event.error_message}")
        steps.extend(_event_steps(event, is_final=event is final, latencies=latencies or {}))
    return Turn(
        user_input=user_input,
        steps=steps,
        final_response="\n".join(_texts(final.content)) if final is not None else None,
        latency_s=latency_s,
        usage=_usage(counts),
        model_calls=model_calls,
        error="; ".join(errors) or None,
        grounding=grounding or None,
    )


def _event_steps(event: Event, *, is_final: bool, latencies: Mapping[str, float]) -> list[Step]:
    steps: list[Step] = []
    parts = (event.content.parts or []) if event.content else []
    for part in parts:
        if part.text and not part.thought and not is_final:
            steps.append(Step(agent_message=AgentMessage(author=event.author, text=part.text)))
        call = part.function_call
        if call is not None:
            steps.append(
                Step(tool_call=ToolCall(id=call.id, name=call.name or "", args=call.args or {}))
            )
        answer = part.function_response
        if answer is not None:
            steps.append(
                Step(
                    tool_response=ToolResponse(
                        id=answer.id,
                        name=answer.name or "",
                        response=answer.response,
                        latency_s=latencies.get(answer.id) if answer.id else None,
                    )
                )
            )
    if event.actions.transfer_to_agent:
        steps.append(
            Step(agent_transfer=AgentTransfer(target_agent=event.actions.transfer_to_agent))
        )
    if event.actions.state_delta:
        steps.append(Step(variables_update=dict(event.actions.state_delta)))
    return steps


# -- assay → ADK ---------------------------------------------------------------------------


def user_content(user_input: UserInput, where: str) -> types.Content:
    """The ADK message for one user turn: text, DTMF digits, files, tool responses.

    Raises AgentError for an input ADK has no way to receive (a CES event alone).
    """
    parts: list[types.Part] = []
    if user_input.text:
        parts.append(types.Part(text=user_input.text))
    if user_input.dtmf:
        parts.append(types.Part(text=user_input.dtmf))
    for i, blob in enumerate(user_input.blobs):
        try:
            data = base64.b64decode(blob.data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise AgentError(f"{where}: user_input.blobs[{i}].data is not base64 ({exc})") from None
        parts.append(types.Part(inline_data=types.Blob(mime_type=blob.mime_type, data=data)))
    for response in user_input.tool_responses:
        parts.append(
            types.Part(
                function_response=types.FunctionResponse(
                    id=response.id, name=response.name, response=as_response_dict(response.response)
                )
            )
        )
    if not parts and user_input.event:
        raise AgentError(
            f"{where}: user input is the event {user_input.event!r}; ADK agents receive "
            "messages (text, files, function responses), not named events"
        )
    return types.Content(role=USER_AUTHOR, parts=parts)


class _CallIds:
    """Gives seeded calls ids and pairs responses without one with their call."""

    def __init__(self) -> None:
        self._open: list[tuple[str, str]] = []  # (name, id) of calls not answered yet

    def call(self, call: ToolCall) -> str:
        call_id = call.id or f"assay-{uuid.uuid4().hex[:12]}"
        self._open.append((call.name, call_id))
        return call_id

    def response(self, response: ToolResponse) -> str | None:
        for i, (name, call_id) in enumerate(self._open):
            if call_id == response.id or (response.id is None and name == response.name):
                del self._open[i]
                return call_id
        return response.id

    def unanswered(self) -> set[str]:
        return {call_id for _, call_id in self._open}


class _Seeder:
    """Accumulates the seeded events, tracking which agent is talking."""

    def __init__(self, root_name: str, agent_names: Iterable[str]) -> None:
        self.known = set(agent_names)
        self.author = root_name
        self.ids = _CallIds()
        self.events: list[Event] = []
        self.invocation = ""

    def add(
        self,
        parts: list[types.Part],
        actions: EventActions | None = None,
        *,
        author: str | None = None,
        role: str = "model",
    ) -> None:
        self.events.append(
            Event(
                invocation_id=self.invocation,
                author=author or self.author,
                content=types.Content(role=role, parts=parts) if parts else None,
                actions=actions or EventActions(),
            )
        )

    def answer(self, message: types.Content) -> None:
        """Pair a user message's function responses (client tools) with open calls."""
        for part in message.parts or []:
            answer = part.function_response
            if answer is not None:
                answer.id = self.ids.response(ToolResponse(id=answer.id, name=answer.name or ""))

    def turn(self, index: int, turn: Turn) -> None:
        self.invocation = f"assay-seed-{index}-{uuid.uuid4().hex[:8]}"
        message = user_content(turn.user_input, f"history turn {index}")
        self.answer(message)
        delta = dict(turn.user_input.variables or {})
        if message.parts or delta:
            self.add(
                list(message.parts or []),
                EventActions(state_delta=delta),
                author=USER_AUTHOR,
                role=USER_AUTHOR,
            )
        for step in turn.steps:
            self.step(step)
        if turn.final_response:
            self.add([types.Part(text=turn.final_response)])

    def step(self, step: Step) -> None:
        if step.agent_message is not None:
            if step.agent_message.author in self.known:
                self.author = step.agent_message.author
            self.add([types.Part(text=step.agent_message.text)])
        elif step.tool_call is not None:
            call = step.tool_call
            fc = types.FunctionCall(id=self.ids.call(call), name=call.name, args=dict(call.args))
            self.add([types.Part(function_call=fc)])
        elif step.tool_response is not None:
            tr = step.tool_response
            fr = types.FunctionResponse(
                id=self.ids.response(tr), name=tr.name, response=as_response_dict(tr.response)
            )
            # ADK authors a function response with the calling agent, in a user-role content.
            self.add([types.Part(function_response=fr)], role=USER_AUTHOR)
        elif step.agent_transfer is not None:
            target = step.agent_transfer.target_agent
            self.add([], EventActions(transfer_to_agent=target))
            if target in self.known:
                self.author = target
        elif step.variables_update is not None:
            self.add([], EventActions(state_delta=dict(step.variables_update)))


def seed_events(
    history: Iterable[Turn],
    *,
    root_name: str,
    agent_names: Iterable[str],
    next_message: types.Content,
) -> list[Event]:
    """The events of earlier turns, for a session whose next message is `next_message`.

    An agent message's author (when it names an agent of the tree) or the target of a
    transfer becomes the author of the steps after it, so the next turn is answered by
    the agent that was talking, as in the seeded conversation. Calls without an id get
    one, and responses without an id answer the earliest open call of their tool
    (`next_message`'s function responses too: their ids are filled in place).

    A call that nothing answers is left out (golden turns often list calls without
    their results): ADK would drop it before the request anyway, as models reject a
    call without a response.
    """
    seeder = _Seeder(root_name, agent_names)
    for index, turn in enumerate(history):
        seeder.turn(index, turn)
    seeder.answer(next_message)
    dropped = seeder.ids.unanswered()
    return [e for e in seeder.events if not _calls_only(e, dropped)]


def _calls_only(event: Event, ids: set[str]) -> bool:
    calls = event.get_function_calls()
    return bool(calls) and all(c.id in ids for c in calls)
