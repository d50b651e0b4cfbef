"""Tool declarations from Python functions: schemas, docstrings, argument checking."""

from __future__ import annotations

import enum
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field

from assay.agents._tool_schema import (
    ToolArgumentError,
    ToolSchemaError,
    ToolSpec,
    parse_docstring,
)


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Address(BaseModel):
    street: str
    zip_code: int | None = None


@dataclass
class Window:
    start: int
    end: int


class Line(BaseModel):
    sku: str


class Order(BaseModel):
    lines: list[Line]
    backup: Line | None = None


class Opaque:
    pass


def forecast(
    city: str,
    days: int = 3,
    unit: Unit = Unit.CELSIUS,
    tags: list[str] | None = None,
    mode: Literal["brief", "full"] = "brief",
    ratio: float = 0.5,
    metric: bool = False,
    extra: dict[str, int] | None = None,
    state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Forecast the weather for a city.

    Uses the regional service.

    Args:
        city (str): The city name,
            as people write it.
        days: How many days ahead.
        unit: Temperature unit.

    Returns:
        The forecast.
    """
    return {"city": city, "days": days, "unit": unit, "tags": tags, "mode": mode}


def test_google_docstring_and_types_make_the_schema() -> None:
    spec = ToolSpec.from_function(forecast)
    assert spec.name == "forecast"
    assert spec.description == "Forecast the weather for a city.\n\nUses the regional service."
    assert spec.wants_state and not spec.is_async
    props = spec.parameters["properties"]
    assert "state" not in props
    assert spec.parameters["required"] == ["city"]
    assert props["city"] == {"type": "string", "description": "The city name, as people write it."}
    assert props["days"] == {"type": "integer", "description": "How many days ahead.", "default": 3}
    assert props["unit"] == {
        "type": "string",
        "enum": ["celsius", "fahrenheit"],
        "description": "Temperature unit.",
        "default": "celsius",
    }
    assert props["tags"] == {
        "type": ["array", "null"],
        "items": {"type": "string"},
        "default": None,
    }
    assert props["mode"] == {"type": "string", "enum": ["brief", "full"], "default": "brief"}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["metric"] == {"type": "boolean", "default": False}
    assert props["extra"] == {
        "type": ["object", "null"],
        "additionalProperties": {"type": "integer"},
        "default": None,
    }
    assert spec.declaration() == {
        "name": "forecast",
        "description": spec.description,
        "parameters": spec.parameters,
    }


def test_numpy_and_rest_docstrings() -> None:
    numpy = """Book a table.

    Parameters
    ----------
    people : int
        How many guests.
        Children count too.
    when : str
        ISO time.

    Returns
    -------
    str
        A booking id.
    """
    assert parse_docstring(numpy) == (
        "Book a table.",
        {"people": "How many guests. Children count too.", "when": "ISO time."},
    )
    rest = """Book a table.

    :param people: How many
        guests.
    :param str when: ISO time.
    :returns: a booking id
    :raises ValueError: when full
    """
    assert parse_docstring(rest) == (
        "Book a table.",
        {"people": "How many guests.", "when": "ISO time."},
    )
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("Just a line.") == ("Just a line.", {})


def test_models_dataclasses_annotated_optional_and_unions() -> None:
    def ship(
        to: Address,
        window: Window,
        note: Annotated[str, "Shown on the label"],
        speed: Annotated[int, Field(description="1 to 3")] = 1,
        fallback: Optional[Address] = None,  # noqa: UP045 - the typing spelling on purpose
        ref: int | str = 0,
        items: Sequence[tuple[str, int]] = (),
        pair: tuple[int, int] = (0, 0),
        anything: Any = None,
        labels: set[str] | None = None,
    ) -> str:
        return "ok"

    spec = ToolSpec.from_function(ship)
    props = spec.parameters["properties"]
    defs = spec.parameters.get("$defs", {})
    assert props["to"]["properties"]["street"]["type"] == "string"
    assert props["to"]["required"] == ["street"]
    assert props["window"]["required"] == ["start", "end"]
    assert props["note"] == {"type": "string", "description": "Shown on the label"}
    assert props["speed"] == {"type": "integer", "description": "1 to 3", "default": 1}
    assert props["fallback"]["type"] == ["object", "null"] or "anyOf" in props["fallback"]
    assert props["ref"] == {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 0}
    assert props["items"]["items"]["prefixItems"] == [{"type": "string"}, {"type": "integer"}]
    assert props["pair"]["minItems"] == props["pair"]["maxItems"] == 2
    assert props["anything"] == {"default": None}
    assert props["labels"]["uniqueItems"] is True
    assert isinstance(defs, dict)
    # arguments are converted to what the function expects
    kwargs = spec.bind(
        {"to": {"street": "Main St"}, "window": {"start": 1, "end": 2}, "note": "n", "ref": "7"}
    )
    assert kwargs["to"] == Address(street="Main St")
    assert kwargs["window"] == Window(1, 2)
    assert kwargs["ref"] in (7, "7")


def test_nested_models_keep_their_defs_at_the_root() -> None:
    def place(order: Order) -> str:
        return "ok"

    params = ToolSpec.from_function(place).parameters
    assert "Line" in params["$defs"]
    assert params["properties"]["order"]["properties"]["lines"]["items"] == {"$ref": "#/$defs/Line"}


def test_bind_checks_and_converts_arguments() -> None:
    spec = ToolSpec.from_function(forecast)
    assert spec.bind({"city": "Oslo", "days": "4", "unit": "fahrenheit"}) == {
        "city": "Oslo",
        "days": 4,
        "unit": Unit.FAHRENHEIT,
    }
    with pytest.raises(ToolArgumentError, match=r"missing required argument.*city"):
        spec.bind({"days": 2})
    with pytest.raises(ToolArgumentError, match=r"unexpected argument.*planet.*takes city, days"):
        spec.bind({"city": "x", "planet": "mars"})
    with pytest.raises(ToolArgumentError, match="invalid argument 'days'"):
        spec.bind({"city": "x", "days": "soon"})
    with pytest.raises(ToolArgumentError, match="invalid argument 'mode'"):
        spec.bind({"city": "x", "mode": "verbose"})


def test_unsupported_annotations_name_the_function_and_parameter() -> None:
    def bad(when: Opaque) -> None:
        return None

    with pytest.raises(ToolSchemaError, match=r"tool 'bad', parameter 'when'.*Opaque.*use str"):
        ToolSpec.from_function(bad)

    def int_keys(table: dict[int, str]) -> None:
        return None

    with pytest.raises(ToolSchemaError, match="parameter 'table'"):
        ToolSpec.from_function(int_keys)

    def star(*items: str) -> None:
        return None

    with pytest.raises(ToolSchemaError, match=r"parameter 'items'.*\*args"):
        ToolSpec.from_function(star)

    class Local:
        pass

    def hidden(value: Local) -> None:
        return None

    with pytest.raises(ToolSchemaError, match=r"tool 'hidden'.*name 'Local' is not defined"):
        ToolSpec.from_function(hidden)

    with pytest.raises(ToolSchemaError, match="not callable"):
        ToolSpec.from_function(3)  # type: ignore[arg-type]


def test_names_async_tools_partials_and_callable_objects() -> None:
    async def lookup(key: str) -> str:
        return key

    assert ToolSpec.from_function(lookup).is_async

    def scaled(value: int, factor: int) -> int:
        return value * factor

    partial = ToolSpec.from_function(functools.partial(scaled, factor=2))
    assert partial.name == "scaled"

    class Counter:
        async def __call__(self, step: int = 1) -> int:
            return step

    spec = ToolSpec.from_function(Counter())
    assert spec.name == "Counter" and spec.is_async
    assert spec.parameters == {
        "type": "object",
        "properties": {"step": {"type": "integer", "default": 1}},
    }

    weird = lambda x: x  # noqa: E731 - a lambda's name is not a valid tool name
    with pytest.raises(ToolSchemaError, match="letters, digits"):
        ToolSpec.from_function(weird)


def test_a_default_with_no_json_form_is_left_out_of_the_schema() -> None:
    marker = object()  # pydantic cannot serialize it: the model is not shown a default

    def pick(mode: str = "brief", sentinel: Any = marker) -> str:
        return mode

    props = ToolSpec.from_function(pick).parameters["properties"]
    assert props["mode"]["default"] == "brief"
    assert "default" not in props["sentinel"]
