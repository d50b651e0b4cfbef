"""The Vertex tool-call metrics on assay's model (definitions in `assay.metrics.tool_calls`).

The prediction is the invocation's tool calls; the reference is the reference turn's
(its CES tool-call expectations when it has them, else its tool-call steps). Without a
reference turn the name/parameter metrics give no score; `tool_call_valid` needs none.

Tool declarations for `tool_call_valid` come from ADK's `app_details` (per invocation
in an ADK eval case, or `case.metadata["app_details"]` as the agent adapters record
it): `{"agent_details": {AGENT: {"tool_declarations": [{"function_declarations": [
{"name", "parameters" | "parameters_json_schema"}]}]}}}`. Gemini-style schemas
(`"type": "OBJECT"`, `nullable`) are read as the JSON Schema they stand for.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from assay.core.cases import EvalCase, ToolCall, Turn
from assay.core.results import MetricResult, Score
from assay.metrics.base import Metric, MetricOptions
from assay.metrics.judged.context import agents_for
from assay.metrics.registry import register
from assay.metrics.structured import first_violation, schema_validator
from assay.metrics.tool_calls import Verdict, parameter_score, tool_name_score
from assay.metrics.trajectory import expected_tool_calls

NO_REFERENCE_TURN = "no reference turn at this index to compare tool calls with"

_NO_SCHEMA = object()  # a declared tool without a parameter schema (a built-in tool)


def _json_schema(gemini: object) -> object:
    """A Gemini `Schema` (upper-case types, `nullable`) as JSON Schema; JSON Schema as is."""
    if isinstance(gemini, list):
        return [_json_schema(v) for v in gemini]
    if not isinstance(gemini, Mapping):
        return gemini
    out: dict[str, Any] = {}
    for key, value in gemini.items():
        if key in ("property_ordering", "propertyOrdering"):
            continue
        if key == "type" and isinstance(value, str):
            out[key] = value.lower()
        elif key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
            out[key] = {k: _json_schema(v) for k, v in value.items()}
        elif key in ("items", "anyOf", "any_of", "allOf", "oneOf", "not"):
            out["anyOf" if key == "any_of" else key] = _json_schema(value)
        else:
            out[key] = value
    if out.pop("nullable", False) is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def _declarations(tools: Iterable[object]) -> Iterable[Mapping[str, object]]:
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        inner = tool.get("function_declarations", tool.get("functionDeclarations"))
        if isinstance(inner, list):
            yield from (d for d in inner if isinstance(d, Mapping))
        elif isinstance(tool.get("name"), str):
            yield tool


def declared_tools(case: EvalCase, index: int | None) -> dict[str, object] | None:
    """Declared tool name -> its parameter JSON Schema (`_NO_SCHEMA` when it has none).

    None when the case declares no tools at all (then only the call's shape is checked).
    """
    found: dict[str, Any] = {}
    for agent in agents_for(case, index):
        for decl in _declarations(agent.tools):
            schema = decl.get(
                "parameters_json_schema",
                decl.get("parametersJsonSchema", decl.get("parameters")),
            )
            found[str(decl["name"])] = _json_schema(schema) if schema else _NO_SCHEMA
    return found or None


def call_valid(call: ToolCall, declared: Mapping[str, Any] | None) -> str | None:
    """Why `call` is not a valid call of the declared tools; None when it is."""
    if not call.name.strip():
        return "a tool call has no name"
    if declared is None:
        return None
    if call.name not in declared:
        return f"{call.name} is not a declared tool (declared: {', '.join(sorted(declared))})"
    schema = declared[call.name]
    if schema is _NO_SCHEMA:
        return None
    try:
        validator = schema_validator(schema)
    except ValueError as exc:
        return f"the declaration of {call.name} has an unusable schema: {exc}"
    import jsonschema.exceptions  # loaded by `schema_validator` above

    try:
        problem = first_violation(validator, call.args)
    except jsonschema.exceptions.RefResolutionError as exc:  # pragma: no cover - remote $ref
        return f"the schema of {call.name} refers to what cannot be resolved: {exc}"
    return f"{call.name} arguments are invalid at {problem}" if problem else None


def tool_call_valid_score(calls: list[ToolCall], declared: Mapping[str, object] | None) -> Verdict:
    """`tool_call_valid` on parsed calls (arguments already known to be objects)."""
    if not calls:
        return Verdict(0.0, "the prediction has no tool call")
    problems = [p for p in (call_valid(c, declared) for c in calls) if p]
    if problems:
        return Verdict(0.0, "; ".join(problems))
    against = " against the declared schemas" if declared is not None else ""
    return Verdict(1.0, f"{len(calls)} valid tool call(s){against}")


class _ToolMetric(Metric, ABC):
    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    default_threshold: ClassVar[float | None] = 1.0

    def score_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        per = [
            self.score_turn(a, e, case, i)
            for i, (a, e) in enumerate(zip(actual, expected, strict=True))
        ]
        return self.result_from_invocations(per)

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        return self.score_turn(actual, expected, case, None)

    @abstractmethod
    def score_turn(
        self, actual: Turn, expected: Turn | None, case: EvalCase, index: int | None
    ) -> Score: ...


@register
class ToolCallValid(_ToolMetric):
    """1 if the invocation made tool calls and each is well formed (and valid against the
    declared tool schema when the case declares its tools)."""

    name: ClassVar[str] = "tool_call_valid"
    description: ClassVar[str] = (
        "1 if every tool call is well formed and valid against the declared tool schemas"
    )
    needs: ClassVar[frozenset[str]] = frozenset({"tool_calls"})

    def score_turn(
        self, actual: Turn, expected: Turn | None, case: EvalCase, index: int | None
    ) -> Score:
        verdict = tool_call_valid_score(actual.tool_calls(), declared_tools(case, index))
        return Score(verdict.score, verdict.explanation)


class _AgainstReference(_ToolMetric):
    needs: ClassVar[frozenset[str]] = frozenset({"tool_calls", "reference"})

    def score_turn(
        self, actual: Turn, expected: Turn | None, case: EvalCase, index: int | None
    ) -> Score:
        if expected is None:
            return Score(None, NO_REFERENCE_TURN)
        want = expected_tool_calls(expected) if expected.expectations else expected.tool_calls()
        verdict = self.verdict(actual.tool_calls(), want)
        return Score(verdict.score, verdict.explanation)

    @abstractmethod
    def verdict(self, predicted: list[ToolCall], reference: list[ToolCall]) -> Verdict: ...


@register
class ToolNameMatch(_AgainstReference):
    """1 if the calls have the reference calls' names, in order."""

    name: ClassVar[str] = "tool_name_match"
    description: ClassVar[str] = "1 if the tool calls have the reference calls' names, in order"

    def verdict(self, predicted: list[ToolCall], reference: list[ToolCall]) -> Verdict:
        return tool_name_score(predicted, reference)


@register
class ToolParameterKeyMatch(_AgainstReference):
    """Share of argument names shared with the reference calls (position by position)."""

    name: ClassVar[str] = "tool_parameter_key_match"
    description: ClassVar[str] = "argument names shared with the reference calls, 0..1"

    def verdict(self, predicted: list[ToolCall], reference: list[ToolCall]) -> Verdict:
        return parameter_score(predicted, reference, values=False)


class KVMatchOptions(MetricOptions):
    """Vertex's `ToolParameterKVMatchSpec`."""

    use_strict_string_match: bool = False


@register
class ToolParameterKVMatch(_AgainstReference):
    """Share of arguments (name and value) shared with the reference calls."""

    name: ClassVar[str] = "tool_parameter_kv_match"
    description: ClassVar[str] = "arguments (names and values) shared with the reference, 0..1"
    options_model: ClassVar[type[MetricOptions]] = KVMatchOptions

    def verdict(self, predicted: list[ToolCall], reference: list[ToolCall]) -> Verdict:
        opts = self.options
        assert isinstance(opts, KVMatchOptions)
        return parameter_score(
            predicted, reference, values=True, strict=opts.use_strict_string_match
        )
