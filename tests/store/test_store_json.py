"""Store JSON encoding: one orjson pass that yields exactly `CaseResult.to_dict()`."""

from __future__ import annotations

import json
import math
from dataclasses import fields

import pytest
from store_samples import error_result, every_step_result, row_result, weather_result

from assay.errors import StoreError
from assay.model.results import CaseResult, InvocationResult, MetricResult, Score, Status
from assay.store._json import canonical_bytes, case_result_document, dumps, loads


@pytest.mark.parametrize(
    "result",
    [weather_result(), row_result(3), error_result(), every_step_result()],
    ids=["tool_turns", "dataset_row", "error", "every_step_kind"],
)
def test_document_is_to_dict(result: CaseResult) -> None:
    encoded = dumps(case_result_document(result))
    assert loads(encoded) == result.to_dict()
    # Same JSON as the standard library would write for to_dict(), key order included.
    assert json.loads(encoded) == json.loads(json.dumps(result.to_dict()))
    assert list(loads(encoded)) == list(result.to_dict())


def test_dataclasses_encode_like_to_dict_too() -> None:
    # Other callers may hand any result dataclass to the JSON columns directly.
    result = weather_result()
    assert loads(dumps(result)) == result.to_dict()


def test_document_lists_every_field_of_the_result_classes() -> None:
    # A field added to a result class must be added to case_result_document too.
    doc = case_result_document(weather_result())
    metric = doc["metrics"]["response_match_score"]
    invocation = doc["invocations"][0]
    assert list(doc) == [f.name for f in fields(CaseResult)]
    assert list(metric) == [f.name for f in fields(MetricResult)]
    assert list(metric["per_invocation"][0]) == [f.name for f in fields(Score)]
    assert list(invocation) == [f.name for f in fields(InvocationResult)]


def test_turn_none_fields_are_left_out_but_dict_values_kept() -> None:
    doc = loads(dumps(case_result_document(every_step_result())))
    turn = doc["invocations"][0]["actual"]
    assert "latency_s" not in turn and "usage" not in turn
    assert turn["steps"][0] == {
        "tool_call": {"name": "lights", "args": {"on": True, "level": None}}
    }
    assert turn["user_input"]["variables"] == {"room": "kitchen", "unset": None}
    assert turn["rubrics"][0]["type"] == "TOOL_USE_QUALITY"
    # Dataclass fields stay, even when None (to_dict keeps them).
    assert doc["error"] is None and doc["eval_set_id"] is None


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


def test_non_string_keys_are_written_as_strings() -> None:
    assert loads(dumps({1: "a", 2.5: "b"})) == {"1": "a", "2.5": "b"}


def test_unserialisable_value_is_a_store_error() -> None:
    result = CaseResult("c", Status.PASSED, metrics={})
    result.metrics["m"] = MetricResult("m", 1.0, None, None, details={"obj": object()})
    with pytest.raises(StoreError, match="not JSON serial"):
        dumps(result)


def test_canonical_bytes_ignore_key_order() -> None:
    a = canonical_bytes({"temperature": 0.0, "top_p": 1, "nested": {"b": 1, "a": [Score(1.0)]}})
    b = canonical_bytes({"nested": {"a": [Score(1.0)], "b": 1}, "top_p": 1, "temperature": 0.0})
    assert a == b
    assert a != canonical_bytes({"temperature": 0.1, "top_p": 1})
