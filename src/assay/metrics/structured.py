"""Structured-output checks: `is_json` and `json_schema` on the final response.

`jsonschema` is a core dependency rather than an extra: it is small (pure Python plus
the `rpds-py` wheel), the service extra already pulls it in through `mcp`, and two core
metrics (`json_schema`, `tool_call_valid`'s argument check) need it.

A model often wraps JSON in a Markdown code fence (```json ... ```); with
`allow_code_fence: true` the fenced body is parsed instead. Off by default so that a
response a program must parse is checked as the program would read it.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator

from assay.metrics.base import MetricOptions
from assay.metrics.checks import _Check
from assay.metrics.registry import register
from assay.metrics.response import quote

if TYPE_CHECKING:
    import jsonschema
from assay.core.results import Score

_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```\s*\Z", re.DOTALL)


class JsonOptions(MetricOptions):
    allow_code_fence: bool = False


def parse_json(text: str, *, allow_code_fence: bool) -> tuple[object, str | None]:
    """(the parsed value, None) or (None, why it is not JSON)."""
    if allow_code_fence and (fenced := _FENCE.match(text)):
        text = fenced.group(1)
    if not text.strip():
        return None, "the response is empty, not JSON"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"the response is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"


def json_path(path: Any) -> str:
    """A jsonschema error path as `$.a[0].b`."""
    out = "$"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def schema_validator(schema: dict[str, object]) -> jsonschema.protocols.Validator:
    """A validator of the schema's declared draft (2020-12 when none), schema checked.

    Raises ValueError naming what is wrong with the schema itself.
    """
    # Imported when a schema is used, not when the metrics are registered (every start).
    import jsonschema
    from jsonschema.exceptions import SchemaError

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(
            f"invalid JSON schema at {json_path(exc.absolute_path)}: {exc.message}"
        ) from None
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator


def first_violation(validator: jsonschema.protocols.Validator, value: Any) -> str | None:
    """The most relevant schema violation of `value`, as one line; None when valid."""
    import jsonschema.exceptions

    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return None
    return f"{json_path(error.absolute_path)}: {error.message}"


@register
class IsJson(_Check):
    """1 if the final response parses as JSON, else 0."""

    name: ClassVar[str] = "is_json"
    description: ClassVar[str] = "1 if the response is valid JSON"
    options_model: ClassVar[type[MetricOptions]] = JsonOptions

    def score_text(self, response: str, reference: str | None) -> Score:
        opts = self.options
        assert isinstance(opts, JsonOptions)
        value, problem = parse_json(response, allow_code_fence=opts.allow_code_fence)
        if problem is not None:
            return Score(0.0, problem)
        return Score(1.0, f"the response is JSON ({type(value).__name__})")


class JsonSchemaOptions(JsonOptions):
    """`schema`: the JSON Schema the response must satisfy (draft from `$schema`)."""

    schema_: dict[str, Any] = Field(alias="schema")

    @field_validator("schema_")
    @classmethod
    def _valid_schema(cls, schema: dict[str, object]) -> dict[str, object]:
        schema_validator(schema)
        return schema


@register
class JsonSchema(_Check):
    """1 if the final response is JSON valid against `schema`, else 0 (with the violation)."""

    name: ClassVar[str] = "json_schema"
    description: ClassVar[str] = "1 if the response is JSON valid against `schema`"
    options_model: ClassVar[type[MetricOptions]] = JsonSchemaOptions

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        opts = self.options
        assert isinstance(opts, JsonSchemaOptions)
        self._validator = schema_validator(opts.schema_)
        self._fence = opts.allow_code_fence

    def score_text(self, response: str, reference: str | None) -> Score:
        value, problem = parse_json(response, allow_code_fence=self._fence)
        if problem is not None:
            return Score(0.0, problem)
        violation = first_violation(self._validator, value)
        if violation is not None:
            return Score(0.0, f"the response violates the schema at {violation}")
        return Score(1.0, f"the response {quote(response, 40)} satisfies the schema")
