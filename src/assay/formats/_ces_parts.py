"""Pieces of CES `Evaluation` resources: resource keys, and readers of golden turns,
expectations and scenarios (see `assay.formats.ces` for the mapping).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from assay.core.cases import (
    AgentTransfer,
    Blob,
    Expectation,
    Initiator,
    Persona,
    Rubric,
    Scenario,
    ScenarioExpectation,
    Step,
    ToolCall,
    ToolExpectation,
    ToolResponse,
    Turn,
    UserFact,
    UserGoalBehavior,
    UserInput,
)
from assay.formats._common import Loc

REFS = "ces:evaluation_expectations"
ROOT_SPANS = "ces:root_spans"
RESOURCES = "evaluation_expectations"
DISPLAY = "displayName"
AUDIO = "audio/*"
OWN_KEYS = frozenset({"name", "displayName", "description", "tags", "golden", "scenario"})

MAX_TURNS_LIMIT = 2**31 - 1
"""The largest CES `scenario.maxTurns` (an int32)."""


def _tool_name(loc: Loc, d: Mapping[str, object]) -> str:
    if isinstance(d.get("tool"), str):
        return str(d["tool"])
    ts = d.get("toolsetTool")
    if isinstance(ts, Mapping) and isinstance(ts.get("toolset"), str):
        # Encoded as the tool's resource path so a round trip can restore it.
        return f"{ts['toolset']}/tools/{ts['toolId']}" if ts.get("toolId") else ts["toolset"]
    raise loc.error("no tool", expected="tool (a name) or toolsetTool {toolset, toolId}")


def read_call(loc: Loc, data: object) -> ToolCall:
    """A `{tool | toolsetTool, args, id?}` tool call."""
    d = loc.expect_dict(data, "a tool call {tool, args}")
    args = loc.key("args").expect_dict(d.get("args", {}), "an object of arguments")
    return ToolCall(id=d.get("id"), name=_tool_name(loc, d), args=args)


def read_response(loc: Loc, data: object) -> ToolResponse:
    """A `{tool | toolsetTool, response, id?}` tool response."""
    d = loc.expect_dict(data, "a tool response {tool, response}")
    return ToolResponse(id=d.get("id"), name=_tool_name(loc, d), response=d.get("response"))


def agent_text(loc: Loc, data: object) -> str:
    """The joined text chunks of an agent message `{role, chunks: [{text}]}`."""
    d = loc.expect_dict(data, "a message {role, chunks: [{text}]}")
    texts = []
    for cl, chunk in loc.key("chunks").items(d.get("chunks"), "a list of text chunks"):
        texts.append(
            cl.key("text").expect_str(
                chunk.get("text") if isinstance(chunk, Mapping) else None, "a text chunk"
            )
        )
    return "".join(texts)


_EXPECT = (
    "toolCall",
    "toolResponse",
    "agentResponse",
    "agentTransfer",
    "updatedVariables",
    "mockToolResponse",
)


def _expectation(loc: Loc, data: object) -> Expectation:
    d = loc.expect_dict(data, "a golden expectation")
    kinds = [k for k in _EXPECT if k in d]
    unknown = set(d) - {*_EXPECT, "note"}
    if len(kinds) != 1 or unknown:
        extra = f" and unknown keys {sorted(unknown)}" if unknown else ""
        raise loc.error(
            f"holds {kinds or 'no check'}{extra}",
            expected=f"a note and exactly one of {', '.join(_EXPECT)}",
        )
    kind, value, kl = kinds[0], d[kinds[0]], loc.key(kinds[0])
    note = d.get("note")
    if kind == "toolCall":
        return Expectation(note=note, tool_call=read_call(kl, value))
    if kind == "toolResponse":
        return Expectation(note=note, tool_response=read_response(kl, value))
    if kind == "mockToolResponse":
        return Expectation(note=note, mock_tool_response=read_response(kl, value))
    if kind == "agentResponse":
        return Expectation(note=note, agent_response=agent_text(kl, value))
    if kind == "agentTransfer":
        target = kl.key("targetAgent").expect_str(kl.expect_dict(value).get("targetAgent"))
        return Expectation(note=note, agent_transfer=target)
    return Expectation(note=note, updated_variables=kl.expect_dict(value))


def _user_input(loc: Loc, d: dict[str, Any], fields: dict[str, Any]) -> None:
    for key, value in d.items():
        kl = loc.key(key)
        if key == "willContinue":
            continue
        if key in ("image", "blob", "audio"):
            blob = (
                Blob(mime_type=AUDIO, data=kl.expect_str(value))
                if key == "audio"
                else Blob(
                    mime_type=kl.key("mimeType").expect_str(kl.expect_dict(value).get("mimeType")),
                    data=kl.key("data").expect_str(value.get("data")),
                )
            )
            fields.setdefault("blobs", []).append(blob)
            continue
        if key == "toolResponses":
            items = value.get("toolResponses") if isinstance(value, Mapping) else value
            parsed: Any = [read_response(il, i) for il, i in kl.items(items, "a list of responses")]
            key = "tool_responses"
        elif key in ("text", "dtmf"):
            parsed = kl.expect_str(value)
        elif key == "event":
            parsed = value.get("event") if isinstance(value, Mapping) else value
            parsed = kl.expect_str(parsed, "an event {event: name}")
        elif key == "variables":
            parsed = kl.expect_dict(value)
        else:
            raise kl.error(
                "unknown user input",
                expected="text, dtmf, audio, image, blob, variables, event or toolResponses",
            )
        if key in fields:
            raise kl.error(f"a second {key} input in one turn", expected=f"one {key} per turn")
        fields[key] = parsed


def read_turn(loc: Loc, data: object, meta: dict[str, Any], index: int) -> Turn:
    """Golden turn `index`; its `rootSpan` goes to `meta[ROOT_SPANS]`."""
    d = loc.expect_dict(data, "a golden turn {steps}")
    if "rootSpan" in d:
        meta.setdefault(ROOT_SPANS, {})[str(index)] = d["rootSpan"]
    fields: dict[str, Any] = {}
    steps: list[Step] = []
    expectations: list[Expectation] = []
    for sl, step in loc.key("steps").items(d.get("steps"), "a list of steps"):
        s = sl.expect_dict(step, "a step {userInput | agentTransfer | expectation}")
        if len(s) != 1 or next(iter(s)) not in ("userInput", "agentTransfer", "expectation"):
            raise sl.error(
                f"keys {sorted(s)}", expected="exactly one of userInput, agentTransfer, expectation"
            )
        if "userInput" in s:
            _user_input(
                sl.key("userInput"), sl.key("userInput").expect_dict(s["userInput"]), fields
            )
        elif "agentTransfer" in s:
            tl = sl.key("agentTransfer")
            target = tl.key("targetAgent").expect_str(
                tl.expect_dict(s["agentTransfer"]).get("targetAgent")
            )
            steps.append(Step(agent_transfer=AgentTransfer(target_agent=target)))
        else:
            expectations.append(_expectation(sl.key("expectation"), s["expectation"]))
    return Turn(user_input=UserInput(**fields), steps=steps, expectations=expectations)


def read_scenario(loc: Loc, sc: dict[str, object]) -> Scenario:
    """An Evaluation's `scenario` (its `evaluationExpectations` are read by the caller)."""
    fields: dict[str, Any] = {}
    for key, value in sc.items():
        kl = loc.key(key)
        if key in ("task", "startingPrompt", "conversationPlan"):
            fields[
                {
                    "task": "task",
                    "startingPrompt": "starting_prompt",
                    "conversationPlan": "conversation_plan",
                }[key]
            ] = kl.expect_str(value)
        elif key == "userFacts":
            fields["user_facts"] = [
                UserFact(
                    name=il.key("name").expect_str(il.expect_dict(f).get("name")),
                    value=il.key("value").expect_str(f.get("value")),
                )
                for il, f in kl.items(value)
            ]
        elif key == "maxTurns":
            # CES declares maxTurns an int32, and a run of zero or fewer turns is no run:
            # the service refuses the same values (400 naming scenario.maxTurns).
            if (
                not isinstance(value, int)
                or isinstance(value, bool)
                or not 1 <= value <= MAX_TURNS_LIMIT
            ):
                raise kl.error(f"got {value!r}", expected=f"an integer from 1 to {MAX_TURNS_LIMIT}")
            fields["max_turns"] = value
        elif key == "rubrics":
            fields["rubrics"] = [
                Rubric(id=f"rubric-{i + 1}", text=il.expect_str(r))
                for i, (il, r) in enumerate(kl.items(value))
            ]
        elif key == "scenarioExpectations":
            fields["expectations"] = [_scenario_expectation(il, e) for il, e in kl.items(value)]
        elif key == "variableOverrides":
            fields["variable_overrides"] = kl.expect_dict(value)
        elif key in ("userGoalBehavior", "initiator"):
            enum: type[Enum] = UserGoalBehavior if key == "userGoalBehavior" else Initiator
            choices = [e.value for e in enum]
            if value not in choices:
                raise kl.error(f"got {value!r}", expected=f"one of {', '.join(choices)}")
            fields["user_goal_behavior" if key == "userGoalBehavior" else "initiator"] = value
        elif key == "persona":
            fields["persona"] = _persona(kl, value)
        elif key != "evaluationExpectations":
            raise kl.error(
                "unknown scenario field",
                expected="task, userFacts, maxTurns, rubrics, "
                "scenarioExpectations, variableOverrides, userGoalBehavior, "
                "evaluationExpectations, startingPrompt, conversationPlan, persona",
            )
    return Scenario(**fields)


def _persona(loc: Loc, value: object) -> Persona | str:
    if isinstance(value, str):
        return value
    d = loc.expect_dict(value, "a persona id or {name, displayName, description, personality}")
    if set(d) - {"name", DISPLAY, "description", "personality"} or not isinstance(
        d.get("name"), str
    ):
        raise loc.error(
            f"keys {sorted(d)}", expected="{name, displayName?, description?, personality?}"
        )
    return Persona(
        id=d["name"],
        display_name=d.get(DISPLAY),
        description=d.get("description"),
        personality=d.get("personality"),
    )


def _scenario_expectation(loc: Loc, data: object) -> ScenarioExpectation:
    d = loc.expect_dict(data, "{toolExpectation} or {agentResponse}")
    note = d.get("note")
    if "toolExpectation" in d and "agentResponse" not in d:
        tl = loc.key("toolExpectation")
        te = tl.expect_dict(d["toolExpectation"], "{expectedToolCall, mockToolResponse}")
        mock = te.get("mockToolResponse")
        return ScenarioExpectation(
            note=note,
            tool_expectation=ToolExpectation(
                expected_tool_call=read_call(
                    tl.key("expectedToolCall"), te.get("expectedToolCall")
                ),
                mock_tool_response=None
                if mock is None
                else read_response(tl.key("mockToolResponse"), mock),
            ),
        )
    if "agentResponse" in d and "toolExpectation" not in d:
        return ScenarioExpectation(
            note=note, agent_response=agent_text(loc.key("agentResponse"), d["agentResponse"])
        )
    raise loc.error(f"keys {sorted(d)}", expected="exactly one of toolExpectation, agentResponse")
