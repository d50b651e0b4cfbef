"""MCP tool arguments checked against the tool's declared input schema before it runs.

A client that ignores a tool's `inputSchema` (`"pageSize": "abc"`, `"filter": 1`) gets
a tool error naming the argument and what the schema expects, instead of the handler
failing on the value as an INTERNAL error. The message is written here, not taken from
jsonschema, whose messages repeat the whole offending value (a 4 MB body, say).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from assay.service.errors import InvalidArgument

_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    type(None): "null",
}
_EXPECTED = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
}


class ArgumentsChecker:
    """Validates one tool's arguments against its input schema."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        Draft202012Validator.check_schema(schema)
        self._validator = Draft202012Validator(schema)

    def check(self, arguments: Mapping[str, object]) -> None:
        """Raise INVALID_ARGUMENT naming the first argument that breaks the schema."""
        errors = list(self._validator.iter_errors(arguments))
        if errors:
            # The shallowest error is the most telling (a wrong object, not its innards).
            first = min(errors, key=lambda e: (len(e.absolute_path), list(map(str, e.path))))
            raise InvalidArgument.field(*_describe(first))


def _where(error: ValidationError) -> str:
    out = ""
    for key in error.absolute_path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def _describe(error: ValidationError) -> tuple[str, str]:
    """(argument path, what is wrong) for one schema violation."""
    where = _where(error)
    kind: Any = error.validator
    expected: Any = error.validator_value
    value: Any = error.instance
    if kind == "required":
        missing = [name for name in expected if name not in value]
        name = missing[0] if missing else "?"
        return (f"{where}.{name}" if where else name), "required argument is missing"
    if kind == "additionalProperties":
        schema: Any = error.schema
        known = sorted(schema.get("properties", {}) if isinstance(schema, Mapping) else {})
        extra = sorted(k for k in value if k not in known)
        name = extra[0] if extra else "?"
        return (
            f"{where}.{name}" if where else name
        ), f"unknown argument; expected some of {', '.join(known)}"
    field = where or "arguments"
    got = _JSON_TYPES.get(type(value), type(value).__name__)
    if kind == "type":
        names = [expected] if isinstance(expected, str) else list(expected)
        wanted = " or ".join(_EXPECTED.get(n, n) for n in names)
        return field, f"expected {wanted}, got {got}"
    if kind == "enum":
        return field, f"expected one of {', '.join(map(str, expected))}"
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        word = {"minimum": "at least", "maximum": "at most"}.get(kind, kind)
        return field, f"must be {word} {expected} (got {value})"
    if kind in ("minLength", "maxLength", "pattern", "minItems", "maxItems"):
        return field, f"breaks the schema's {kind} {expected!r}"
    return field, f"does not match the tool's input schema ({kind})"
