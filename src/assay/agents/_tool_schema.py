"""Tool declarations from plain Python functions: JSON schema from signature and docstring.

`ToolSpec.from_function(fn)` reads a function's name, its docstring (the summary as the
tool description; per-parameter descriptions from a Google ``Args:``, NumPy
``Parameters`` or reST ``:param x:`` section) and its parameters' type hints, and
builds the JSON schema a chat model gets for the tool. Supported annotations: ``str``,
``int``, ``float``, ``bool``, ``None``, ``Any``, ``list[T]`` / ``set[T]`` /
``tuple[...]`` / ``Sequence[T]``, ``dict[str, T]`` / ``Mapping[str, T]``, ``Optional``
and unions, ``Literal[...]``, ``Enum`` subclasses, pydantic models and dataclasses, and
``Annotated[T, "description"]`` (or ``Annotated[T, Field(description=...)]``). A
parameter named ``state`` is not declared: the adapter passes it the session state.

`ToolSpec.bind(args)` checks and converts the arguments a model sent (a dict becomes
the pydantic model the function expects, "3" an int) before the call; a problem raises
`ToolArgumentError`, which the adapter hands back to the model as the tool's error.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python

from assay.errors import AgentError

STATE_PARAM = "state"
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SUPPORTED = (
    "str, int, float, bool, None, Any, list[T], set[T], tuple[...], dict[str, T], "
    "Optional[T] and unions, Literal[...], an Enum, a pydantic model or a dataclass"
)
_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARRAYS = (list, set, frozenset, tuple, Sequence, typing.Sequence, typing.List)  # noqa: UP006
_OBJECTS = (dict, Mapping, typing.Mapping, typing.Dict)  # noqa: UP006


class ToolSchemaError(AgentError):
    """A function cannot be declared as a tool (unsupported annotation, bad name...)."""


class ToolArgumentError(AgentError):
    """The arguments a model sent do not fit the tool's parameters."""


# -- docstrings ----------------------------------------------------------------------------

_GOOGLE_HEADER = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|"
    r"Returns?|Yields?|Raises|Examples?|Notes?|Attributes|See Also|Warnings?|Todo)\s*:\s*$"
)
_PARAM_SECTIONS = {
    "Args",
    "Arguments",
    "Parameters",
    "Params",
    "Keyword Args",
    "Keyword Arguments",
    "Other Parameters",
}
_GOOGLE_ITEM = re.compile(r"^\**(?P<name>\w+)\s*(\([^)]*\))?\s*:\s*(?P<text>.*)$")
_NUMPY_ITEM = re.compile(r"^(?P<name>\w+)\s*(:.*)?$")
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(?P<name>\w+)\s*:\s*(?P<text>.*)$")
_REST_FIELD = re.compile(r"^:\w+")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _items(lines: Sequence[str], item: re.Pattern[str]) -> dict[str, str]:
    """`name: text` items, each followed by more-indented continuation lines."""
    found: dict[str, list[str]] = {}
    base: int | None = None
    current: list[str] | None = None
    for line in lines:
        if not line.strip():
            continue
        indent = _indent(line)
        base = indent if base is None else base
        match = item.match(line.strip()) if indent <= base else None
        if match is None and indent <= base and item is _REST_PARAM:
            current = None  # another reST field (:returns:, :raises:) ends a parameter
        if match:
            current = found.setdefault(match.group("name"), [])
            text = match.groupdict().get("text")
            if text:
                current.append(text.strip())
        elif current is not None:
            current.append(line.strip())
    return {name: " ".join(parts) for name, parts in found.items()}


def _header(lines: Sequence[str], i: int) -> str | None:
    """The section name if line `i` starts a Google or NumPy section, else None."""
    stripped = lines[i].strip()
    google = _GOOGLE_HEADER.match(stripped)
    if google:
        return google.group(1)
    underline = lines[i + 1].strip() if i + 1 < len(lines) else ""
    if stripped and len(underline) >= 3 and set(underline) == {"-"}:
        return stripped
    return None


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {parameter: description}) from a Google, NumPy or reST docstring.

    The description is the text before the first section (``Args:``, ``Returns``
    underlined, ``:param x:``...).
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    summary_end = len(lines)
    params: dict[str, str] = {}
    i = 0
    while i < len(lines):
        section = _header(lines, i)
        if section is None:
            if _REST_FIELD.match(lines[i].strip()):
                summary_end = min(summary_end, i)
                params.update(_items(lines[i:], _REST_PARAM))
                break
            i += 1
            continue
        summary_end = min(summary_end, i)
        numpy = not _GOOGLE_HEADER.match(lines[i].strip())
        start = i + (2 if numpy else 1)
        end = start
        while end < len(lines):
            line = lines[end]
            # Google sections end at a dedent; NumPy items sit at the header's indent.
            if line.strip() and (
                _header(lines, end) or (not numpy and _indent(line) <= _indent(lines[i]))
            ):
                break
            end += 1
        if section in _PARAM_SECTIONS:
            params.update(_items(lines[start:end], _NUMPY_ITEM if numpy else _GOOGLE_ITEM))
        i = end
    return "\n".join(lines[:summary_end]).strip(), params


# -- schemas -------------------------------------------------------------------------------


class _Unsupported(Exception):
    def __init__(self, annotation: object) -> None:
        super().__init__(annotation)
        self.annotation = annotation


def _json_type(value: object) -> str | None:
    for python, name in (
        (bool, "boolean"),
        (int, "integer"),
        (float, "number"),
        (str, "string"),
    ):
        if isinstance(value, python):
            return name
    return "null" if value is None else None


def _enum_schema(values: Sequence[object]) -> dict[str, object]:
    schema: dict[str, Any] = {}
    kinds = {_json_type(v) for v in values}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    schema["enum"] = list(values)
    return schema


def _nullable(schema: dict[str, Any]) -> dict[str, object]:
    if isinstance(schema.get("type"), str) and "$ref" not in schema:
        schema = {**schema, "type": [schema["type"], "null"]}
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def _structured(annotation: Any, defs: dict[str, object]) -> dict[str, object]:
    schema = TypeAdapter(annotation).json_schema(ref_template="#/$defs/{model}")
    defs.update(schema.pop("$defs", {}))
    return schema


def type_schema(annotation: object, defs: dict[str, object]) -> dict[str, object]:
    """The JSON schema of one annotation; pydantic `$defs` are collected into `defs`."""
    if annotation is Any or annotation is inspect.Parameter.empty:
        return {}
    if annotation is None or annotation is type(None):
        return {"type": "null"}
    if annotation in _PRIMITIVES:
        return {"type": _PRIMITIVES[annotation]}
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        schema = type_schema(args[0], defs)
        for meta in args[1:]:
            text = meta if isinstance(meta, str) else getattr(meta, "description", None)
            if isinstance(meta, str | FieldInfo) and text:
                schema = {**schema, "description": text}
        return schema
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            schema = type_schema(members[0], defs)
        else:
            schema = {"anyOf": [type_schema(m, defs) for m in members]}
        return _nullable(schema) if len(members) < len(args) else schema
    if origin is typing.Literal:
        return _enum_schema(args)
    if inspect.isclass(annotation) and issubclass(annotation, enum.Enum):
        return _enum_schema([member.value for member in annotation])
    if annotation in _ARRAYS or origin in _ARRAYS:
        schema = {"type": "array"}
        if origin is tuple and args and args[-1] is not Ellipsis:
            items = [type_schema(a, defs) for a in args]
            return {**schema, "prefixItems": items, "minItems": len(args), "maxItems": len(args)}
        if args and args[0] is not Any:
            schema["items"] = type_schema(args[0], defs)
        if annotation in (set, frozenset) or origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if annotation in _OBJECTS or origin in _OBJECTS:
        if args and args[0] not in (str, Any):
            raise _Unsupported(annotation)
        schema = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            schema["additionalProperties"] = type_schema(args[1], defs)
        return schema
    if inspect.isclass(annotation) and (
        issubclass(annotation, BaseModel) or dataclasses.is_dataclass(annotation)
    ):
        return _structured(annotation, defs)
    raise _Unsupported(annotation)


# -- tools ---------------------------------------------------------------------------------


def _tool_name(fn: Callable[..., object]) -> str:
    target = getattr(fn, "func", fn)  # functools.partial
    name = getattr(target, "__name__", None) or type(target).__name__
    return str(name)


def _jsonable_default(value: object) -> tuple[bool, object]:
    try:
        return True, to_jsonable_python(value)
    except ValueError:  # no JSON form (PydanticSerializationError): not shown to the model
        return False, None


@dataclass(frozen=True)
class ToolSpec:
    """A Python function as a tool: its declaration and how to call it."""

    fn: Callable[..., Any]
    name: str
    description: str
    parameters: dict[str, Any]
    wants_state: bool
    is_async: bool
    adapters: Mapping[str, TypeAdapter[Any] | None]

    @classmethod
    def from_function(cls, fn: Callable[..., object]) -> ToolSpec:
        """Declare `fn`; ToolSchemaError names the function and parameter at fault."""
        if not callable(fn):
            raise ToolSchemaError(f"tool {fn!r} is not callable")
        name = _tool_name(fn)
        if not _NAME.match(name):
            raise ToolSchemaError(
                f"tool {name!r}: a tool name may use only letters, digits, _ and - "
                "(at most 64 characters); rename the function"
            )
        target = getattr(fn, "func", fn)  # functools.partial
        if not inspect.isroutine(target) and not inspect.isclass(target):
            target = type(target).__call__  # a callable object
        try:
            signature = inspect.signature(fn)
            hints = typing.get_type_hints(target, include_extras=True)
        except (TypeError, ValueError) as exc:
            raise ToolSchemaError(f"tool {name!r}: cannot read its signature: {exc}") from None
        except NameError as exc:
            raise ToolSchemaError(
                f"tool {name!r}: cannot resolve its type hints ({exc}); the types a tool's "
                "annotations name must be importable from its module, not local to a function"
            ) from None
        summary, docs = parse_docstring(inspect.getdoc(fn))
        defs: dict[str, Any] = {}
        properties: dict[str, Any] = {}
        required: list[str] = []
        adapters: dict[str, TypeAdapter[Any] | None] = {}
        wants_state = False
        for param in signature.parameters.values():
            if param.name == STATE_PARAM:
                wants_state = True
                continue
            if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
                raise ToolSchemaError(
                    f"tool {name!r}, parameter {param.name!r}: *args, **kwargs and "
                    "positional-only parameters cannot be declared; name every parameter"
                )
            annotation = hints.get(param.name, param.annotation)
            try:
                schema = type_schema(annotation, defs)
                adapters[param.name] = None if schema == {} else TypeAdapter(annotation)
            except _Unsupported as exc:
                raise ToolSchemaError(
                    f"tool {name!r}, parameter {param.name!r}: annotation "
                    f"{_show(exc.annotation)} has no JSON schema; use {_SUPPORTED}"
                ) from None
            if param.name in docs and "description" not in schema:
                schema = {**schema, "description": docs[param.name]}
            if param.default is param.empty:
                required.append(param.name)
            else:
                ok, default = _jsonable_default(param.default)
                if ok:
                    schema = {**schema, "default": default}
            properties[param.name] = schema
        parameters: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            parameters["required"] = required
        if defs:
            parameters["$defs"] = defs
        call = getattr(fn, "__call__", None)  # noqa: B004 - objects with an async __call__
        return cls(
            fn=fn,
            name=name,
            description=summary,
            parameters=parameters,
            wants_state=wants_state,
            is_async=inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call),
            adapters=adapters,
        )

    def declaration(self) -> dict[str, object]:
        """``{"name", "description", "parameters"}`` (the shape ADK and Gemini use)."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def bind(self, args: Mapping[str, object]) -> dict[str, object]:
        """Keyword arguments for the call, checked and converted; ToolArgumentError if not."""
        unknown = sorted(set(args) - set(self.adapters))
        if unknown:
            takes = ", ".join(self.adapters) or "no arguments"
            raise ToolArgumentError(
                f"unexpected argument(s) {', '.join(unknown)}; {self.name} takes {takes}"
            )
        missing = [n for n in self.parameters.get("required", ()) if n not in args]
        if missing:
            raise ToolArgumentError(f"missing required argument(s) {', '.join(missing)}")
        kwargs: dict[str, Any] = {}
        for key, value in args.items():
            adapter = self.adapters[key]
            try:
                kwargs[key] = value if adapter is None else adapter.validate_python(value)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in (key, *e['loc']))}: {e['msg']}"
                    for e in exc.errors()
                )
                raise ToolArgumentError(f"invalid argument {key!r}: {problems}") from None
        return kwargs


def _show(annotation: object) -> str:
    if inspect.isclass(annotation):
        return f"{annotation.__module__}.{annotation.__qualname__}".removeprefix("builtins.")
    return repr(annotation)
