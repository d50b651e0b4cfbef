"""Writing CES `Evaluation` resources (see `assay.formats.ces`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from assay.errors import InputError
from assay.formats._ces_parts import AUDIO, DISPLAY, OWN_KEYS, REFS, RESOURCES, ROOT_SPANS
from assay.model.core import (
    EvalCase,
    EvalSet,
    Expectation,
    Persona,
    Scenario,
    ScenarioExpectation,
    ToolCall,
    ToolResponse,
    Turn,
    UserGoalBehavior,
)


def dump(evalset: EvalSet) -> Any:
    """One Evaluation object, an expectation resource, or `{evaluations: [...]}`."""
    evaluations = [_dump_case(c) for c in evalset.cases]
    resources = list(evalset.metadata.get(RESOURCES, []))
    others = {k: v for k, v in evalset.metadata.items() if k != RESOURCES}
    plain = evalset.name is None and evalset.description is None and not others
    if plain and len(evaluations) == 1 and not resources:
        return evaluations[0]
    if plain and not evaluations and len(resources) == 1:
        return resources[0]
    out: dict[str, Any] = {}
    if evalset.name is not None:
        out["name"] = evalset.name
    if evalset.description is not None:
        out["description"] = evalset.description
    out.update(others)
    out["evaluations"] = evaluations
    if resources:
        out["evaluationExpectations"] = resources
    return out


def write(evalset: EvalSet, path: Path) -> None:
    data = dump(evalset)
    if path.suffix.lower() in (".yaml", ".yml"):
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    else:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")


def _dump_case(case: EvalCase) -> dict[str, Any]:
    def fail(message: str) -> InputError:
        return InputError(
            f"cannot be written as a CES Evaluation: {message}",
            case_id=case.id,
            expected="golden turns or a scenario; use adk or trace otherwise",
        )

    blocked = [
        f
        for f in (
            "actual",
            "expected_response",
            "expected_facts",
            "expected_retrieved_context",
            "guidelines",
            "final_session_state",
        )
        if getattr(case, f) is not None
    ]
    if case.session_input is not None and case.session_input.state:
        blocked.append("session_input.state")
    if blocked:
        raise fail(f"it has {', '.join(blocked)}")
    display = case.metadata.get(DISPLAY, case.id)
    out: dict[str, Any] = {} if case.id == display else {"name": case.id}
    out[DISPLAY] = display
    if case.description is not None:
        out["description"] = case.description
    if case.tags:
        out["tags"] = list(case.tags)
    for key, value in case.metadata.items():
        if key not in (DISPLAY, REFS, ROOT_SPANS):
            if key in OWN_KEYS:
                raise fail(f"metadata key {key!r} collides with an Evaluation field")
            out[key] = value
    refs = list(case.metadata.get(REFS, []))
    linked = set(refs)
    inline = [
        {DISPLAY: r.id, "llmCriteria": {"prompt": r.text}}
        for r in case.rubrics
        if r.id not in linked
    ]
    if case.scenario is not None:
        body = _dump_scenario(case.scenario)
        key = "scenario"
    elif case.reference is not None:
        spans = case.metadata.get(ROOT_SPANS, {})
        body = {
            "turns": [_dump_turn(t, spans.get(str(i)), fail) for i, t in enumerate(case.reference)]
        }
        key = "golden"
    else:
        raise fail("it has neither reference turns nor a scenario")
    if refs or inline:
        body["evaluationExpectations"] = [*refs, *inline]
    out[key] = body
    return out


def _dump_tool(name: str) -> dict[str, Any]:
    if "/toolsets/" in name:
        toolset, sep, tool_id = name.partition("/tools/")
        return {"toolsetTool": {"toolset": toolset, **({"toolId": tool_id} if sep else {})}}
    return {"tool": name}


def _dump_call(call: ToolCall) -> dict[str, Any]:
    return {**({"id": call.id} if call.id else {}), **_dump_tool(call.name), "args": call.args}


def _dump_response(resp: ToolResponse) -> dict[str, Any]:
    return {
        **({"id": resp.id} if resp.id else {}),
        **_dump_tool(resp.name),
        "response": resp.response,
    }


def _dump_expectation(e: Expectation) -> dict[str, Any]:
    out: dict[str, Any] = {} if e.note is None else {"note": e.note}
    if e.tool_call is not None:
        out["toolCall"] = _dump_call(e.tool_call)
    elif e.tool_response is not None:
        out["toolResponse"] = _dump_response(e.tool_response)
    elif e.mock_tool_response is not None:
        out["mockToolResponse"] = _dump_response(e.mock_tool_response)
    elif e.agent_response is not None:
        out["agentResponse"] = {"role": "agent", "chunks": [{"text": e.agent_response}]}
    elif e.agent_transfer is not None:
        out["agentTransfer"] = {"targetAgent": e.agent_transfer}
    else:
        out["updatedVariables"] = e.updated_variables or {}
    return {"expectation": out}


def _dump_turn(t: Turn, span: Any, fail: Any) -> dict[str, Any]:
    ui = t.user_input
    steps: list[dict[str, Any]] = []
    if ui.variables is not None:
        steps.append({"userInput": {"variables": ui.variables}})
    if ui.event is not None:
        steps.append({"userInput": {"event": {"event": ui.event}}})
    if ui.text is not None:
        steps.append({"userInput": {"text": ui.text}})
    if ui.dtmf is not None:
        steps.append({"userInput": {"dtmf": ui.dtmf}})
    for blob in ui.blobs:
        kind = (
            "audio"
            if blob.mime_type == AUDIO
            else "image"
            if blob.mime_type.startswith("image/")
            else "blob"
        )
        value = blob.data if kind == "audio" else {"mimeType": blob.mime_type, "data": blob.data}
        steps.append({"userInput": {kind: value}})
    if ui.tool_responses:
        steps.append(
            {
                "userInput": {
                    "toolResponses": {
                        "toolResponses": [_dump_response(r) for r in ui.tool_responses]
                    }
                }
            }
        )
    checks: list[Expectation] = []
    for step in t.steps:
        if step.agent_transfer is not None:
            steps.append({"agentTransfer": {"targetAgent": step.agent_transfer.target_agent}})
        elif step.tool_call is not None:
            checks.append(Expectation(tool_call=step.tool_call))
        elif step.tool_response is not None:
            checks.append(Expectation(tool_response=step.tool_response))
        elif step.variables_update is not None:
            checks.append(Expectation(updated_variables=step.variables_update))
        else:
            raise fail(f"a reference turn holds a {step.kind} step")
    if t.final_response is not None:
        checks.append(Expectation(agent_response=t.final_response))
    if t.rubrics:
        raise fail("a reference turn has rubrics")
    steps.extend(_dump_expectation(e) for e in [*checks, *t.expectations])
    out: dict[str, Any] = {"steps": steps}
    if span is not None:
        out["rootSpan"] = span
    return out


def _dump_scenario(s: Scenario) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if s.task is not None:
        out["task"] = s.task
    if s.starting_prompt is not None:
        out["startingPrompt"] = s.starting_prompt
    if s.conversation_plan is not None:
        out["conversationPlan"] = s.conversation_plan
    if s.user_facts:
        out["userFacts"] = [{"name": f.name, "value": f.value} for f in s.user_facts]
    if s.max_turns is not None:
        out["maxTurns"] = s.max_turns
    if s.rubrics:
        out["rubrics"] = [r.text for r in s.rubrics]
    if s.expectations:
        out["scenarioExpectations"] = [_dump_scenario_expectation(e) for e in s.expectations]
    if s.variable_overrides:
        out["variableOverrides"] = s.variable_overrides
    if s.user_goal_behavior != UserGoalBehavior.USER_GOAL_SATISFIED:
        out["userGoalBehavior"] = s.user_goal_behavior.value
    if s.initiator.value != "USER":
        out["initiator"] = s.initiator.value
    if isinstance(s.persona, Persona):
        p = s.persona
        out["persona"] = {
            "name": p.id,
            **({DISPLAY: p.display_name} if p.display_name else {}),
            **({"description": p.description} if p.description else {}),
            **({"personality": p.personality} if p.personality else {}),
        }
    elif s.persona is not None:
        out["persona"] = s.persona
    return out


def _dump_scenario_expectation(e: ScenarioExpectation) -> dict[str, Any]:
    out: dict[str, Any] = {} if e.note is None else {"note": e.note}
    if e.tool_expectation is not None:
        te: dict[str, Any] = {"expectedToolCall": _dump_call(e.tool_expectation.expected_tool_call)}
        if e.tool_expectation.mock_tool_response is not None:
            te["mockToolResponse"] = _dump_response(e.tool_expectation.mock_tool_response)
        out["toolExpectation"] = te
    else:
        out["agentResponse"] = {"role": "agent", "chunks": [{"text": e.agent_response or ""}]}
    return out
