"""Checking generated cases: real tools, valid arguments, no near-duplicates; coverage.

A model's proposals (`Candidate`s, read from its JSON reply by `parse_reply`) are kept
only when every expected tool call names a tool of the agent and its arguments validate
against that tool's JSON schema (Draft 2020-12; an argument the schema does not declare
is refused too, as the agent's tool would refuse it). A refused case is dropped whole,
since its expected trajectory would be wrong without the call, and its `Refusal` says
which call and why.

Near-duplicates are then removed, first come first kept:

- lexically: the Jaccard similarity of the two cases' token sets (the lower-cased words
  of the opening message, plus each expected call's name and ``arg=value`` pairs) is at
  least `LEXICAL_THRESHOLD`;
- semantically, when an embeddings endpoint is given: the cosine similarity of the
  opening messages' embeddings is at least `SEMANTIC_THRESHOLD`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.cases.generate_definition import ToolDefinition
from assay.core.cases import Persona, ToolCall

LEXICAL_THRESHOLD = 0.8
SEMANTIC_THRESHOLD = 0.95
_WORD = re.compile(r"\w+")

INVENTED_TOOL = "invented tool"
INVALID_ARGUMENTS = "invalid arguments"
NEAR_DUPLICATE = "near-duplicate"
MALFORMED = "malformed"
UNKNOWN_PERSONA = "unknown persona"
SURPLUS = "surplus"
MODEL_ERROR = "model error"


@dataclass(frozen=True)
class Refusal:
    """A proposed case that was not kept, and why."""

    case_id: str
    kind: str
    reason: str

    def show(self) -> str:
        return f"{self.case_id}: {self.kind}: {self.reason}"


@dataclass
class Candidate:
    """One case as the model proposed it."""

    id: str
    user_goal: str
    opening_message: str
    tool_calls: list[ToolCall]
    rubrics: list[str] = field(default_factory=list)
    expected_outcome: str | None = None
    persona: str | None = None
    conversation_plan: str | None = None
    stop_condition: str | None = None


def _str(item: Mapping[str, Any], key: str, required: bool) -> str | None:
    value = item.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise ValueError(f"{key} is missing")
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, got {type(value).__name__}")
    return value.strip()


def _calls(raw: object) -> list[ToolCall]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError("expected_tool_calls must be a list")
    calls = []
    for i, call in enumerate(raw):
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            raise ValueError(f"expected_tool_calls[{i}] must be an object with a name")
        args = call.get("args", {})
        if not isinstance(args, Mapping):
            raise ValueError(f"expected_tool_calls[{i}].args must be an object")
        calls.append(ToolCall(name=call["name"], args=dict(args)))
    return calls


def _rubrics(raw: object) -> list[str]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        raise ValueError("rubrics must be a list of strings")
    return [r.strip() for r in raw if r.strip()]


def _candidate(item: Mapping[str, Any], case_id: str, scenarios: bool) -> Candidate:
    return Candidate(
        id=case_id,
        user_goal=_str(item, "user_goal", True) or "",
        opening_message=_str(item, "opening_message", True) or "",
        tool_calls=_calls(item.get("expected_tool_calls")),
        rubrics=_rubrics(item.get("rubrics")),
        expected_outcome=_str(item, "expected_outcome", False),
        persona=_str(item, "persona", scenarios),
        conversation_plan=_str(item, "conversation_plan", scenarios),
        stop_condition=_str(item, "stop_condition", scenarios),
    )


_ID_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


def case_id(raw: object, fallback: str) -> str:
    """A file-safe case id from the model's, else `fallback`."""
    text = _ID_CHARS.sub("_", raw.strip()).strip("_") if isinstance(raw, str) else ""
    return text[:64] or fallback


def read_json(text: str) -> object:
    """The JSON value of a reply (a ```json fence around it is allowed)."""
    body = text.strip()
    fence = re.match(r"^```(?:json)?\s*\n(.*)\n```$", body, re.DOTALL)
    return json.loads(fence.group(1) if fence else body)


def is_readable(text: str) -> bool:
    """Whether a reply holds ``{"cases": [...]}`` (only those are cached)."""
    try:
        value = read_json(text)
    except ValueError:
        return False
    return isinstance(value, Mapping) and isinstance(value.get("cases"), list)


def parse_reply(
    text: str, *, batch: int, scenarios: bool, taken: set[str]
) -> tuple[list[Candidate], list[Refusal]]:
    """The candidates of one reply; items that are not a case are refused as malformed.

    `taken` holds the ids used so far; a repeated id gets a ``-2``... suffix.
    """
    value = read_json(text)
    items = value.get("cases") if isinstance(value, Mapping) else None
    if not isinstance(items, list):
        raise ValueError('the reply is not {"cases": [...]}')
    found: list[Candidate] = []
    refused: list[Refusal] = []
    for i, item in enumerate(items):
        raw_id = item.get("id") if isinstance(item, Mapping) else None
        cid = _unique(case_id(raw_id, f"generated_{batch}_{i + 1}"), taken)
        if not isinstance(item, Mapping):
            refused.append(Refusal(cid, MALFORMED, f"item {i} of batch {batch} is not an object"))
            continue
        try:
            found.append(_candidate(item, cid, scenarios))
        except ValueError as exc:
            refused.append(Refusal(cid, MALFORMED, str(exc)))
    return found, refused


def _unique(cid: str, taken: set[str]) -> str:
    out, n = cid, 1
    while out in taken:
        n += 1
        out = f"{cid}-{n}"
    taken.add(out)
    return out


# -- tools and arguments -----------------------------------------------------------------


def _argument_problem(call: ToolCall, tool: ToolDefinition) -> str | None:
    from jsonschema import Draft202012Validator

    schema = tool.parameters
    properties = schema.get("properties")
    if isinstance(properties, Mapping) and "additionalProperties" not in schema:
        unknown = sorted(set(call.args) - set(properties))
        if unknown:
            takes = ", ".join(properties) or "no arguments"
            return f"unexpected argument(s) {', '.join(unknown)}; {tool.name} takes {takes}"
    errors = sorted(
        Draft202012Validator(schema).iter_errors(call.args), key=lambda e: list(e.absolute_path)
    )
    if not errors:
        return None
    first = errors[0]
    where = "/".join(str(p) for p in first.absolute_path)
    return f"{where + ': ' if where else ''}{first.message}"


def check_calls(candidate: Candidate, tools: Mapping[str, ToolDefinition]) -> Refusal | None:
    """Why `candidate` cannot be kept (an invented tool, invalid arguments), or None."""
    for i, call in enumerate(candidate.tool_calls):
        tool = tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(tools)) or "none"
            return Refusal(
                candidate.id,
                INVENTED_TOOL,
                f"call {i + 1} names tool {call.name!r}, which the agent does not have"
                f" (its tools: {known})",
            )
        problem = _argument_problem(call, tool)
        if problem is not None:
            shown = json.dumps(call.args, ensure_ascii=False, sort_keys=True)
            return Refusal(
                candidate.id,
                INVALID_ARGUMENTS,
                f"call {i + 1} {call.name}({shown}) breaks the tool's schema: {problem}",
            )
    return None


def check_persona(candidate: Candidate, personas: Mapping[str, Persona]) -> Refusal | None:
    """A scenario whose persona is none of the given ones (ids match without case)."""
    if candidate.persona is None:
        return None
    if candidate.persona.lower() in {p.lower() for p in personas}:
        return None
    known = ", ".join(personas) or "none"
    return Refusal(
        candidate.id,
        UNKNOWN_PERSONA,
        f"persona {candidate.persona!r} is not one of the personas given ({known})",
    )


# -- near-duplicates ---------------------------------------------------------------------


def tokens(candidate: Candidate) -> frozenset[str]:
    """The words of the opening message and the calls' names and ``arg=value`` pairs."""
    words = set(_WORD.findall(candidate.opening_message.lower()))
    for call in candidate.tool_calls:
        words.add(f"call:{call.name}")
        for key, value in call.args.items():
            words.add(f"{key}={json.dumps(value, sort_keys=True)}")
    return frozenset(words)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def remove_near_duplicates(
    candidates: Sequence[Candidate],
    kept_before: Sequence[Candidate] = (),
    *,
    lexical_threshold: float = LEXICAL_THRESHOLD,
    vectors: Mapping[str, Sequence[float]] | None = None,
    semantic_threshold: float = SEMANTIC_THRESHOLD,
    cosine: Callable[[Sequence[float], Sequence[float]], float] | None = None,
) -> tuple[list[Candidate], list[Refusal]]:
    """`candidates` without the near-duplicates of an earlier one (or of `kept_before`).

    `vectors` maps opening messages to embeddings (semantic check); `cosine` compares two.
    """
    kept: list[tuple[Candidate, frozenset[str]]] = [(c, tokens(c)) for c in kept_before]
    fresh: list[Candidate] = []
    refused: list[Refusal] = []
    for cand in candidates:
        mine = tokens(cand)
        reason = None
        for earlier, theirs in kept:
            score = jaccard(mine, theirs)
            if score >= lexical_threshold:
                reason = (
                    f"repeats case {earlier.id} (lexical similarity {score:.2f} >="
                    f" {lexical_threshold:g})"
                )
                break
            if vectors is not None and cosine is not None:
                sim = cosine(vectors[cand.opening_message], vectors[earlier.opening_message])
                if sim >= semantic_threshold:
                    reason = (
                        f"repeats case {earlier.id} (semantic similarity {sim:.2f} >="
                        f" {semantic_threshold:g})"
                    )
                    break
        if reason is None:
            kept.append((cand, mine))
            fresh.append(cand)
        else:
            refused.append(Refusal(cand.id, NEAR_DUPLICATE, reason))
    return fresh, refused


# -- coverage ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Coverage:
    """Which tools and personas the kept cases exercise (counts of cases), and which
    tools (and given personas) none of them touches."""

    tools: dict[str, int]
    personas: dict[str, int]
    untouched_tools: list[str]
    unused_personas: list[str]

    def rows(self) -> list[tuple[str, str, int]]:
        """(kind, name, cases) rows, tools first, untouched ones with 0."""
        out = [("tool", name, n) for name, n in self.tools.items()]
        out += [("persona", name, n) for name, n in self.personas.items()]
        return out


def coverage(
    kept: Sequence[Candidate], tools: Sequence[str], personas: Sequence[str] = ()
) -> Coverage:
    tool_counts = {name: 0 for name in tools}
    persona_counts = {name: 0 for name in personas}
    for cand in kept:
        for name in {c.name for c in cand.tool_calls}:
            tool_counts[name] = tool_counts.get(name, 0) + 1
        if cand.persona is not None:
            match = next((p for p in persona_counts if p.lower() == cand.persona.lower()), None)
            persona_counts[match or cand.persona] = persona_counts.get(match or cand.persona, 0) + 1
    return Coverage(
        tools=tool_counts,
        personas=persona_counts,
        untouched_tools=[name for name, n in tool_counts.items() if n == 0],
        unused_personas=[name for name, n in persona_counts.items() if n == 0],
    )
