"""Pydantic models as plain dicts, `model_dump(exclude_none=True)`-shaped, fast.

The turns inside case results are most of what the store encodes: a Vertex row holds
two turns of about seven models each (turn, user input, steps, tool calls). pydantic's
own `model_dump` is the slowest way to encode them, a generic "`__dict__` minus None"
helper called back by orjson for every model much faster, and an encoder generated per
class (the fields unrolled, nested model fields encoded directly, without going back
through orjson) faster still (the figures: bench/README.md).

`model_encoder(cls)` generates that function from `cls.model_fields` the first time a
class is met, so it always follows the model's current fields. For each field, in
declaration order: skip it when None, encode it with the field class's encoder when
its annotation is a model (or an optional model, or a list of models), else keep the
value as it is (orjson writes it; a model found inside such a value, e.g. in a
`dict[str, Any]`, comes back through the JSON default and this module again).

Only "plain" models get a generated encoder: no field or model serialisers, computed
or excluded fields, or extra fields. Any other model is dumped by pydantic itself
(`model_dump(mode="json", exclude_none=True)`), which honours all of those.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

Encoder = Callable[[Any], Any]

_encoders: dict[type, Encoder] = {}


def encode_model(value: object) -> Any:
    """`value` (a pydantic model) as plain values; TypeError for anything else."""
    encode = _encoders.get(type(value))
    if encode is None:
        encode = model_encoder(type(value))
    return encode(value)


def model_encoder(cls: type) -> Encoder:
    """The encoder of model class `cls` (generated once, then cached)."""
    encode = _encoders.get(cls)
    if encode is not None:
        return encode
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        raise TypeError(f"{cls.__name__} is not JSON serialisable")
    if not _is_plain(cls):
        encode = _encoders[cls] = _pydantic_dump
        return encode
    # Placeholder first, so a model that (indirectly) contains itself refers back to
    # the lookup instead of recursing forever.
    _encoders[cls] = _late(cls)
    try:
        encode = _generate(cls)
    except BaseException:
        del _encoders[cls]
        raise
    _encoders[cls] = encode
    return encode


def _pydantic_dump(value: Any) -> Any:
    return value.model_dump(mode="json", exclude_none=True)


def _is_plain(cls: type[BaseModel]) -> bool:
    decorators = cls.__pydantic_decorators__
    return (
        not decorators.field_serializers
        and not decorators.model_serializers
        and not cls.model_computed_fields
        and cls.model_config.get("extra") != "allow"
        and not any(field.exclude for field in cls.model_fields.values())
    )


def _nested(annotation: object) -> tuple[type[BaseModel] | None, bool]:
    """(model class, is a list of it) for a field annotation; (None, False) otherwise."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _nested(members[0]) if len(members) == 1 else (None, False)
    if origin is list:
        args = typing.get_args(annotation)
        item, many = _nested(args[0]) if len(args) == 1 else (None, False)
        return (item, True) if item is not None and not many else (None, False)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    return None, False


def _generate(cls: type[BaseModel]) -> Encoder:
    namespace: dict[str, Any] = {}
    lines = ["def encode(value):", "    d = value.__dict__", "    out = {}"]
    for i, (name, field) in enumerate(cls.model_fields.items()):
        nested, many = _nested(field.annotation)
        if nested is None:
            expr = "v"
        else:
            namespace[f"encode_{i}"] = model_encoder(nested)
            # An empty list is written as it is: a comprehension is a function call.
            expr = f"[encode_{i}(x) for x in v] if v else v" if many else f"encode_{i}(v)"
        # Field names go in as string literals (repr), never as code.
        lines += [
            f"    v = d[{name!r}]",
            "    if v is not None:",
            f"        out[{name!r}] = {expr}",
        ]
    lines.append("    return out")
    exec("\n".join(lines), namespace)
    encode: Encoder = namespace["encode"]
    encode.__qualname__ = f"encode_{cls.__name__}"
    return encode


def _late(cls: type) -> Encoder:
    def encode(value: object) -> Any:
        return _encoders[cls](value)

    return encode
