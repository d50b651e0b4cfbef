"""Writing CES `Evaluation` resources (see `assay.formats.ces`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.core.cases import (
    EvalCase,
    EvalSet,
    Expectation,
    Scenario,
    ScenarioExpectation,
    ToolCall,
    ToolResponse,
    Turn,
    UserGoalBehavior,
)
from assay.formats._ces_parts import AUDIO, DISPLAY, REFS, RESOURCES, ROOT_SPANS
from assay.formats._fit_ces import EVALUATION_FIELDS, fit, synth_resource
from assay.formats._loss import refuse


def dump(evalset: EvalSet) -> Any:
    """One Evaluation, one expectation resource, or `{evaluations: [...],
    evaluationExpectations?: [...]}` (the shape of CES's list responses).

    The set is fitted first (`assay.formats._fit_ces`); a set whose fit loses a field
    is refused with `ConversionLossError`. Case rubrics are written as expectation
    resources in the wrapper's `evaluationExpectations`, referred to by display name.
    """
    fitted, losses = fit(evalset)
    if losses:
        raise refuse(losses, "a CES Evaluation")
    evaluations = [_dump_case(c) for c in fitted.cases]
    resources = _resources(fitted)
    if len(evaluations) == 1 and not resources:
        return evaluations[0]
    if not evaluations and len(resources) == 1:
        return resources[0]
    out: dict[str, Any] = {"evaluations": evaluations}
    if resources:
        out["evaluationExpectations"] = resources
    return out


def _resources(evalset: EvalSet) -> list[dict[str, object]]:
    """The set's own resources, then one per case rubric no resource says already."""
    out = list(evalset.metadata.get(RESOURCES, []))
    have = {(r.get(DISPLAY) or r.get("name"), r["llmCriteria"]["prompt"]) for r in out}
    for case in evalset.cases:
        for r in case.rubrics:
            text = r.text or ""
            if (r.id, text) not in have:
                have.add((r.id, text))
                out.append(synth_resource(r.id, text))
    return out


def write(evalset: EvalSet, path: Path) -> None:
    data = dump(evalset)
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml  # only for a YAML file: not on every start (see `parse_yaml`)

        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    else:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")


def _dump_case(case: EvalCase) -> dict[str, object]:
    """A fitted case as an Evaluation (only fields of the `Evaluation` message)."""
    display = case.metadata.get(DISPLAY, case.id)
    out: dict[str, Any] = {} if case.id == display else {"name": case.id}
    out[DISPLAY] = display
    if case.description is not None:
        out["description"] = case.description
    if case.tags:
        out["tags"] = list(case.tags)
    out.update((k, v) for k, v in case.metadata.items() if k in EVALUATION_FIELDS)
    rubric_ids = [r.id for r in case.rubrics]
    refs = rubric_ids + [r for r in case.metadata.get(REFS, []) if r not in rubric_ids]
    if case.scenario is not None:
        body = _dump_scenario(case.scenario)
        key = "scenario"
    else:
        spans = case.metadata.get(ROOT_SPANS, {})
        turns = case.reference or []
        body = {"turns": [_dump_turn(t, spans.get(str(i))) for i, t in enumerate(turns)]}
        key = "golden"
    if refs:
        body["evaluationExpectations"] = refs
    out[key] = body
    return out


def _dump_tool(name: str) -> dict[str, object]:
    if "/toolsets/" in name:
        toolset, sep, tool_id = name.partition("/tools/")
        return {"toolsetTool": {"toolset": toolset, **({"toolId": tool_id} if sep else {})}}
    return {"tool": name}


def _dump_call(call: ToolCall) -> dict[str, object]:
    return {**({"id": call.id} if call.id else {}), **_dump_tool(call.name), "args": call.args}


def _dump_response(resp: ToolResponse) -> dict[str, object]:
    return {
        **({"id": resp.id} if resp.id else {}),
        **_dump_tool(resp.name),
        **({"response": resp.response} if resp.response is not None else {}),
    }


def _dump_expectation(e: Expectation) -> dict[str, object]:
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


def _dump_turn(t: Turn, span: object) -> dict[str, object]:
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
    steps += [
        {"agentTransfer": {"targetAgent": s.agent_transfer.target_agent}}
        for s in t.steps
        if s.agent_transfer is not None
    ]
    steps.extend(_dump_expectation(e) for e in t.expectations)
    out: dict[str, Any] = {"steps": steps}
    if span is not None:
        out["rootSpan"] = span
    return out


def _dump_scenario(s: Scenario) -> dict[str, object]:
    out: dict[str, Any] = {}
    if s.task is not None:
        out["task"] = s.task
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
    return out


def _dump_scenario_expectation(e: ScenarioExpectation) -> dict[str, object]:
    out: dict[str, Any] = {}
    if e.tool_expectation is not None:
        te: dict[str, Any] = {"expectedToolCall": _dump_call(e.tool_expectation.expected_tool_call)}
        if e.tool_expectation.mock_tool_response is not None:
            te["mockToolResponse"] = _dump_response(e.tool_expectation.mock_tool_response)
        out["toolExpectation"] = te
    else:
        out["agentResponse"] = {"role": "agent", "chunks": [{"text": e.agent_response or ""}]}
    return out
