"""A stand-in case generator for `assay cases generate`, served by the stand-in server.

`generator_script(good)` is a `JudgeServer` script answering assay's generation prompts
(`assay.cases.generate_prompt`) with ``{"cases": [...]}``: the `good` cases (or, without
them, one case per declared tool built from its schema), then four that a generation
must not keep, each derived from the tools the request shows:

- `invented_tool`: calls a tool the agent does not have;
- `broken_arguments`: calls a real tool with an argument of the wrong type (or one its
  schema does not declare);
- `near_duplicate_1`, `near_duplicate_2`: the first good case with one word added.

`REFUSED` names them with the kind of refusal each must get. In scenario mode every
case also gets a persona (the given ones in turn), a plan and a stop condition. Any
other request (not a generation prompt) is answered with an error text, so a test
that sends one sees it. Run one by hand with::

    python -m assay.testing.judge_server --port 8014 --script assay.testing.standin_generator:script
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay.cases.generate_check import INVALID_ARGUMENTS, INVENTED_TOOL, NEAR_DUPLICATE
from assay.cases.generate_prompt import PERSONAS_HEADER, TOOLS_HEADER
from assay.testing.judge_dialects import StandinReply, StandinRequest

INVENTED = "open_the_pod_bay_doors"
REFUSED = {
    "invented_tool": INVENTED_TOOL,
    "broken_arguments": INVALID_ARGUMENTS,
    "near_duplicate_1": NEAR_DUPLICATE,
    "near_duplicate_2": NEAR_DUPLICATE,
}
_BLOCK = r"\n```json\n(.*?)\n```"


def _block(prompt: str, header: str) -> list[Any]:
    match = re.search(re.escape(header) + _BLOCK, prompt, re.DOTALL)
    value = json.loads(match.group(1)) if match else []
    return value if isinstance(value, list) else []


def _value(schema: Mapping[str, Any], position: int) -> Any:
    """A value valid against a property's schema (the subset tools declare)."""
    for key in ("examples", "enum"):
        choices = schema.get(key)
        if isinstance(choices, list) and choices:
            return choices[position % len(choices)]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind in ("integer", "number"):
        low = schema.get("minimum", 1)
        return int(low) if kind == "integer" else float(low)
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return "example"


def _args(tool: Mapping[str, Any], position: int) -> dict[str, Any]:
    params = tool.get("parameters") or {}
    properties: Mapping[str, Any] = params.get("properties") or {}
    required = params.get("required") or list(properties)[:1]
    return {name: _value(properties.get(name, {}), position) for name in required}


def _from_schema(tool: Mapping[str, Any], position: int) -> dict[str, Any]:
    args = _args(tool, position)
    shown = ", ".join(f"{k} {v}" for k, v in args.items())
    return {
        "id": f"use_{tool['name']}",
        "user_goal": f"Get the agent to {tool['name']}" + (f" ({shown})" if shown else ""),
        "opening_message": f"Could you {tool['name'].replace('_', ' ')}"
        + (f" for {shown}" if shown else "")
        + "?",
        "expected_tool_calls": [{"name": tool["name"], "args": args}],
        "expected_outcome": f"The agent used {tool['name']} and reported its result.",
        "rubrics": ["The reply reports what the tool returned."],
    }


def _broken(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A call to a real tool whose arguments break its schema."""
    for tool in tools:
        params = tool.get("parameters") or {}
        properties = params.get("properties") or {}
        for name in params.get("required") or []:
            kind = properties.get(name, {}).get("type")
            if kind in ("string", "integer", "number", "boolean"):
                args = _args(tool, 0)
                args[name] = "a lot" if kind in ("integer", "number") else 42
                if kind == "boolean":
                    args[name] = "maybe"
                return {"name": tool["name"], "args": args}
    first = tools[0] if tools else {"name": "none"}
    return {"name": first["name"], "args": {"bogus_argument": 1}}


def _bad_cases(good: dict[str, Any], tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    invented = {
        "id": "invented_tool",
        "user_goal": "Ask for something no tool does",
        "opening_message": "Open the pod bay doors, please.",
        "expected_tool_calls": [{"name": INVENTED, "args": {}}],
        "expected_outcome": "The doors are open.",
    }
    broken = {
        "id": "broken_arguments",
        "user_goal": "A request whose expected call breaks the tool's schema",
        "opening_message": "Do the thing with the wrong kind of value.",
        "expected_tool_calls": [_broken(tools)],
        "expected_outcome": "Done.",
    }
    first = {**good, "id": "near_duplicate_1"}
    first["opening_message"] = f"{good['opening_message']} Thanks"
    second = {**good, "id": "near_duplicate_2"}
    second["opening_message"] = f"Please: {good['opening_message']}"
    return [invented, broken, first, second]


def _scenario(case: dict[str, Any], personas: Sequence[Mapping[str, Any]], i: int) -> None:
    persona = personas[i % len(personas)]["id"] if personas else "NOVICE"
    case.setdefault("persona", persona)
    case.setdefault("conversation_plan", f"Open with the request, then: {case['user_goal']}.")
    case.setdefault("stop_condition", "the agent has done it or said it cannot")


def generator_script(
    good: Sequence[Mapping[str, Any]] | None = None,
) -> Callable[[StandinRequest], StandinReply]:
    """A stand-in script: `good` cases (or one per tool) and the four to refuse."""

    def reply(request: StandinRequest) -> StandinReply:
        prompt = request.prompt
        if TOOLS_HEADER not in prompt:
            return StandinReply("the stand-in generator only answers case generation prompts")
        tools = _block(prompt, TOOLS_HEADER)
        cases = (
            [dict(c) for c in good] if good else [_from_schema(t, i) for i, t in enumerate(tools)]
        )
        if not cases:
            return StandinReply(json.dumps({"cases": []}))
        cases += _bad_cases(cases[0], tools)
        if "conversation scenarios" in prompt:
            personas = _block(prompt, PERSONAS_HEADER)
            for i, case in enumerate(cases):
                _scenario(case, personas, i)
        return StandinReply(json.dumps({"cases": cases}))

    return reply


script = generator_script()
