"""Generated proposals as assay `EvalCase`s, shaped for the format they are written in.

A golden case holds one turn: the opening message and the expected tool calls (ADK's
`intermediate_data.tool_uses`, CES's golden tool-call expectations); the expected
outcome and the rubrics become the case's rubrics. A scenario holds the opening
message, the persona and the plan with its stop condition for the simulated user.

What differs by format is only what the format can hold:

- ADK: rubric types (`FINAL_RESPONSE_QUALITY`; a scenario's expected calls become
  `TOOL_USE_QUALITY` rubrics, the one place ADK's scenario cases have for them), the
  session input (app name, user id), turn ids, the persona as a `user_persona` object;
- CES: no rubric types, turn ids or session input; a rubric is a resource of the whole
  set, so its id carries the case's; a scenario has no starting prompt or persona, so
  its `task` says them (with the plan and stop condition) and its expected calls are
  tool expectations;
- Vertex: golden cases only (rows have no scenario assay writes), without turn ids.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from assay.cases.generate_check import Candidate
from assay.cases.generate_definition import AgentDefinition
from assay.core.cases import (
    EvalCase,
    Persona,
    Rubric,
    RubricType,
    Scenario,
    ScenarioExpectation,
    SessionInput,
    Step,
    ToolCall,
    ToolExpectation,
    Turn,
    UserInput,
)

USER_ID = "eval_user"


def build_cases(
    kept: Sequence[Candidate],
    agent: AgentDefinition,
    personas: Mapping[str, Persona],
    *,
    scenarios: bool,
    fmt: str,
) -> list[EvalCase]:
    if scenarios:
        return [_scenario_case(c, agent, personas, fmt) for c in kept]
    return [_golden_case(c, agent, fmt) for c in kept]


def _rubrics(cand: Candidate, fmt: str) -> list[Rubric]:
    texts = ([("outcome", cand.expected_outcome)] if cand.expected_outcome else []) + [
        (f"rubric_{i + 1}", text) for i, text in enumerate(cand.rubrics)
    ]
    if fmt == "ces":  # one resource per rubric id across the set
        return [Rubric(id=f"{cand.id}-{rid}", text=text) for rid, text in texts]
    kind = RubricType.FINAL_RESPONSE_QUALITY
    return [Rubric(id=rid, text=text, type=kind) for rid, text in texts]


def _session(agent: AgentDefinition, fmt: str) -> SessionInput | None:
    if fmt != "adk":
        return None
    return SessionInput(app_name=agent.name, user_id=USER_ID, state={})


def _golden_case(cand: Candidate, agent: AgentDefinition, fmt: str) -> EvalCase:
    steps = [Step(tool_call=ToolCall(name=c.name, args=c.args)) for c in cand.tool_calls]
    turn = Turn(
        id=f"{cand.id}-1" if fmt == "adk" else None,
        user_input=UserInput(text=cand.opening_message),
        steps=steps,
    )
    return EvalCase(
        id=cand.id,
        description=cand.user_goal,
        reference=[turn],
        rubrics=_rubrics(cand, fmt),
        session_input=_session(agent, fmt),
    )


def _call_text(call: ToolCall) -> str:
    args = json.dumps(call.args, ensure_ascii=False, sort_keys=True)
    return f"The agent calls {call.name} with {args}."


def _persona(cand: Candidate, personas: Mapping[str, Persona]) -> Persona | None:
    wanted = (cand.persona or "").lower()
    return next((p for key, p in personas.items() if key.lower() == wanted), None)


def _plan(cand: Candidate) -> str:
    plan = cand.conversation_plan or cand.user_goal
    return f"{plan}\nStop when: {cand.stop_condition}" if cand.stop_condition else plan


def _scenario_case(
    cand: Candidate, agent: AgentDefinition, personas: Mapping[str, Persona], fmt: str
) -> EvalCase:
    persona = _persona(cand, personas)
    if fmt == "ces":
        who = ""
        if persona is not None:
            who = f"You are {persona.display_name or persona.id}: {persona.description or ''}\n"
        task = f"{who}Open with: {cand.opening_message}\n{_plan(cand)}"
        expectations = [
            ScenarioExpectation(tool_expectation=ToolExpectation(expected_tool_call=c))
            for c in cand.tool_calls
        ]
        rubrics = [
            Rubric(id=f"rubric-{i + 1}", text=r.text) for i, r in enumerate(_rubrics(cand, "adk"))
        ]
        scenario = Scenario(task=task, rubrics=rubrics, expectations=expectations)
        return EvalCase(id=cand.id, description=cand.user_goal, scenario=scenario)
    tool_rubrics = [
        Rubric(id=f"tool_{i + 1}", text=_call_text(c), type=RubricType.TOOL_USE_QUALITY)
        for i, c in enumerate(cand.tool_calls)
    ]
    return EvalCase(
        id=cand.id,
        description=cand.user_goal,
        scenario=Scenario(
            starting_prompt=cand.opening_message, conversation_plan=_plan(cand), persona=persona
        ),
        rubrics=_rubrics(cand, fmt) + tool_rubrics,
        session_input=_session(agent, fmt),
    )
