"""Trajectory metrics (SPEC §4.1): ADK's tool_trajectory_avg_score and Vertex's trajectory_*."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.core.cases import EvalCase, Expectation, Step, ToolCall, Turn
from assay.core.results import Status
from assay.errors import ConfigError, InputError
from assay.metrics.base import Metric
from assay.metrics.registry import build_metric
from assay.metrics.trajectory import (
    MatchType,
    count_matched_calls,
    expected_tool_calls,
    match_trajectory,
    parse_match_type,
)

SHARED = Path(__file__).resolve().parents[2] / "tests" / "data"
CASE = EvalCase(id="case-1")


def call(tool: str, /, **args: Any) -> ToolCall:
    return ToolCall(name=tool, args=args)


def turn(*calls: ToolCall) -> Turn:
    return Turn(steps=[Step(tool_call=c) for c in calls])


def score(metric: Metric, actual: list[ToolCall], expected: list[ToolCall] | None) -> float | None:
    ref = None if expected is None else turn(*expected)
    return metric.score_invocation(turn(*actual), ref, CASE).value


T1, T2, T3 = call("t1", a=1), call("t2", b="x"), call("t3")


def adk(match_type: Any = "EXACT", **options: Any) -> Metric:
    return build_metric("tool_trajectory_avg_score", {"match_type": match_type, **options})


# -- tool_trajectory_avg_score (ADK) ----------------------------------------------------------


def test_any_order_repeated_expected_calls_need_as_many_actual_calls() -> None:
    m = adk("ANY_ORDER")
    assert score(m, [T1, T2, T3], [T1, T2, T1]) == 0.0
    assert score(m, [T1, T2, T3, T1], [T1, T2, T1]) == 1.0


@pytest.mark.parametrize(
    ("match_type", "with_calls"), [("EXACT", 0.0), ("IN_ORDER", 1.0), ("ANY_ORDER", 1.0)]
)
def test_empty_reference(match_type: str, with_calls: float) -> None:
    m = adk(match_type)
    assert score(m, [], []) == 1.0
    assert score(m, [T1], []) == with_calls


def test_adk_documented_examples() -> None:
    t11, t21, t22, t31 = call("t1.1"), call("t2.1"), call("t2.2"), call("t3.1")
    in_order, any_order = adk("IN_ORDER"), adk("ANY_ORDER")
    assert score(in_order, [T1, t11, T2, t21, t22, T3, t31], [T1, T2, T3]) == 1.0
    assert score(in_order, [T1, t11, T2, t21, t22, T3, t31], [T1, T2, T3, call("t4")]) == 0.0
    assert score(any_order, [T2, t21, T1, t11, call("t1.2"), T3, t31], [T1, T2, T3]) == 1.0
    assert score(any_order, [T1, t11, T2, t21, t22, T3, t31], [T1, T2, T3, call("t4")]) == 0.0


def test_exact_needs_same_calls_in_same_order_with_nothing_extra() -> None:
    m = adk()
    assert score(m, [T1, T2], [T1, T2]) == 1.0
    assert score(m, [T2, T1], [T1, T2]) == 0.0
    assert score(m, [T1, T2, T3], [T1, T2]) == 0.0
    assert score(m, [call("t1", a=1.0), T2], [T1, T2]) == 1.0  # 1 == 1.0
    assert score(m, [call("t1", a="1"), T2], [T1, T2]) == 0.0  # "1" != 1
    assert score(m, [call("t1", a=True)], [T1]) == 0.0  # true != 1 (ADK would say 1.0)


def test_in_order_allows_extras_but_not_reordering() -> None:
    m = adk("IN_ORDER")
    assert score(m, [T3, T1, T3, T2], [T1, T2]) == 1.0
    assert score(m, [T2, T1], [T1, T2]) == 0.0
    assert score(m, [T1, T1], [T1, T1]) == 1.0
    assert score(m, [T1], [T1, T1]) == 0.0


@pytest.mark.parametrize("text", ["in order", "in-order", "IN_ORDER", " In Order ", 1])
def test_match_type_spellings(text: Any) -> None:
    assert parse_match_type(text) is MatchType.IN_ORDER
    assert adk(text).score_invocation(turn(T3, T1), turn(T1), CASE).value == 1.0


def test_unknown_match_type_is_a_config_error_listing_valid_ones() -> None:
    with pytest.raises(ConfigError, match="EXACT, IN_ORDER, ANY_ORDER"):
        adk("sideways")
    with pytest.raises(ConfigError, match="valid match types"):
        adk(7)


def test_ignore_args_compares_names_only_and_options_accept_camel_case() -> None:
    for m in (adk(ignore_args=True), adk(ignoreArgs=True), adk(arg_match="ignore")):
        assert score(m, [call("t1", a=2), call("t2")], [T1, T2]) == 1.0
        assert score(m, [T2, T1], [T1, T2]) == 0.0
    with pytest.raises(ConfigError, match="conflicts with arg_match mode 'subset'"):
        adk(ignore_args=True, arg_match={"mode": "subset"})


def test_case_score_is_the_mean_and_threshold_defaults_to_one() -> None:
    m = build_metric("tool_trajectory_avg_score")
    assert m.threshold == 1.0
    result = m.score_case(CASE, [turn(T1), turn(T2), turn(T3)], [turn(T1), turn(T1), turn(T3)])
    assert result.score == pytest.approx(2 / 3)
    assert result.status is Status.FAILED
    assert [s.value for s in result.per_invocation] == [1.0, 0.0, 1.0]
    lenient = build_metric("tool_trajectory_avg_score", 0.5)
    assert lenient.score_case(CASE, [turn(T1), turn(T2)], [turn(T1), turn(T1)]).status is (
        Status.PASSED
    )


def test_missing_reference_turn_gives_no_score_with_a_reason() -> None:
    m = adk()
    result = m.score_case(CASE, [turn(T1)], [None])
    assert result.score is None
    assert result.status is Status.NOT_EVALUATED
    assert result.per_invocation[0].explanation is not None
    assert "no reference turn" in result.per_invocation[0].explanation


# -- Vertex metrics -------------------------------------------------------------------------

VERTEX_PREDICTED = [
    [call("set_device_info", device_id="device_3", updates={"status": "OFF"})],
    [
        call("get_user_preferences", user_id="user_z"),
        call("set_temperature", location="Living Room", temperature=23),
    ],
]
VERTEX_REFERENCE = [
    [call("set_device_info", device_id="device_2", updates={"status": "OFF"})],
    [
        call("get_user_preferences", user_id="user_y"),
        call("set_temperature", location="Living Room", temperature=23),
    ],
]


@pytest.mark.parametrize(
    ("name", "row1", "row2"),
    [
        ("trajectory_exact_match", 0.0, 0.0),
        ("trajectory_in_order_match", 0.0, 0.0),
        ("trajectory_any_order_match", 0.0, 0.0),
        ("trajectory_precision", 0.0, 0.5),
        ("trajectory_recall", 0.0, 0.5),
    ],
)
def test_vertex_seed_example_dataset(name: str, row1: float, row2: float) -> None:
    m = build_metric(name)
    got = [score(m, p, r) for p, r in zip(VERTEX_PREDICTED, VERTEX_REFERENCE, strict=True)]
    assert got == [row1, row2]
    names_only = build_metric(name, {"ignore_args": True})
    assert [
        score(names_only, p, r) for p, r in zip(VERTEX_PREDICTED, VERTEX_REFERENCE, strict=True)
    ] == [1.0, 1.0]


def test_vertex_binary_metrics() -> None:
    exact = build_metric("trajectory_exact_match")
    in_order = build_metric("trajectory_in_order_match")
    any_order = build_metric("trajectory_any_order_match")
    assert [score(m, [T2, T1], [T1, T2]) for m in (exact, in_order, any_order)] == [0.0, 0.0, 1.0]
    assert [score(m, [T1, T3, T2], [T1, T2]) for m in (exact, in_order, any_order)] == [
        0.0,
        1.0,
        1.0,
    ]
    assert [score(m, [T1], [T1, T1]) for m in (exact, in_order, any_order)] == [0.0, 0.0, 0.0]
    for m in (exact, in_order, any_order):
        assert m.threshold == 1.0


def test_precision_and_recall_use_one_to_one_matching() -> None:
    p, r = build_metric("trajectory_precision"), build_metric("trajectory_recall")
    assert (score(p, [], []), score(r, [], [])) == (1.0, 1.0)
    assert score(p, [], [T1]) == 0.0
    assert score(r, [], [T1]) == 0.0
    assert score(p, [T1], []) == 0.0
    assert score(r, [T1], []) == 1.0  # nothing in the reference was missed
    # one reference call is not matched twice
    assert score(p, [T1, T1, T2], [T1, T2]) == pytest.approx(2 / 3)
    assert score(r, [T1, T1, T2], [T1, T2]) == 1.0
    assert score(r, [T1], [T1, T1, T3, T2]) == 0.25
    assert p.threshold == 1.0 and r.threshold == 1.0


def test_single_tool_use_needs_a_tool_name_and_no_reference() -> None:
    with pytest.raises(ConfigError, match=r"tool_?[nN]ame"):
        build_metric("trajectory_single_tool_use")
    with pytest.raises(ConfigError, match=r"tool_?[nN]ame"):
        build_metric("trajectory_single_tool_use", 1.0)
    m = build_metric("trajectory_single_tool_use", {"toolName": "t2"})
    assert m.needs == frozenset()
    assert score(m, [T1, T2, T2], None) == 1.0
    assert score(m, [T1, T3], None) == 0.0
    assert score(m, [], None) == 0.0
    with_args = build_metric(
        "trajectory_single_tool_use",
        {"tool_name": "t1", "tool_args": {"a": 1}, "arg_match": "subset"},
    )
    assert score(with_args, [call("t1", a=2), call("t1", a=1, z=0)], None) == 1.0
    assert score(with_args, [call("t1", a=2)], None) == 0.0


# -- argument matching through the metrics ---------------------------------------------------


def test_subset_mode_needs_a_maximum_matching_not_first_fit() -> None:
    # First-fit would give the unconstrained expected call the only actual call that
    # satisfies the constrained one; a maximum matching pairs both.
    expected = [call("s"), call("s", q="a")]
    actual = [call("s", q="a", page=1), call("s", q="b")]
    for name in ("trajectory_any_order_match", "trajectory_recall", "trajectory_precision"):
        assert score(build_metric(name, {"arg_match": "subset"}), actual, expected) == 1.0
    assert score(adk("ANY_ORDER", arg_match="subset"), actual, expected) == 1.0
    assert score(adk("IN_ORDER", arg_match="subset"), actual, expected) == 0.0  # order matters


def test_per_tool_comparators_apply_in_every_trajectory_metric() -> None:
    options = {
        "arg_match": {
            "tools": {"weather": {"args": {"lat": {"type": "numeric", "abs_tol": 0.01}}}},
            "args": {"city": "case_insensitive", "request_id": "ignore"},
        }
    }
    expected = [call("weather", lat=41.9, city="Rome", request_id="a")]
    actual = [call("weather", lat=41.905, city="ROME", request_id="b")]
    for name in (
        "tool_trajectory_avg_score",
        "trajectory_exact_match",
        "trajectory_in_order_match",
        "trajectory_any_order_match",
        "trajectory_precision",
        "trajectory_recall",
    ):
        assert score(build_metric(name, options), actual, expected) == 1.0
        assert score(build_metric(name), actual, expected) == 0.0


def test_bad_regex_in_reference_data_names_the_case() -> None:
    m = build_metric("trajectory_exact_match", {"arg_match": {"args": {"id": "regex"}}})
    with pytest.raises(
        InputError, match=r"case 'case-1', at args of expected tool call 'f': .*not a valid regex"
    ):
        score(m, [call("f", id="x")], [call("f", id="[")])


def test_nested_numeric_and_unicode_arguments() -> None:
    m = build_metric("trajectory_exact_match")
    ref = [call("réserver", ville="Zürich 東京", détails={"n": [1, 2.5, {"ok": True}]})]
    assert (
        score(
            m, [call("réserver", détails={"n": [1.0, 2.5, {"ok": True}]}, ville="Zürich 東京")], ref
        )
        == 1.0
    )
    assert (
        score(m, [call("réserver", ville="Zürich 東京", détails={"n": [1, 2.5, {"ok": 1}]})], ref)
        == 0.0
    )
    assert (
        score(
            m, [call("reserver", ville="Zürich 東京", détails={"n": [1, 2.5, {"ok": True}]})], ref
        )
        == 0.0
    )


def test_reference_calls_come_from_ces_expectations_when_present() -> None:
    ref = Turn(
        steps=[Step(tool_call=T3)],
        expectations=[
            Expectation(tool_call=T1),
            Expectation(agent_response="hi"),
            Expectation(tool_call=T2),
        ],
    )
    assert expected_tool_calls(ref) == [T1, T2]
    assert expected_tool_calls(Turn(steps=[Step(tool_call=T3)])) == [T3]
    m = build_metric("trajectory_exact_match")
    assert m.score_invocation(turn(T1, T2), ref, CASE).value == 1.0


def test_public_helpers() -> None:
    assert match_trajectory([T2, T1], [T1, T2], MatchType.ANY_ORDER)
    assert not match_trajectory([T2, T1], [T1, T2])
    assert count_matched_calls([T1, T1, T2], [T1, T3, T1]) == 2


def test_real_adk_eval_set_with_partial_expected_args() -> None:
    """crypto_payroll's eval set lists only some of each call's arguments."""
    path = SHARED / "realworld/adk/crypto_payroll/crypto_payroll_eval_set.evalset.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    exact = build_metric("tool_trajectory_avg_score")
    subset = build_metric("tool_trajectory_avg_score", {"arg_match": "subset"})
    checked = 0
    for case_data in data["eval_cases"]:
        case = EvalCase(id=case_data["eval_id"])
        reference = [
            turn(*(ToolCall.model_validate(u) for u in inv["intermediate_data"]["tool_uses"]))
            for inv in case_data["conversation"]
        ]
        # the agent passes every expected argument plus more (e.g. recipients)
        actual = [
            turn(*(call(c.name, **c.args, recipients=["0xabc"]) for c in ref.tool_calls()))
            for ref in reference
        ]
        assert subset.score_case(case, actual, reference).score == 1.0
        if any(ref.tool_calls() for ref in reference):
            assert exact.score_case(case, actual, reference).score < 1.0
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("options", [{}, {"arg_match": "subset"}, {"arg_match": "superset"},
                                     {"ignore_args": True}])  # fmt: skip
def test_perfect_when_exact_holds_for_every_metric_that_claims_it(options: dict[str, Any]) -> None:
    """`perfect_when_exact` (the lean row path skips the algorithms on it): whenever the
    calls match pairwise in order, every metric that claims it scores 1.0."""
    import random

    from assay.metrics.trajectory import MatchType, TrajectoryMetric, match_trajectory

    rng = random.Random(11)
    names = ["tool_trajectory_avg_score", "trajectory_exact_match", "trajectory_in_order_match",
             "trajectory_any_order_match", "trajectory_precision", "trajectory_recall"]  # fmt: skip
    metrics = [build_metric(n, options) for n in names]
    metrics += [build_metric("tool_trajectory_avg_score", {**options, "match_type": t})
                for t in ("IN_ORDER", "ANY_ORDER")]  # fmt: skip
    single = build_metric("trajectory_single_tool_use", {"tool_name": "a"})
    assert isinstance(single, TrajectoryMetric) and not single.perfect_when_exact
    exact_seen = 0
    for _ in range(400):
        expected = [
            call(rng.choice("ab"), **{k: rng.randint(1, 2) for k in rng.sample("xy", 2)[: i % 3]})
            for i in range(rng.randint(0, 3))
        ]
        actual = [call(c.name, **dict(c.args)) for c in expected]
        if rng.random() < 0.5 and actual:
            actual[0] = call(actual[0].name, **{**actual[0].args, "z": 1})
        for metric in metrics:
            assert isinstance(metric, TrajectoryMetric) and metric.perfect_when_exact
            if match_trajectory(actual, expected, MatchType.EXACT, metric.matcher):
                exact_seen += 1
                assert metric.score_calls(actual, expected) == 1.0, (metric, actual, expected)
    assert exact_seen > 100
