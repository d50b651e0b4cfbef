"""The tool-call diff behind trajectory explanations and the failure analysis."""

from __future__ import annotations

from assay.core.cases import EvalCase, Step, ToolCall, Turn
from assay.metrics.calldiff import DiffKind, diff_calls, explain_calls, format_call, same_value
from assay.metrics.trajectory import ToolTrajectoryAvgScore, TrajectoryRecall


def call(name: str, **args: object) -> ToolCall:
    return ToolCall(name=name, args=args)


def test_identical_calls_have_no_difference() -> None:
    calls = [call("a", x=1), call("b", y="z")]
    assert diff_calls(calls, list(calls)) == []
    assert explain_calls(calls, list(calls)) is None


def test_missing_and_extra_calls_name_the_call_with_its_arguments() -> None:
    expected = [call("switch_off", device_id="device_1"), call("switch_off", device_id="device_4")]
    actual = [call("switch_off", device_id="device_1")]
    [missing] = diff_calls(expected, actual)
    assert missing.kind is DiffKind.MISSING_CALL and missing.tool == "switch_off"
    assert missing.text == 'missing call switch_off(device_id="device_4")'
    [extra] = diff_calls([], [call("lookup", q="x")])
    assert extra.kind is DiffKind.EXTRA_CALL and extra.text == 'extra call lookup(q="x")'


def test_wrong_argument_names_the_argument_and_both_values() -> None:
    expected = [call("set_temperature", location="Living Room", temperature=22)]
    actual = [call("set_temperature", location="Living Room", temperature=72)]
    [diff] = diff_calls(expected, actual)
    assert diff.kind is DiffKind.WRONG_ARGUMENT
    assert (diff.tool, diff.argument, diff.expected, diff.actual) == (
        "set_temperature", "temperature", 22, 72,
    )  # fmt: skip
    assert diff.text == "wrong argument set_temperature.temperature: expected 22, got 72"
    # An argument the agent left out, or added, is a wrong argument too.
    [absent] = diff_calls([call("f", a=1, b=2)], [call("f", a=1)])
    assert absent.argument == "b" and "got (absent)" in absent.text


def test_wrong_tool_pairs_by_position() -> None:
    [diff] = diff_calls([call("get_weather", city="Paris")], [call("get_time", city="Paris")])
    assert diff.kind is DiffKind.WRONG_TOOL
    assert (diff.expected, diff.actual) == ("get_weather", "get_time")


def test_wrong_order_is_reported_once() -> None:
    expected = [call("a"), call("b"), call("c")]
    diffs = diff_calls(expected, [call("c"), call("a"), call("b")])
    assert [d.kind for d in diffs] == [DiffKind.WRONG_ORDER]
    assert diffs[0].text == "wrong order: expected a, b, c; got c, a, b"


def test_json_equality_of_values() -> None:
    assert same_value(22, 22.0)
    assert not same_value(True, 1)
    assert not same_value("22", 22)
    assert same_value({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert format_call(call("f", s="x", n=2, o={"k": [1]})) == 'f(s="x", n=2, o={"k": [1]})'


def _turn(*calls: ToolCall) -> Turn:
    return Turn(steps=[Step(tool_call=c) for c in calls])


def test_trajectory_metrics_explain_scores_below_one() -> None:
    case = EvalCase(id="c")
    metric = ToolTrajectoryAvgScore()
    expected = _turn(call("set_device_info", device_id="device_1", status="OFF"),
                     call("set_device_info", device_id="device_4", status="OFF"))  # fmt: skip
    actual = _turn(call("set_device_info", device_id="device_1", status="OFF"))
    score = metric.score_invocation(actual, expected, case)
    assert score.value == 0.0
    assert score.explanation == 'missing call set_device_info(device_id="device_4", status="OFF")'
    assert metric.score_invocation(expected, expected, case).explanation is None
    # The case result carries the explanation, per turn when there are several.
    result = TrajectoryRecall().score_case(case, [expected, actual], [expected, expected])
    assert result.score == 0.75
    assert result.explanation == (
        'turn 2: missing call set_device_info(device_id="device_4", status="OFF")'
    )


def test_ignored_arguments_are_not_reported_as_wrong() -> None:
    metric = ToolTrajectoryAvgScore(
        ToolTrajectoryAvgScore.options_model.model_validate({"ignore_args": True})
    )
    case = EvalCase(id="c")
    score = metric.score_invocation(_turn(call("a", x=1)), _turn(call("a", x=2), call("b")), case)
    assert score.value == 0.0
    assert score.explanation == "missing call b()"


def test_format_value_encodes_as_json_dumps_does() -> None:
    """The fast paths for strings, ints, booleans and None, and the one shared encoder,
    write what `json.dumps(value, ensure_ascii=False, separators=(", ", ": "))` writes."""
    import json
    import random

    from assay.metrics.calldiff import format_value

    class Text(str):
        pass

    rng = random.Random(7)
    values: list[object] = [
        "", "a", 'q"uote\\', "ü\n\t\x00\u2028", "😀", Text("sub"), 0, -5, 10**40, True,
        False, None, 1.5, -0.0, 1e300, float("nan"), float("inf"), float("-inf"),
        [1, "a", None], {"k": [1, {"z": 2.5}]}, (1, 2),
    ]  # fmt: skip
    values += ["".join(chr(rng.randrange(0, 0x3000)) for _ in range(12)) for _ in range(200)]
    values += [rng.randrange(-(10**20), 10**20) for _ in range(200)]
    for value in values:
        expected = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
        assert format_value(value) == expected, value
    assert format_value({1j}) == repr({1j})  # not JSON: its repr
