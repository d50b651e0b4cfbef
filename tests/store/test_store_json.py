"""Store JSON encoding: orjson with pydantic models written as model_dump would give them."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel, ConfigDict, Field, computed_field, field_serializer
from store_samples import every_step_result, weather_turn

from assay.core import ToolCall, ToolResponse, Turn
from assay.core.results import CaseResult, MetricResult, Score, Status
from assay.errors import StoreError
from assay.store._json import canonical_bytes, dumps, loads
from assay.store._models import model_encoder


def _model_dump(model: BaseModel) -> Any:
    # What CaseResult.to_dict() keeps of a turn, through JSON (enums as strings).
    return json.loads(json.dumps(model.model_dump(exclude_none=True)))


@pytest.mark.parametrize(
    "turn",
    [
        weather_turn(0, "Take an umbrella."),
        every_step_result().invocations[0].actual,
        Turn(),
    ],
    ids=["tool_turn", "every_step_kind", "empty"],
)
def test_turns_encode_like_model_dump(turn: Turn) -> None:
    encoded = dumps(turn)
    assert loads(encoded) == _model_dump(turn)
    # Field order too, at every level.
    assert json.dumps(loads(encoded)) == json.dumps(_model_dump(turn))


def test_none_fields_are_left_out_but_none_values_in_dicts_kept() -> None:
    turn = loads(dumps(every_step_result().invocations[0].actual))
    assert "latency_s" not in turn and "usage" not in turn
    expected_call = {"name": "lights", "args": {"on": True, "level": None}}
    assert turn["steps"][0] == {"tool_call": expected_call}
    assert turn["user_input"]["variables"] == {"room": "kitchen", "unset": None}
    assert turn["rubrics"][0]["type"] == "TOOL_USE_QUALITY"


def test_models_inside_free_form_values_are_encoded_too() -> None:
    # A model where the field's type says Any (a tool response payload) comes back
    # through orjson's default and is encoded exactly like a typed one.
    response = ToolResponse(name="lookup", response={"call": ToolCall(name="search")})
    assert loads(dumps(response)) == {
        "name": "lookup",
        "response": {"call": {"name": "search", "args": {}}},
    }


class _Node(BaseModel):
    name: str
    note: str | None = None
    children: list[_Node] = Field(default_factory=list)
    parent: _Node | None = None


def test_a_model_that_contains_itself() -> None:
    tree = _Node(name="root", children=[_Node(name="a", children=[_Node(name="b", note="x")])])
    assert loads(dumps(tree)) == _model_dump(tree)
    assert loads(dumps(_Node(name="c", parent=tree))) == _model_dump(_Node(name="c", parent=tree))


class _Custom(BaseModel):
    model_config = ConfigDict(extra="allow")
    secret: str
    empty: str | None = None

    @field_serializer("secret")
    def _hide(self, value: str) -> str:
        return "***"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def size(self) -> int:
        return len(self.secret)


def test_models_with_custom_serialisation_are_dumped_by_pydantic() -> None:
    value = _Custom(secret="hunter2", colour="red")  # type: ignore[call-arg]
    assert loads(dumps(value)) == {"secret": "***", "colour": "red", "size": 7}
    assert model_encoder(_Custom)(value) == value.model_dump(mode="json", exclude_none=True)


def test_result_dataclasses_encode_like_to_dict() -> None:
    # The JSON columns take result dataclasses directly too (orjson writes them).
    result = CaseResult(
        "c",
        Status.PASSED,
        metrics={"m": MetricResult("m", 1.0, 0.5, Status.PASSED, per_invocation=[Score(1.0)])},
    )
    assert loads(dumps(result)) == result.to_dict()


def test_nan_and_infinity_become_null() -> None:
    # PostgreSQL's jsonb rejects NaN; a std of one sample is NaN in summaries.
    result = CaseResult(
        "c",
        Status.NOT_EVALUATED,
        metrics={"m": MetricResult("m", math.nan, 0.5, Status.NOT_EVALUATED)},
    )
    doc = loads(dumps({"summary": {"m/std": math.nan, "m/max": math.inf}, "r": result}))
    assert doc["summary"] == {"m/std": None, "m/max": None}
    assert doc["r"]["metrics"]["m"]["score"] is None


def test_non_string_keys_and_numpy_values_are_written() -> None:
    # Both take orjson's slower options, used only when the first attempt fails.
    assert loads(dumps({1: "a", 2.5: "b"})) == {"1": "a", "2.5": "b"}
    value = {"mean": np.float64(0.25), "counts": np.array([1, 2, 3])}
    assert loads(dumps(value)) == {"mean": 0.25, "counts": [1, 2, 3]}


def test_unserialisable_value_is_a_store_error() -> None:
    result = CaseResult("c", Status.PASSED, metrics={})
    result.metrics["m"] = MetricResult("m", 1.0, None, None, details={"obj": object()})
    with pytest.raises(StoreError, match=r"cannot store value as JSON: .*not JSON serial.*object"):
        dumps(result)


def test_canonical_bytes_ignore_key_order() -> None:
    a = canonical_bytes({"temperature": 0.0, "top_p": 1, "nested": {"b": 1, "a": [Score(1.0)]}})
    b = canonical_bytes({"nested": {"a": [Score(1.0)], "b": 1}, "top_p": 1, "temperature": 0.0})
    assert a == b
    assert a != canonical_bytes({"temperature": 0.1, "top_p": 1})
