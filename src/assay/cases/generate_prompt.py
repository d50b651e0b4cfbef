"""The prompt that asks a model for eval cases, the reply schema, and what it may cost.

One request asks for a batch of at most `BATCH` cases; `--count N` makes ceil(N / BATCH)
requests, one after the other, each shown the opening messages already kept so that it
writes other goals (`avoid`). The tools are shown as a JSON block (name, description,
JSON schema of the arguments, the agent that owns it); the reply is asked for as JSON
against `reply_schema`.

`estimate_cost` is for `--dry-run`: prompt tokens are counted as characters / 4 (no
tokenizer is needed), the reply as `REPLY_TOKENS_PER_CASE` per case, priced with
assay's table of list prices (`assay.metrics.budgets`), or unpriced when the model is
not in it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.cases.generate_definition import AgentDefinition
from assay.core.cases import Persona

BATCH = 10
CHARS_PER_TOKEN = 4
REPLY_TOKENS_PER_CASE = 250
TOOLS_HEADER = "TOOLS (JSON):"
PERSONAS_HEADER = "PERSONAS (JSON):"
SYSTEM_GOLDEN = "You write evaluation cases for an AI agent, as JSON."
SYSTEM_SCENARIOS = "You write conversation scenarios for testing an AI agent, as JSON."

_TOOL_CALL = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "args": {"type": "object"}},
    "required": ["name", "args"],
}
_COMMON = {
    "id": {"type": "string"},
    "user_goal": {"type": "string"},
    "opening_message": {"type": "string"},
    "expected_tool_calls": {"type": "array", "items": _TOOL_CALL},
    "rubrics": {"type": "array", "items": {"type": "string"}},
}


def _cases_schema(own: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """The reply's JSON schema: `{"cases": [...]}`, each case the common fields and `own`."""
    case = {"type": "object", "properties": {**_COMMON, **own}, "required": required}
    return {
        "type": "object",
        "properties": {"cases": {"type": "array", "items": case}},
        "required": ["cases"],
    }


GOLDEN_SCHEMA = _cases_schema(
    {"expected_outcome": {"type": "string"}},
    ["id", "user_goal", "opening_message", "expected_tool_calls"],
)
SCENARIO_SCHEMA = _cases_schema(
    {
        "persona": {"type": "string"},
        "conversation_plan": {"type": "string"},
        "stop_condition": {"type": "string"},
    },
    ["id", "user_goal", "opening_message", "persona", "conversation_plan", "stop_condition"],
)


def reply_schema(scenarios: bool) -> dict[str, Any]:
    return SCENARIO_SCHEMA if scenarios else GOLDEN_SCHEMA


def batch_sizes(count: int) -> list[int]:
    """How many cases each request asks for."""
    full, rest = divmod(count, BATCH)
    return [BATCH] * full + ([rest] if rest else [])


def _agent_text(agent: AgentDefinition, depth: int = 0) -> list[str]:
    pad = "  " * depth
    lines = [f"{pad}- agent {agent.name}"]
    if agent.description:
        lines.append(f"{pad}  description: {agent.description}")
    if agent.instruction:
        lines.append(f"{pad}  instruction: {agent.instruction}")
    if agent.tools:
        lines.append(f"{pad}  tools: {', '.join(t.name for t in agent.tools)}")
    for sub in agent.sub_agents:
        lines += _agent_text(sub, depth + 1)
    return lines


def _json_lines(items: Sequence[Mapping[str, Any]]) -> str:
    """A JSON list with one item a line (readable, and fewer tokens than indenting)."""
    return "[\n" + ",\n".join(json.dumps(item, ensure_ascii=False) for item in items) + "\n]"


def _persona_view(persona: Persona) -> dict[str, str]:
    view = {"id": persona.id}
    for key in ("display_name", "description", "personality"):
        value = getattr(persona, key)
        if value:
            view[key] = value
    return view


def build_messages(
    agent: AgentDefinition,
    *,
    size: int,
    batch: int,
    batches: int,
    scenarios: bool,
    personas: Sequence[Persona] = (),
    focus: str | None = None,
    avoid: Sequence[str] = (),
) -> list[dict[str, str]]:
    """The chat messages of one generation request."""
    tools = [t.prompt_view() for t in agent.all_tools().values()]
    what = "conversation scenarios" if scenarios else "test cases"
    lines = [
        f"Write {size} diverse {what} for the agent below (batch {batch} of {batches}).",
        "",
        "THE AGENT:",
        *_agent_text(agent),
        "",
        TOOLS_HEADER,
        "```json",
        _json_lines(tools),
        "```",
        "",
        "RULES:",
        "- Each case is one user goal the agent should handle, with the user's opening"
        " message written as a real user would write it.",
        "- expected_tool_calls lists, in order, the calls the agent should make: only tools"
        " from TOOLS, with arguments that validate against the tool's parameters schema"
        " (required arguments present, enum values exact, numbers within their bounds).",
        "- Cover different tools, different argument values and different phrasings; do not"
        " repeat a goal another case already tests.",
        "- rubrics are short yes/no statements a good answer satisfies.",
    ]
    if scenarios:
        lines += [
            "- Each scenario has a persona (an id from PERSONAS), a conversation_plan (what"
            " the simulated user wants and reveals, step by step) and a stop_condition"
            " (when the user is done).",
            "",
            PERSONAS_HEADER,
            "```json",
            _json_lines([_persona_view(p) for p in personas]),
            "```",
        ]
    else:
        lines.append("- expected_outcome says what must be true once the agent is done.")
    if focus:
        lines += ["", f"FOCUS: {focus}"]
    if avoid:
        lines += ["", "ALREADY WRITTEN (do not repeat these goals):"]
        lines += [f"- {text}" for text in avoid]
    lines += ["", 'Answer with JSON only: {"cases": [...]}.']
    system = SYSTEM_SCENARIOS if scenarios else SYSTEM_GOLDEN
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]


@dataclass(frozen=True)
class CostEstimate:
    """What a generation would send and cost (before any call is made)."""

    requests: int
    input_tokens: int
    output_tokens: int
    usd: float | None  # None: the model is not in the price table

    def show(self) -> str:
        tokens = f"~{self.input_tokens:,} input + ~{self.output_tokens:,} output tokens"
        price = "no list price known" if self.usd is None else f"~${self.usd:.4f}"
        noun = "request" if self.requests == 1 else "requests"
        return f"{self.requests} {noun}, {tokens}, {price}"


def count_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    return sum(math.ceil(len(m["content"]) / CHARS_PER_TOKEN) for m in messages)


def estimate_cost(
    model: str, requests: Sequence[Sequence[Mapping[str, str]]], sizes: Sequence[int]
) -> CostEstimate:
    from assay.metrics.budgets import find_price, shipped_prices

    input_tokens = sum(count_tokens(r) for r in requests)
    output_tokens = REPLY_TOKENS_PER_CASE * sum(sizes)
    price = find_price(model, shipped_prices())
    usd = None
    if price is not None:
        usd = (
            input_tokens * price.input_per_million + output_tokens * price.output_per_million
        ) / 1e6
    return CostEstimate(len(requests), input_tokens, output_tokens, usd)
