"""The judge's view of an invocation, rendered as plain text for prompts.

Judges see what the agent saw and did: the developer instructions and tool
declarations when the input carries them, the conversation so far, the user prompt,
every step of the turn (tool calls and results, intermediate agent messages, transfers,
variable updates, retrieved documents) and the final response. Every metric family
renders these pieces the same way, so prompts stay comparable and cache keys stable.

Developer instructions and tool declarations come from ADK's `app_details`
(`{agent_details: {NAME: {name, instructions, tool_declarations}}}`), which the ADK
reader keeps per invocation in `case.metadata["adk_unmapped"]["conversation"][INDEX]`;
a case-level `case.metadata["app_details"]` (e.g. recorded by an agent runner) applies
to every invocation that has none of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.core.cases import EvalCase, Grounding, Step, Turn, UserInput

NO_INSTRUCTIONS = "(no developer instructions were provided)"
NO_TOOLS = "(no tool declarations were provided)"
NO_STEPS = "(the agent took no intermediate steps: no tool calls, messages or retrievals)"
NO_HISTORY = "(this is the first turn of the conversation)"
NO_RESPONSE = "(the agent gave no final response)"
NO_PROMPT = "(empty user input)"


@dataclass(frozen=True)
class AgentInfo:
    """One agent of the app under test: its name, instructions and tool declarations."""

    name: str
    instructions: str = ""
    tools: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class InvocationView:
    """Everything a judge may see about one invocation.

    `history` holds the earlier turns of the same conversation (actual turns), `index`
    the position of `turn` in it (None when unknown, e.g. a turn judged on its own).
    """

    case: EvalCase
    turn: Turn
    expected: Turn | None = None
    index: int | None = None
    history: Sequence[Turn] = ()

    @property
    def agents(self) -> list[AgentInfo]:
        return agents_for(self.case, self.index)

    @property
    def user_prompt(self) -> str:
        """The user prompt; the expected turn's when the actual turn lost it."""
        text = user_prompt_text(self.turn.user_input)
        if text == NO_PROMPT and self.expected is not None:
            return user_prompt_text(self.expected.user_input)
        return text


def views_of(
    case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
) -> list[InvocationView]:
    """One view per invocation of a case, each knowing the turns before it."""
    return [
        InvocationView(case, turn, exp, i, tuple(actual[:i]))
        for i, (turn, exp) in enumerate(zip(actual, expected, strict=True))
    ]


def view_of(case: EvalCase, turn: Turn, expected: Turn | None) -> InvocationView:
    """A view of one turn judged on its own.

    Its index is found by identity among the case's recorded turns (then the turns
    before it are its history) or among the reference turns (no history: those hold
    expected answers, not what the agent said).
    """
    recorded = case.actual or []
    for i, candidate in enumerate(recorded):
        if candidate is turn:
            return InvocationView(case, turn, expected, i, tuple(recorded[:i]))
    for i, candidate in enumerate(case.reference or []):
        if candidate is turn or (expected is not None and candidate is expected):
            return InvocationView(case, turn, expected, i)
    return InvocationView(case, turn, expected)


# -- app details ---------------------------------------------------------------------------


def _agents_from(app_details: object) -> list[AgentInfo]:
    if not isinstance(app_details, Mapping):
        return []
    details = app_details.get("agent_details", app_details.get("agentDetails"))
    if not isinstance(details, Mapping):
        return []
    agents: list[AgentInfo] = []
    for key, value in details.items():
        if not isinstance(value, Mapping):
            continue
        instructions = value.get("instructions")
        tools = value.get("tool_declarations", value.get("toolDeclarations"))
        agents.append(
            AgentInfo(
                name=str(value.get("name") or key),
                instructions=instructions if isinstance(instructions, str) else "",
                tools=list(tools) if isinstance(tools, list) else [],
            )
        )
    return agents


def agents_for(case: EvalCase, index: int | None) -> list[AgentInfo]:
    """The agents (instructions, tools) known for invocation `index` of `case`."""
    if index is not None:
        unmapped = case.metadata.get("adk_unmapped")
        conversation = unmapped.get("conversation") if isinstance(unmapped, Mapping) else None
        per_turn = conversation.get(str(index)) if isinstance(conversation, Mapping) else None
        if isinstance(per_turn, Mapping):
            agents = _agents_from(per_turn.get("app_details"))
            if agents:
                return agents
    return _agents_from(case.metadata.get("app_details"))


def render_instructions(agents: Sequence[AgentInfo]) -> str:
    """Each agent's instructions under its name."""
    parts = [f"{a.name}:\n{a.instructions.strip()}" for a in agents if a.instructions.strip()]
    return "\n\n".join(parts) or NO_INSTRUCTIONS


def render_tool_declarations(agents: Sequence[AgentInfo]) -> str:
    """The tools each agent may call, as JSON keyed by agent name."""
    tools = {a.name: a.tools for a in agents if a.tools}
    return _json(tools) if tools else NO_TOOLS


# -- turns and steps ------------------------------------------------------------------------


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def user_prompt_text(user_input: UserInput) -> str:
    """What the user sent, in words: text, plus any event, DTMF or tool responses."""
    parts: list[str] = []
    if user_input.text:
        parts.append(user_input.text)
    if user_input.event:
        parts.append(f"[event: {user_input.event}]")
    if user_input.dtmf:
        parts.append(f"[DTMF digits: {user_input.dtmf}]")
    if user_input.variables:
        parts.append(f"[variables: {_compact(user_input.variables)}]")
    for response in user_input.tool_responses:
        parts.append(f"[tool result from {response.name}: {_compact(response.response)}]")
    if user_input.blobs:
        kinds = ", ".join(sorted({b.mime_type for b in user_input.blobs}))
        parts.append(f"[{len(user_input.blobs)} attachment(s): {kinds}]")
    return "\n".join(parts) or NO_PROMPT


def response_text(turn: Turn, *, include_intermediate: bool = False) -> str | None:
    """The final response; with `include_intermediate`, the agent's intermediate
    messages first, one per line (as ADK's `include_intermediate_responses_in_final`)."""
    parts = [m.text for m in turn.agent_messages()] if include_intermediate else []
    if turn.final_response:
        parts.append(turn.final_response)
    return "\n".join(p for p in parts if p) or None


def render_step(step: Step) -> str:
    """One step as a line a judge can read."""
    if step.tool_call is not None:
        return f"tool call: {step.tool_call.name}({_compact(step.tool_call.args)})"
    if step.tool_response is not None:
        return (
            f"tool result from {step.tool_response.name}: {_compact(step.tool_response.response)}"
        )
    if step.agent_message is not None:
        who = f" ({step.agent_message.author})" if step.agent_message.author else ""
        return f"agent message{who}: {step.agent_message.text}"
    if step.agent_transfer is not None:
        return f"transfer to agent: {step.agent_transfer.target_agent}"
    if step.variables_update is not None:
        return f"session variables updated: {_compact(step.variables_update)}"
    if step.retrieval is not None:
        if not step.retrieval.chunks:
            return "retrieved documents: (none)"
        lines = ["retrieved documents:"]
        for chunk in step.retrieval.chunks:
            source = f"[{chunk.doc_uri}] " if chunk.doc_uri else ""
            lines.append(f"  - {source}{chunk.content or ''}")
        return "\n".join(lines)
    raise AssertionError("unreachable: a validated step has exactly one kind")


def render_steps(steps: Sequence[Step], *, tools_only: bool = False) -> str:
    """Numbered steps; `tools_only` keeps tool calls and results only."""
    if tools_only:
        steps = [s for s in steps if s.tool_call is not None or s.tool_response is not None]
    if not steps:
        return NO_STEPS
    return "\n".join(f"[step {i}] {render_step(s)}" for i, s in enumerate(steps, 1))


def render_history(history: Sequence[Turn]) -> str:
    """Earlier turns: what the user said and what the agent answered."""
    if not history:
        return NO_HISTORY
    lines: list[str] = []
    for i, turn in enumerate(history, 1):
        lines.append(f"[turn {i}] user: {user_prompt_text(turn.user_input)}")
        lines.append(f"[turn {i}] agent: {turn.final_response or NO_RESPONSE}")
    return "\n".join(lines)


NO_GROUNDING = "No grounding metadata was provided."


def render_grounding(entries: Sequence[Grounding] | None) -> str:
    """The grounding metadata of an invocation's events as ADK 2.13 shows it to its
    judges: `{"grounding_metadata": [{step, author, grounding_metadata}, ...]}`."""
    if not entries:
        return NO_GROUNDING
    shown = [
        {"step": g.step}
        | ({"author": g.author} if g.author else {})
        | {"grounding_metadata": g.metadata}
        for g in entries
    ]
    return json.dumps({"grounding_metadata": shown}, indent=2, ensure_ascii=False)


def grounding_before(turn: Turn, steps: int) -> list[Grounding]:
    """The turn's grounding metadata of the events up to the one whose steps start at
    `steps` (as ADK gives a response the grounding of the events before it and of its
    own event)."""
    return [g for g in turn.grounding or [] if g.first_step is None or g.first_step <= steps]


def grounding_context(view: InvocationView, steps: Sequence[Step]) -> str:
    """The context a response is checked against (hallucinations): developer
    instructions, tool declarations, the conversation so far, the user prompt, the
    steps taken before the response and, when the events carried any, their grounding
    metadata (e.g. the search results a grounded answer rests on)."""
    agents = view.agents
    sections = [
        ("Developer instructions", render_instructions(agents)),
        ("Tool declarations", render_tool_declarations(agents)),
        ("Earlier conversation", render_history(view.history)),
        ("User prompt", view.user_prompt),
        ("Steps the agent took before this response", render_steps(steps)),
    ]
    grounding = grounding_before(view.turn, len(steps))
    if grounding:
        sections.append(("Grounding metadata", render_grounding(grounding)))
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections)
