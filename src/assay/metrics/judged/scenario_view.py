"""The scenario judges' view of a simulated conversation, rendered for prompts.

Scenario judges read the whole conversation at once: the app's instructions and tools
when known, the starting session variables, then every turn with the user's message,
the agent's steps (tool calls and results, messages, transfers, variable updates) and
its final response. The scenario itself (task, starting prompt, plan, user facts,
persona) is rendered separately. `user_goal_behavior` is never shown to a judge, so
its verdicts do not lean towards the outcome a scenario expects.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from assay.core.cases import EvalCase, Persona, Scenario, Turn
from assay.metrics.judged.context import (
    NO_RESPONSE,
    agents_for,
    render_instructions,
    render_step,
    render_tool_declarations,
    user_prompt_text,
)

NOT_A_SCENARIO = (
    "{name} judges a simulated scenario conversation (a CES scenario or an ADK"
    " conversation_scenario run with a user simulator); case {case!r} has no scenario,"
    " so it has no score"
)
NO_TURNS = "the scenario conversation has no turns to judge (the simulation produced none)"


def persona_text(persona: Persona | str | None) -> str | None:
    """A persona as a judge reads it; an id is resolved among the preset personas."""
    if isinstance(persona, str):
        # Imported here: the simulation package builds on the judges, not the reverse.
        from assay.simulation.personas import find_persona

        found = find_persona(persona, {})
        if found is None:
            return f"persona id {persona}"
        persona = found
    if persona is None:
        return None
    lines = [persona.display_name or persona.id]
    lines += [text.strip() for text in (persona.description, persona.personality) if text]
    return "\n".join(lines)


def plan_text(scenario: Scenario) -> str:
    """What the simulated user set out to do: the plan, else the task and user facts."""
    if scenario.conversation_plan and scenario.conversation_plan.strip():
        return scenario.conversation_plan.strip()
    lines = [f"Task: {scenario.task.strip()}"] if scenario.task else []
    lines += [f"- {f.name}: {f.value}" for f in scenario.user_facts]
    return "\n".join(lines) or "(the scenario gives no plan)"


def render_scenario(scenario: Scenario) -> str:
    """The scenario's task, starting prompt, plan, user facts and persona."""
    parts: list[tuple[str, str | None]] = [
        ("Task", scenario.task),
        ("Starting prompt", scenario.starting_prompt),
        ("Conversation plan", scenario.conversation_plan),
        ("User facts", "\n".join(f"- {f.name}: {f.value}" for f in scenario.user_facts)),
        ("Persona", persona_text(scenario.persona)),
    ]
    text = "\n\n".join(
        f"## {title}\n{body.strip()}" for title, body in parts if body and body.strip()
    )
    return text or "(the scenario states no task or plan)"


def render_conversation(case: EvalCase, turns: Sequence[Turn]) -> str:
    """The app's instructions and tools when known, the starting variables, then every
    turn: user message, agent steps and final response."""
    agents = agents_for(case, None)
    sections: list[tuple[str, str]] = []
    if any(a.instructions.strip() for a in agents):
        sections.append(("Developer instructions", render_instructions(agents)))
    if any(a.tools for a in agents):
        sections.append(("Tool declarations", render_tool_declarations(agents)))
    state = dict(case.session_input.state) if case.session_input else {}
    if case.scenario is not None:
        state.update(case.scenario.variable_overrides)
    if state:
        variables = json.dumps(state, ensure_ascii=False, sort_keys=True, default=str)
        sections.append(("Session variables at the start", variables))
    lines: list[str] = []
    for i, turn in enumerate(turns, 1):
        lines.append(f"[turn {i}] user: {user_prompt_text(turn.user_input)}")
        lines += [f"[turn {i}] {render_step(step)}" for step in turn.steps]
        lines.append(f"[turn {i}] agent: {turn.final_response or NO_RESPONSE}")
    sections.append(("Conversation", "\n".join(lines)))
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections)


def agent_responses(turns: Sequence[Turn]) -> list[tuple[int, str]]:
    """Every text the agent said, with its 1-based turn: messages, then final response."""
    found: list[tuple[int, str]] = []
    for i, turn in enumerate(turns, 1):
        found += [(i, m.text) for m in turn.agent_messages() if m.text.strip()]
        if turn.final_response and turn.final_response.strip():
            found.append((i, turn.final_response))
    return found
