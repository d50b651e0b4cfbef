"""proto3 JSON in and out of the message classes Google's client libraries ship.

Requests are checked against the message descriptors first, so a bad field gets the
message Google's front end gives (`Unknown name "x" at 'evaluation': Cannot find
field.`, `Invalid value at 'golden_run_method' (...), 9`) with the field path, and only
then converted by protobuf's own JSON parser, which applies every proto3 JSON rule
(integer or string enums, camelCase or original names, int64 as strings, well-known
types). Responses are rendered through the same classes, so the client never meets a
field or enum value it does not know.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from assay.service.errors import InvalidArgument

M = TypeVar("M", bound=Message)

_WELL_KNOWN = "google.protobuf."
_INTS = {
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_FIXED32,
    FieldDescriptor.TYPE_FIXED64,
    FieldDescriptor.TYPE_SFIXED32,
    FieldDescriptor.TYPE_SFIXED64,
}
_FLOATS = {FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE}
_TYPE_NAMES = {
    FieldDescriptor.TYPE_STRING: "TYPE_STRING",
    FieldDescriptor.TYPE_BOOL: "TYPE_BOOL",
    FieldDescriptor.TYPE_BYTES: "TYPE_BYTES",
    FieldDescriptor.TYPE_INT32: "TYPE_INT32",
    FieldDescriptor.TYPE_INT64: "TYPE_INT64",
    FieldDescriptor.TYPE_DOUBLE: "TYPE_DOUBLE",
    FieldDescriptor.TYPE_FLOAT: "TYPE_FLOAT",
}


def invalid_value(path: str, kind: str, value: object) -> InvalidArgument:
    message = f"Invalid value at '{path}' ({kind}), {json.dumps(value)}"
    return InvalidArgument(message, [_violation(path, message)])


def unknown_name(path: str, name: str) -> InvalidArgument:
    where = f" at '{path}'" if path else ""
    message = f'Invalid JSON payload received. Unknown name "{name}"{where}: Cannot find field.'
    return InvalidArgument(message, [_violation(path or name, message)])


def _violation(field: str, description: str) -> dict[str, Any]:
    from assay.service.errors import field_violation

    return field_violation(field, description)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# The well-known types whose JSON holds any value; their numbers are doubles.
_ANY_JSON = frozenset(
    {"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"}
)
# Every integer of this size or less is exactly a double.
_EXACT_IN_DOUBLE = 2**53


def check(descriptor: Any, value: object, path: str = "") -> None:
    """Raise INVALID_ARGUMENT, Google's way, if `value` is not JSON of `descriptor`."""
    if descriptor.full_name in _ANY_JSON:
        _check_struct_numbers(value, path or descriptor.name)
        return
    if descriptor.full_name.startswith(_WELL_KNOWN):
        return  # Timestamp, FieldMask, ...: protobuf's parser knows their rules
    if not isinstance(value, Mapping):
        raise invalid_value(
            path or descriptor.name, f"type.googleapis.com/{descriptor.full_name}", value
        )
    by_json = {f.json_name: f for f in descriptor.fields}
    for key, item in value.items():
        field = by_json.get(key) or descriptor.fields_by_name.get(key)
        if field is None:
            raise unknown_name(path, key)
        if item is None:
            continue
        where = _join(path, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            if not isinstance(item, Mapping):
                raise invalid_value(where, "map", item)
            value_field = field.message_type.fields_by_name["value"]
            for k, v in item.items():
                _check_single(value_field, v, f"{where}[{json.dumps(k)}]")
        elif field.is_repeated:
            if not isinstance(item, list):
                raise invalid_value(where, "list", item)
            for i, element in enumerate(item):
                _check_single(field, element, f"{where}[{i}]")
        else:
            _check_single(field, item, where)


def _check_struct_numbers(value: object, path: str) -> None:
    """Refuse an integer a Struct would silently turn into a different double.

    A Struct's numbers are doubles: 123456789012345678901234567890 would be stored as
    1.2345678901234568e+29. Such a value must be sent as a string (as proto3 JSON sends
    int64), so it is refused instead of changed.
    """
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, f"{where}.{k}") for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
        elif (
            isinstance(item, int)
            and not isinstance(item, bool)
            and abs(item) > _EXACT_IN_DOUBLE
            and (abs(item) > 2**1023 or float(item) != item)
        ):
            message = (
                f"Invalid value at '{where}' (TYPE_DOUBLE), {item}: a Struct number is a "
                "double and cannot hold this integer exactly; send it as a string"
            )
            raise InvalidArgument(message, [_violation(where, message)])


def _check_single(field: Any, value: object, path: str) -> None:
    if field.message_type is not None:
        check(field.message_type, value, path)
    elif field.enum_type is not None:
        _check_enum(field.enum_type, value, path)
    else:
        _check_scalar(field, value, path)


def _check_enum(enum: Any, value: object, path: str) -> None:
    if enum.full_name == "google.protobuf.NullValue":
        return
    ok = (isinstance(value, str) and value in enum.values_by_name) or (
        isinstance(value, int) and not isinstance(value, bool) and value in enum.values_by_number
    )
    if not ok:
        raise invalid_value(path, f"type.googleapis.com/{enum.full_name}", value)


def _check_scalar(field: Any, value: object, path: str) -> None:
    kind = field.type
    if kind in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES):
        ok = isinstance(value, str)
    elif kind == FieldDescriptor.TYPE_BOOL:
        ok = isinstance(value, bool)
    elif kind in _INTS:
        ok = _is_int(value)
    elif kind in _FLOATS:
        ok = (isinstance(value, int | float) and not isinstance(value, bool)) or (
            isinstance(value, str) and _is_float(value)
        )
    else:
        ok = True
    if not ok:
        raise invalid_value(path, _TYPE_NAMES.get(kind, "scalar"), value)


def _is_int(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return math.isfinite(value) and value.is_integer()
    if isinstance(value, str):
        try:
            return float(value).is_integer()
        except ValueError:
            return False
    return False


def _is_float(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def parse(cls: type[M], value: Any, path: str = "") -> M:
    """`value` (decoded JSON) as a `cls` message; INVALID_ARGUMENT naming the field."""
    check(cls.DESCRIPTOR, value, path)
    message = cls()
    try:
        json_format.ParseDict(value, message)
    except json_format.ParseError as exc:
        detail = str(exc).split("\n", 1)[0]
        raise InvalidArgument(f"Invalid JSON payload received. {detail}") from None
    return message


def merge(message: Message, value: object, path: str) -> None:
    """Parse `value` into the existing `message` (a request's body field)."""
    message.CopyFrom(parse(type(message), value, path))


def to_json(message: Message) -> dict[str, Any]:
    """The message as proto3 JSON: camelCase names, enum names, defaults left out.

    A message from a gRPC client may hold what JSON cannot (NaN or an infinity in a
    Struct's numbers): INVALID_ARGUMENT naming the field, as REST refuses the same.
    """
    try:
        out: dict[str, Any] = json_format.MessageToDict(message)
    except json_format.SerializeToJsonError as exc:
        found = _UNSERIALIZABLE.search(str(exc))
        field = found[1] if found else message.DESCRIPTOR.name
        raise InvalidArgument.field(
            field, f"{exc} (JSON, and so assay, holds finite numbers only)"
        ) from None
    return out


_UNSERIALIZABLE = re.compile(r"Failed to serialize (\w+) field")


def from_json(cls: type[M], value: Mapping[str, object]) -> M:
    """A message of `cls` from assay's own JSON, dropping what the message lacks.

    Used on the way out: what the client's classes cannot hold would be dropped by the
    client anyway, and rendering through them keeps every value one it can parse.
    """
    message = cls()
    json_format.ParseDict(dict(value), message, ignore_unknown_fields=True)
    return message


def render(message: Message, *, int_enums: bool = False) -> bytes:
    """The message's JSON bytes for an HTTP answer."""
    text = json_format.MessageToJson(message, use_integers_for_enums=int_enums, indent=None)
    return text.encode()


def enum_name(enum: Any, value: int, field: str) -> str:
    """The name of `value` in the client's `enum` (a proto-plus enum class).

    gRPC hands over enum numbers the message does not know as they are (proto3 keeps
    them); Google's front end refuses those as REST's parser does.
    """
    try:
        name: str = enum(value).name
    except ValueError:
        raise invalid_value(field, f"type.googleapis.com/{enum.__qualname__}", value) from None
    return name
