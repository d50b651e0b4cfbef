"""What an agent says it can do: its instruction, sub-agents and tools with their schemas.

`read_definition(spec)` reads the definition `assay cases generate --agent SPEC` names:

- a JSON or YAML description file (``*.json``, ``*.yaml``, ``*.yml``): how an HTTP agent
  (or any agent whose tools assay cannot see) describes itself (docs/authoring.md):
  ``name``, ``description``, ``instruction``, ``tools`` (each ``{"name", "description",
  "parameters"}`` as ADK and Gemini declare a function, or OpenAI's ``{"type":
  "function", "function": {...}}``) and ``sub_agents`` (the same shape, nested);
- an ADK agent folder or ``MODULE:ATTR`` naming an ADK agent: every `LlmAgent` of the
  tree, its instruction and its tools' declarations (ADK's own, so the schema is the one
  the agent's model sees);
- ``MODULE:ATTR`` naming an `OpenAIToolsAgent`: its instructions and tools (the schemas
  assay declares to its model).

Anything else (a plain callable, an HTTP URL) declares no tools assay can read, and is
an `InputError` asking for a description file.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import InputError
from assay.formats._common import read_structured

DESCRIPTION_SUFFIXES = (".json", ".yaml", ".yml")
_FORMS = (
    "a description file (.json/.yaml: name, instruction, tools), an ADK agent folder, or "
    "MODULE:ATTR naming an ADK agent or an OpenAIToolsAgent"
)


@dataclass(frozen=True)
class ToolDefinition:
    """One tool: its name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    agent: str

    def prompt_view(self) -> dict[str, Any]:
        """What the generating model is shown of the tool."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
            "agent": self.agent,
        }


@dataclass(frozen=True)
class AgentDefinition:
    """An agent's own account of itself; `sub_agents` nest the same way."""

    name: str
    description: str = ""
    instruction: str = ""
    tools: tuple[ToolDefinition, ...] = ()
    sub_agents: tuple[AgentDefinition, ...] = field(default_factory=tuple)

    def walk(self) -> Iterator[AgentDefinition]:
        """This agent, then its sub-agents depth first."""
        yield self
        for sub in self.sub_agents:
            yield from sub.walk()

    def all_tools(self) -> dict[str, ToolDefinition]:
        """Every tool of the tree by name (the first agent declaring a name wins)."""
        found: dict[str, ToolDefinition] = {}
        for agent in self.walk():
            for tool in agent.tools:
                found.setdefault(tool.name, tool)
        return found


def read_definition(spec: str | Path | object) -> AgentDefinition:
    """The definition of the agent `spec` names (see the module docstring)."""
    if isinstance(spec, AgentDefinition):
        return spec
    if isinstance(spec, str | Path):
        text = str(spec)
        path = Path(text)
        if path.suffix.lower() in DESCRIPTION_SUFFIXES:
            if not path.is_file():
                raise InputError(f"--agent {text}: no such description file", file=text)
            return _from_description(read_structured(path), text)
        if text.startswith(("http://", "https://")):
            raise InputError(
                f"--agent {text}: an HTTP agent does not publish its tools; describe it "
                "in a description file and pass that",
                expected=_FORMS,
            )
        return _from_object(_load_object(text), text)
    return _from_object(spec, type(spec).__name__)


def _load_object(spec: str) -> object:
    from assay.agents.loader import _import_object

    if Path(spec).is_dir():
        from assay.agents.adk import load_adk_agent

        return load_adk_agent(spec)
    return _import_object(spec)


def _from_object(obj: object, where: str) -> AgentDefinition:
    from assay.agents.adk import AdkAgent, is_adk_agent
    from assay.agents.openai_tools import OpenAIToolsAgent

    if isinstance(obj, AdkAgent):
        obj = obj._root  # an agent folder, loaded as assay runs it (same tools)
    if is_adk_agent(obj) and hasattr(obj, "root_agent"):
        obj = obj.root_agent  # an ADK App
    if is_adk_agent(obj):
        return _from_adk(obj)
    if isinstance(obj, OpenAIToolsAgent):
        tools = tuple(
            ToolDefinition(s.name, s.description, s.parameters, obj.name)
            for s in obj.tools.values()
        )
        return AgentDefinition(obj.name, instruction=obj.instructions or "", tools=tools)
    raise InputError(
        f"--agent {where}: a {type(obj).__name__} declares no tools assay can read; "
        "describe the agent in a description file and pass that",
        expected=_FORMS,
    )


# -- description files -------------------------------------------------------------------


def _text(obj: Mapping[str, object], key: str, where: str) -> str:
    value = obj.get(key, "")
    if not isinstance(value, str):
        raise InputError(f"{where}: {key} must be a string, got {type(value).__name__}")
    return value


def _from_description(raw: object, where: str, path: str = "") -> AgentDefinition:
    at = f"{where}{path}"
    if not isinstance(raw, Mapping):
        raise InputError(f"{at}: an agent description must be an object", expected=_FORMS)
    name = _text(raw, "name", at) or "agent"
    tools_raw = raw.get("tools", [])
    if not isinstance(tools_raw, list):
        raise InputError(f"{at}: tools must be a list")
    tools = tuple(
        _tool_from_description(item, f"{at}: tools[{i}]", name) for i, item in enumerate(tools_raw)
    )
    subs_raw = raw.get("sub_agents", raw.get("subAgents", []))
    if not isinstance(subs_raw, list):
        raise InputError(f"{at}: sub_agents must be a list")
    subs = tuple(
        _from_description(sub, where, f"{path} sub_agents[{i}]") for i, sub in enumerate(subs_raw)
    )
    return AgentDefinition(
        name=name,
        description=_text(raw, "description", at),
        instruction=_text(raw, "instruction", at),
        tools=tools,
        sub_agents=subs,
    )


def _tool_from_description(item: object, at: str, agent: str) -> ToolDefinition:
    if isinstance(item, Mapping) and item.get("type") == "function" and "function" in item:
        item = item["function"]  # OpenAI's tool shape
    if not isinstance(item, Mapping):
        raise InputError(f"{at}: a tool must be an object with name, description, parameters")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{at}: name is required (a string)")
    parameters = item.get("parameters", item.get("parameters_json_schema", {"type": "object"}))
    if not isinstance(parameters, Mapping):
        raise InputError(f"{at} ({name}): parameters must be a JSON schema object")
    _check_schema(parameters, f"{at} ({name}): parameters")
    if parameters.get("type", "object") != "object":
        raise InputError(
            f"{at} ({name}): parameters must be the schema of an object (type: object), "
            f"got type {parameters.get('type')!r}"
        )
    return ToolDefinition(name, _text(item, "description", at), dict(parameters), agent)


def _check_schema(schema: Mapping[str, Any], at: str) -> None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        raise InputError(f"{at}: not a valid JSON schema at {where}: {exc.message}") from None


# -- ADK agents --------------------------------------------------------------------------


def _from_adk(agent: Any) -> AgentDefinition:
    from google.adk.agents.llm_agent import LlmAgent

    instruction = ""
    tools: tuple[ToolDefinition, ...] = ()
    if isinstance(agent, LlmAgent):
        raw = agent.instruction
        instruction = raw if isinstance(raw, str) else "(the instruction is built at run time)"
        tools = tuple(_adk_tools(agent))
    return AgentDefinition(
        name=agent.name,
        description=agent.description or "",
        instruction=instruction,
        tools=tools,
        sub_agents=tuple(_from_adk(sub) for sub in agent.sub_agents),
    )


def _adk_tools(agent: Any) -> Iterator[ToolDefinition]:
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.base_toolset import BaseToolset
    from google.adk.tools.function_tool import FunctionTool

    for item in agent.tools:
        if isinstance(item, BaseToolset):
            continue  # a toolset (MCP, OpenAPI) lists its tools only when connected
        tool = item if isinstance(item, BaseTool) else FunctionTool(item)
        declaration = tool._get_declaration()
        if declaration is None:
            continue  # a built-in tool the model runs itself (google_search)
        yield ToolDefinition(
            name=tool.name,
            description=inspect.cleandoc(declaration.description or tool.description or ""),
            parameters=_declared_schema(declaration),
            agent=agent.name,
        )


def _declared_schema(declaration: Any) -> dict[str, Any]:
    if declaration.parameters_json_schema is not None:
        return dict(declaration.parameters_json_schema)
    if declaration.parameters is not None:
        lowered = _lower_types(declaration.parameters.model_dump(mode="json", exclude_none=True))
        if isinstance(lowered, dict):
            return lowered
    return {"type": "object", "properties": {}}


def _lower_types(schema: object) -> object:
    """A Gemini `Schema` dump as JSON schema (its types are upper case: "STRING")."""
    if isinstance(schema, Mapping):
        out: dict[str, object] = {}
        for key, value in schema.items():
            if key == "type" and isinstance(value, str):
                out[key] = value.lower()
            elif key == "properties" and isinstance(value, Mapping):
                out[key] = {name: _lower_types(sub) for name, sub in value.items()}
            else:
                out[key] = _lower_types(value)
        return out
    if isinstance(schema, Sequence) and not isinstance(schema, str):
        return [_lower_types(v) for v in schema]
    return schema
