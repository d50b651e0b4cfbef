"""Vertex tool-call metrics: the string form, the four definitions, declared schemas."""

from __future__ import annotations

import json
from typing import Any

import pytest

from assay.core.cases import EvalCase, Expectation, Step, ToolCall, Turn
from assay.core.results import Status
from assay.metrics.registry import build_metric
from assay.metrics.tool_calls import (
    ToolCallFormatError,
    parameter_score,
    parse_tool_message,
    tool_name_score,
    values_match,
)
from assay.metrics.vertex_tools import declared_tools, tool_call_valid_score


def _msg(*calls: tuple[str, dict[str, Any]], content: str = "") -> str:
    return json.dumps(
        {"content": content, "tool_calls": [{"name": n, "arguments": a} for n, a in calls]}
    )


def test_parse_the_vertex_string_form() -> None:
    parsed = parse_tool_message(_msg(("location_to_lat_long", {"location": "London"})))
    assert parsed.content == ""
    assert parsed.tool_calls == [ToolCall(name="location_to_lat_long", args={"location": "London"})]
    # Arguments as a JSON string (OpenAI style) and tool_calls serialised again.
    twice = json.dumps(
        {"content": "hi", "tool_calls": json.dumps([{"name": "f", "arguments": '{"a": 1}'}])}
    )
    assert parse_tool_message(twice).tool_calls == [ToolCall(name="f", args={"a": 1})]
    assert parse_tool_message('{"content": "just text"}').tool_calls == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "not JSON"),
        ("[1]", "expected an object"),
        ('{"tool_calls": {}}', "tool_calls must be a list"),
        ('{"tool_calls": [{"arguments": {}}]}', "tool_calls[0] has no name"),
        ('{"tool_calls": [{"name": "f", "arguments": [1]}]}', "tool_calls[0].arguments must be"),
        (
            '{"tool_calls": [{"name": "f", "arguments": "{bad"}]}',
            "tool_calls[0].arguments is not JSON",
        ),
    ],
)
def test_malformed_messages_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(ToolCallFormatError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_tool_message(text)


A = ToolCall(name="get_weather", args={"city": "London", "unit": "C"})


def test_name_match() -> None:
    assert tool_name_score([A], [A]).score == 1.0
    assert tool_name_score([], []).score == 1.0
    assert tool_name_score([ToolCall(name="other")], [A]).score == 0.0
    assert tool_name_score([A, A], [A]).score == 0.0  # an extra call is not the reference
    assert tool_name_score([A], [A, A]).score == 0.0


def test_parameter_key_match_is_shared_names_over_the_union() -> None:
    same_keys = ToolCall(name="get_weather", args={"city": "Paris", "unit": "F"})
    assert parameter_score([same_keys], [A], values=False).score == 1.0
    extra = ToolCall(name="get_weather", args={"city": "London", "unit": "C", "days": 3})
    verdict = parameter_score([extra], [A], values=False)
    assert verdict.score == pytest.approx(2 / 3)
    assert verdict.explanation == "call 1 (get_weather): unexpected days"
    missing = ToolCall(name="get_weather", args={"city": "London"})
    assert parameter_score([missing], [A], values=False).score == 0.5
    wrong_tool = ToolCall(name="get_time", args={"city": "London", "unit": "C"})
    assert parameter_score([wrong_tool], [A], values=False).score == 0.0
    # A missing second call halves the score; no calls on either side is a match.
    assert parameter_score([A], [A, A], values=False).score == 0.5
    assert parameter_score([], [], values=False).score == 1.0
    no_args = ToolCall(name="ping")
    assert parameter_score([no_args], [no_args], values=False).score == 1.0


def test_kv_match_lenient_by_default_strict_on_request() -> None:
    loose = ToolCall(name="get_weather", args={"city": " london", "unit": "C"})
    assert parameter_score([loose], [A], values=True).score == 1.0
    strict = parameter_score([loose], [A], values=True, strict=True)
    assert strict.score == 0.5
    assert strict.explanation == 'call 1 (get_weather): city=" london" (reference "London")'
    assert values_match(23, "23", strict=False) and not values_match(23, "23", strict=True)
    assert values_match(23.0, 23, strict=True)
    assert not values_match(True, 1, strict=True)
    assert values_match({"a": [1, "X"]}, {"a": [1, "x"]}, strict=False)


def _case(**kw: Any) -> EvalCase:
    return EvalCase(id="c", **kw)


def _result(name: str, criterion: Any, actual: Turn, expected: Turn | None, case: EvalCase):  # type: ignore[no-untyped-def]
    return build_metric(name, criterion).score_case(case, [actual], [expected])


def _turn(*calls: ToolCall) -> Turn:
    return Turn(steps=[Step(tool_call=c) for c in calls], final_response="ok")


def test_metrics_on_turns_with_reference_turns() -> None:
    actual = _turn(ToolCall(name="get_weather", args={"city": "london", "unit": "C"}))
    ref = _turn(A)
    case = _case(reference=[ref])
    assert _result("tool_name_match", None, actual, ref, case).score == 1.0
    assert _result("tool_parameter_key_match", None, actual, ref, case).score == 1.0
    assert _result("tool_parameter_kv_match", None, actual, ref, case).score == 1.0
    strict = _result("tool_parameter_kv_match", {"useStrictStringMatch": True}, actual, ref, case)
    assert strict.score == 0.5 and strict.status == Status.FAILED
    # CES tool-call expectations on the reference turn are the reference calls.
    ces = Turn(expectations=[Expectation(tool_call=A)])
    assert _result("tool_name_match", None, actual, ces, case).score == 1.0
    missing = _result("tool_name_match", None, actual, None, _case())
    assert missing.status == Status.NOT_EVALUATED
    assert missing.explanation == "no reference turn at this index to compare tool calls with"


APP_DETAILS = {
    "agent_details": {
        "weather_agent": {
            "name": "weather_agent",
            "instructions": "",
            "tool_declarations": [
                {
                    "function_declarations": [
                        {
                            "name": "get_weather",
                            "parameters": {
                                "type": "OBJECT",
                                "properties": {
                                    "city": {"type": "STRING"},
                                    "days": {"type": "INTEGER", "nullable": True},
                                },
                                "required": ["city"],
                            },
                        },
                        {"name": "google_search", "description": "built in"},
                    ]
                }
            ],
        }
    }
}


def test_tool_call_valid_without_declarations_checks_the_shape() -> None:
    assert tool_call_valid_score([A], None).score == 1.0
    none = tool_call_valid_score([], None)
    assert (none.score, none.explanation) == (0.0, "the prediction has no tool call")


def test_tool_call_valid_checks_declared_schemas_from_app_details() -> None:
    case = _case(metadata={"app_details": APP_DETAILS})
    declared = declared_tools(case, 0)
    assert declared is not None and set(declared) == {"get_weather", "google_search"}

    def valid(*calls: ToolCall) -> tuple[float | None, str | None]:
        result = _result("tool_call_valid", None, _turn(*calls), None, case)
        return result.score, result.per_invocation[0].explanation

    assert valid(ToolCall(name="get_weather", args={"city": "Oslo", "days": None}))[0] == 1.0
    assert valid(ToolCall(name="google_search", args={"q": "x"}))[0] == 1.0
    assert valid(ToolCall(name="get_weather", args={"days": 2})) == (
        0.0,
        "get_weather arguments are invalid at $: 'city' is a required property",
    )
    assert valid(ToolCall(name="get_weather", args={"city": "Oslo", "days": "two"})) == (
        0.0,
        "get_weather arguments are invalid at $.days: 'two' is not of type 'integer', 'null'",
    )
    assert valid(ToolCall(name="launch", args={})) == (
        0.0,
        "launch is not a declared tool (declared: get_weather, google_search)",
    )
    no_call = _result("tool_call_valid", None, Turn(final_response="hi"), None, case)
    assert no_call.score == 0.0 and no_call.status == Status.FAILED


def test_tool_call_valid_reads_per_invocation_adk_app_details() -> None:
    case = _case(metadata={"adk_unmapped": {"conversation": {"0": {"app_details": APP_DETAILS}}}})
    assert declared_tools(case, 0) is not None
    assert declared_tools(case, 1) is None
