"""`is_json` and `json_schema` on the final response."""

from __future__ import annotations

import pytest

from assay.core.cases import EvalCase, Turn
from assay.core.results import Score
from assay.errors import ConfigError
from assay.metrics.registry import build_metric

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
    "required": ["city", "temp"],
}


def _score(name: str, criterion: dict[str, object], response: str | None) -> Score:
    metric = build_metric(name, criterion)
    result = metric.score_case(EvalCase(id="c"), [Turn(final_response=response)], [None])
    return result.per_invocation[0]


def test_is_json() -> None:
    assert _score("is_json", {}, '{"a": [1, 2]}').value == 1.0
    assert _score("is_json", {}, "[1, 2]").explanation == "the response is JSON (list)"
    bad = _score("is_json", {}, "{'a': 1}")
    assert bad.value == 0.0
    assert bad.explanation is not None
    assert bad.explanation.startswith("the response is not JSON: Expecting property name")
    assert _score("is_json", {}, "").explanation == "the response is empty, not JSON"


def test_code_fences_only_when_allowed() -> None:
    fenced = '```json\n{"a": 1}\n```'
    assert _score("is_json", {}, fenced).value == 0.0
    assert _score("is_json", {"allow_code_fence": True}, fenced).value == 1.0


def test_json_schema_reports_the_violation_with_its_path() -> None:
    assert _score("json_schema", {"schema": SCHEMA}, '{"city": "Oslo", "temp": -3.5}').value == 1.0
    wrong = _score("json_schema", {"schema": SCHEMA}, '{"city": "Oslo", "temp": "cold"}')
    assert wrong.value == 0.0
    assert wrong.explanation == (
        "the response violates the schema at $.temp: 'cold' is not of type 'number'"
    )
    missing = _score("json_schema", {"schema": SCHEMA}, '{"city": "Oslo"}')
    assert missing.explanation == (
        "the response violates the schema at $: 'temp' is a required property"
    )
    assert _score("json_schema", {"schema": SCHEMA}, "Oslo, -3.5").value == 0.0


def test_json_schema_unicode_values() -> None:
    assert _score("json_schema", {"schema": SCHEMA}, '{"city": "東京", "temp": 30}').value == 1.0


def test_the_schema_draft_is_honoured() -> None:
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}
    assert _score("json_schema", {"schema": draft4}, "3").value == 1.0
    assert _score("json_schema", {"schema": draft4}, "3.5").value == 0.0


@pytest.mark.parametrize(
    ("criterion", "fragment"),
    [
        ({"schema": {"type": "nope"}}, "schema: Value error, invalid JSON schema at $.type"),
        ({"schema": {"required": "city"}}, "invalid JSON schema at $.required"),
        ({}, "schema: Field required"),
    ],
)
def test_an_invalid_schema_is_a_config_error(criterion: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        build_metric("json_schema", criterion)
    assert "bad options for metric 'json_schema'" in str(err.value)
    assert fragment in str(err.value)
