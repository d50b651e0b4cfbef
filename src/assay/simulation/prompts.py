"""The simulated user's prompt: who it is, what it wants, and the conversation so far.

The model gets one system message (the role-play rules, the scenario's task, user
facts, conversation plan and persona, and when to send the stop signal) and one user
message (the transcript so far, then the request for the next message). The
transcript shows only what a person chatting with the agent would see: their own
messages and the agent's text (intermediate messages and the final response); tool
calls, tool results and session variables stay hidden.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.core.cases import Persona, Scenario, Turn

_RULES = """\
You play a human user talking to an AI agent, so that the agent can be tested. Write \
the user's next message, and nothing else.

How to behave:
- React to what the agent just said: answer its questions, confirm or correct what it \
did, then move on to your next need.
- Pursue your task and follow the conversation plan in order, as a guide rather than \
a script.
- Give a detail (a name, a number, a date) only when it is needed or the agent asks \
for it, and only details listed below. If the agent asks for something you were not \
given, say you do not know it; never make facts up.
- Keep each message short and natural, one request at a time, in the language of the \
task.
- Never say that you are an AI, a simulator or a test, and never write the agent's \
part.

When to stop: reply with exactly {stop_signal} and nothing else when
- your task is done (every step of the plan is complete), or
- the agent failed the same request twice, or said it cannot help with it, or
- the agent handed you over to a human, or ended the conversation itself.
Do not stop before one of these happens."""

_NEXT = """\
Write the user's next message now: plain text only, without a "user:" label, quotes \
or notes. To end the conversation, reply with exactly {stop_signal}"""


def _section(title: str, body: str | None) -> str | None:
    body = (body or "").strip()
    return f"## {title}\n{body}" if body else None


def _persona_text(persona: Persona) -> str:
    lines = []
    name = persona.display_name or persona.id
    if persona.description:
        lines.append(f"You are: {name}. {persona.description.strip()}")
    else:
        lines.append(f"You are: {name}.")
    if persona.personality:
        lines.append(f"How you behave:\n{persona.personality.strip()}")
    return "\n".join(lines)


def system_prompt(scenario: Scenario, persona: Persona | None, stop_signal: str) -> str:
    """The role-play rules and the scenario, as the system message."""
    facts = "\n".join(f"- {f.name}: {f.value}" for f in scenario.user_facts)
    sections = [
        _RULES.format(stop_signal=stop_signal),
        _section("Your task", scenario.task),
        _section("Conversation plan", scenario.conversation_plan),
        _section("Facts you know (give them only when needed)", facts),
        _section("Your persona", _persona_text(persona) if persona is not None else None),
    ]
    return "\n\n".join(s for s in sections if s)


def agent_text(turn: Turn) -> str | None:
    """What the user saw of the agent in one turn: its messages and final response."""
    parts = [m.text for m in turn.agent_messages() if m.text.strip()]
    if turn.final_response and turn.final_response.strip():
        parts.append(turn.final_response)
    return "\n".join(parts) or None


def transcript(turns: Sequence[Turn]) -> str:
    """The conversation so far as `user:` / `agent:` lines."""
    lines: list[str] = []
    for turn in turns:
        if turn.user_input.text:
            lines.append(f"user: {turn.user_input.text}")
        lines.append(f"agent: {agent_text(turn) or '(no reply)'}")
    return "\n\n".join(lines)


def simulator_messages(
    scenario: Scenario, persona: Persona | None, turns: Sequence[Turn], stop_signal: str
) -> list[dict[str, str]]:
    """The chat messages asking for the simulated user's next message."""
    history = transcript(turns) or "(nothing yet: you speak first)"
    user = f"# Conversation so far\n\n{history}\n\n# Your turn\n\n" + _NEXT.format(
        stop_signal=stop_signal
    )
    return [
        {"role": "system", "content": system_prompt(scenario, persona, stop_signal)},
        {"role": "user", "content": user},
    ]
