"""CES golden-turn checks (SPEC §4.2)."""

from __future__ import annotations

import json
import random
from itertools import permutations
from pathlib import Path
from typing import Any

import pytest

from assay.core.cases import (
    AgentTransfer,
    EvalCase,
    Expectation,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
)
from assay.core.results import Score, Status
from assay.errors import ConfigError
from assay.metrics.base import Metric
from assay.metrics.golden import golden_tool_calls, pair_calls
from assay.metrics.registry import build_metric
from assay.metrics.trajectory import max_weight_assignment

SHARED = Path(__file__).resolve().parents[2] / "tests" / "data"
CASE = EvalCase(id="golden-1")


def call(tool: str, /, **args: Any) -> ToolCall:
    return ToolCall(name=tool, args=args)


def golden(*calls: ToolCall) -> Turn:
    return Turn(expectations=[Expectation(tool_call=c) for c in calls])


def actual(*steps: Any) -> Turn:
    out = []
    for s in steps:
        if isinstance(s, ToolCall):
            out.append(Step(tool_call=s))
        elif isinstance(s, ToolResponse):
            out.append(Step(tool_response=s))
        elif isinstance(s, AgentTransfer):
            out.append(Step(agent_transfer=s))
        else:
            out.append(Step(variables_update=s))
    return Turn(steps=out, final_response="done")


def run(metric: Metric, act: Turn, ref: Turn | None) -> Score:
    return metric.score_invocation(act, ref, CASE)


# -- parameter_correctness_score ---------------------------------------------------------------


def test_parameter_correctness_is_the_mean_share_of_expected_parameters() -> None:
    m = build_metric("parameter_correctness_score")
    assert m.threshold == 1.0
    ref = golden(call("book", date="2024-12-25", size=4, name="Ada"), call("notify"))
    s = run(
        m,
        actual(call("book", date="2024-12-25", size=4.0, name="ada", extra=1), call("notify", x=1)),
        ref,
    )
    assert s.value == pytest.approx((2 / 3 + 1.0) / 2)
    per = s.details["tool_calls"]
    assert [p["parameter_correctness_score"] for p in per] == [pytest.approx(2 / 3), 1.0]
    assert [p["outcome"] for p in per] == ["FAIL", "PASS"]
    assert per[0]["missing_or_different"] == ["name"]
    assert per[0]["observed_tool_call"]["args"]["name"] == "ada"
    assert s.explanation is not None and "name" in s.explanation


def test_parameter_correctness_of_a_call_that_was_not_made_is_zero() -> None:
    m = build_metric("parameter_correctness_score")
    s = run(m, actual(call("other", a=1)), golden(call("book", a=1), call("ping")))
    assert s.value == 0.0
    assert [p["observed_tool_call"] for p in s.details["tool_calls"]] == [None, None]
    assert s.explanation is not None and "book was not called" in s.explanation


def test_repeated_tools_are_paired_to_maximise_correctness() -> None:
    # Pairing in order of appearance would give 0.5 + 0.0; the best pairing 0.5 + 1.0.
    expected = [call("s", x=1, y=2), call("s", x=1)]
    actual_calls = [call("s", x=1, y=0), call("s", x=0, y=2)]
    assert pair_calls(expected, actual_calls) == [1, 0]
    m = build_metric("parameter_correctness_score")
    assert run(m, actual(*actual_calls), golden(*expected)).value == pytest.approx(0.75)
    # more expected calls than actual ones: the best-fitting expectation gets the call
    assert pair_calls([call("s", x=1), call("s", x=2)], [call("s", x=2)]) == [None, 0]


def test_pairing_is_optimal_on_random_calls() -> None:
    rng = random.Random(5)
    for _ in range(300):
        expected = [
            call("s", **{k: rng.randint(0, 1) for k in "abc"[: rng.randint(0, 3)]})
            for _ in range(rng.randint(1, 4))
        ]
        actual_calls = [
            call("s", **{k: rng.randint(0, 1) for k in "abcd"[: rng.randint(0, 4)]})
            for _ in range(rng.randint(0, 4))
        ]
        pairs = pair_calls(expected, actual_calls)
        used = [j for j in pairs if j is not None]
        assert len(used) == len(set(used)) == min(len(expected), len(actual_calls))

        def share(e: ToolCall, a: ToolCall) -> float:
            hits = [k in a.args and a.args[k] == v for k, v in e.args.items()]
            return sum(hits) / len(hits) if hits else 1.0

        got = sum(
            share(e, actual_calls[j]) for e, j in zip(expected, pairs, strict=True) if j is not None
        )
        slots = list(range(len(actual_calls))) + [None] * len(expected)
        best = max(
            sum(
                share(e, actual_calls[j])
                for e, j in zip(expected, perm, strict=True)
                if j is not None
            )
            for perm in set(permutations(slots, len(expected)))
        )
        assert got == pytest.approx(best)


def test_max_weight_assignment() -> None:
    assert max_weight_assignment([[1.0, 0.0], [1.0, 0.5]]) == [0, 1]
    assert max_weight_assignment([[0.0, 0.2, 0.9]]) == [2]
    assert max_weight_assignment([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]]) == [1, 0]


def test_parameter_threshold_option_in_both_spellings_and_conflicts() -> None:
    for key in (
        "tool_invocation_parameter_correctness_threshold",
        "toolInvocationParameterCorrectnessThreshold",
    ):
        m = build_metric("parameter_correctness_score", {key: 0.5})
        assert m.threshold == 0.5
        result = m.score_case(CASE, [actual(call("f", a=1, b=0))], [golden(call("f", a=1, b=2))])
        assert result.status is Status.PASSED
        assert result.per_invocation[0].details["tool_calls"][0]["outcome"] == "PASS"
    with pytest.raises(ConfigError, match="disagree"):
        build_metric(
            "parameter_correctness_score",
            {"threshold": 0.9, "toolInvocationParameterCorrectnessThreshold": 0.5},
        )
    with pytest.raises(ConfigError, match="less than or equal to 1"):
        build_metric(
            "parameter_correctness_score", {"tool_invocation_parameter_correctness_threshold": 2}
        )


def test_nested_and_unicode_parameters_compare_as_json() -> None:
    m = build_metric("parameter_correctness_score")
    ref = golden(call("réserver", lieu={"ville": "Zürich", "n": 1}, confirmé=True))
    assert (
        run(
            m, actual(call("réserver", lieu={"n": 1.0, "ville": "Zürich"}, confirmé=True)), ref
        ).value
        == 1.0
    )
    assert run(m, actual(call("réserver", lieu={"ville": "Zürich"}, confirmé=1)), ref).value == 0.0


# -- tool_invocation_score / tool_ordered_invocation_score --------------------------------------


def test_tool_invocation_score_is_the_share_of_expected_calls_invoked() -> None:
    m = build_metric("tool_invocation_score", {"extra_tool_call_behavior": "ALLOW"})
    ref = golden(call("a"), call("b"), call("a"))
    assert run(m, actual(call("a", x=9), call("b")), ref).value == pytest.approx(2 / 3)
    assert run(m, actual(call("b"), call("a"), call("a")), ref).value == 1.0
    s = run(m, actual(call("c")), ref)
    assert s.value == 0.0
    assert s.details["missing_tools"] == ["a", "a", "b"]


def test_extra_calls_fail_the_turn_by_default() -> None:
    m = build_metric("tool_invocation_score")
    ref = golden(call("a"), call("b"))
    s = run(m, actual(call("a"), call("b"), call("c"), call("a")), ref)
    assert s.value == 0.0
    assert s.details["extra_tools"] == ["c", "a"]
    assert s.explanation is not None and "extra_tool_call_behavior FAIL" in s.explanation
    allow = build_metric("tool_invocation_score", {"extraToolCallBehavior": "allow"})
    assert run(allow, actual(call("a"), call("b"), call("c")), ref).value == 1.0
    with pytest.raises(ConfigError, match="FAIL, ALLOW"):
        build_metric("tool_invocation_score", {"extra_tool_call_behavior": "IGNORE"})


def test_adk_transfer_calls_are_transfers_not_extra_tool_calls() -> None:
    m = build_metric("tool_invocation_score")
    ref = golden(call("a"))
    transfer = call("transfer_to_agent", agent_name="billing")
    assert run(m, actual(transfer, call("a")), ref).value == 1.0
    # ...unless the golden turn expects the transfer call itself.
    expects_transfer = golden(call("a"), call("transfer_to_agent", agent_name="billing"))
    assert run(m, actual(call("a")), expects_transfer).value == 0.5
    assert run(m, actual(call("a"), transfer, transfer), expects_transfer).value == 0.0


def test_overall_tool_invocation_threshold_option() -> None:
    m = build_metric("tool_invocation_score", {"overallToolInvocationCorrectnessThreshold": 0.5})
    assert m.threshold == 0.5
    result = m.score_case(CASE, [actual(call("a"))], [golden(call("a"), call("b"))])
    assert (result.score, result.status) == (0.5, Status.PASSED)


def test_tool_ordered_invocation_score_counts_calls_in_the_expected_order() -> None:
    m = build_metric("tool_ordered_invocation_score", {"extra_tool_call_behavior": "ALLOW"})
    ref = golden(call("a"), call("b"), call("c"), call("d"))
    assert run(m, actual(call("a"), call("b"), call("c"), call("d")), ref).value == 1.0
    assert run(m, actual(call("b"), call("a"), call("c"), call("d")), ref).value == 0.75
    assert run(m, actual(call("d"), call("c"), call("b"), call("a")), ref).value == 0.25
    assert run(m, actual(call("x"), call("a"), call("y"), call("d")), ref).value == 0.5
    strict = build_metric("tool_ordered_invocation_score")
    assert (
        run(strict, actual(call("a"), call("b"), call("c"), call("d"), call("x")), ref).value == 0.0
    )


@pytest.mark.parametrize(
    "name",
    ["parameter_correctness_score", "tool_invocation_score", "tool_ordered_invocation_score"],
)
def test_turns_without_expected_calls_or_reference_get_no_score(name: str) -> None:
    m = build_metric(name)
    no_calls = Turn(expectations=[Expectation(agent_response="hello")])
    s = run(m, actual(call("a")), no_calls)
    assert s.value is None and s.explanation == "the golden turn expects no tool call"
    assert run(m, actual(call("a")), None).value is None
    result = m.score_case(CASE, [actual(call("a"))], [no_calls])
    assert result.status is Status.NOT_EVALUATED


def test_reference_steps_are_the_expected_calls_when_there_are_no_expectations() -> None:
    ref = Turn(steps=[Step(tool_call=call("a", x=1)), Step(tool_call=call("b"))])
    assert [c.name for c, _ in golden_tool_calls(ref)] == ["a", "b"]
    assert (
        run(build_metric("tool_invocation_score"), actual(call("a"), call("b")), ref).value == 1.0
    )
    assert (
        run(
            build_metric("parameter_correctness_score"), actual(call("a", x=2), call("b")), ref
        ).value
        == 0.5
    )


# -- golden_expectations ---------------------------------------------------------------------------


def test_golden_expectations_check_responses_transfers_and_variables() -> None:
    m = build_metric("golden_expectations")
    ref = Turn(
        expectations=[
            Expectation(
                note="Paid",
                tool_response=ToolResponse(name="pay", response={"output": {"ok": True}}),
            ),
            Expectation(note="To billing", agent_transfer="billing_agent"),
            Expectation(note="State", updated_variables={"status": "done", "count": 2}),
            Expectation(note="Greets", agent_response="Hello!"),
            Expectation(tool_call=call("pay")),  # scored by the tool metrics
        ]
    )
    act = actual(
        call("pay"),
        ToolResponse(name="pay", response={"output": {"ok": True}}),
        AgentTransfer(target_agent="billing_agent"),
        {"status": "pending"},
        {"status": "done", "count": 2.0},
    )
    s = run(m, act, ref)
    assert s.value == 1.0
    outcomes = s.details["expectations"]
    assert [o["kind"] for o in outcomes] == [
        "tool_response",
        "agent_transfer",
        "updated_variables",
        "agent_response",
    ]
    assert [o["outcome"] for o in outcomes] == ["PASS", "PASS", "PASS", "NOT_EVALUATED"]
    assert outcomes[2]["observed"] == {"status": "done", "count": 2.0}
    assert "semantic_similarity" in outcomes[3]["reason"]
    assert outcomes[3]["observed"] == "done"


def test_golden_expectation_failures_report_the_observed_values() -> None:
    m = build_metric("golden_expectations")
    ref = Turn(
        expectations=[
            Expectation(tool_response=ToolResponse(name="pay", response={"ok": True})),
            Expectation(note="To billing", agent_transfer="billing_agent"),
            Expectation(updated_variables={"status": "done", "missing": 1}),
        ]
    )
    act = actual(
        ToolResponse(name="pay", response={"ok": 1}),
        call("transfer_to_agent", agent_name="sales_agent"),
        {"status": "done"},
    )
    s = run(m, act, ref)
    assert s.value == 0.0
    observed = [o["observed"] for o in s.details["expectations"]]
    assert observed == [[{"ok": 1}], ["sales_agent"], {"status": "done"}]
    assert s.explanation is not None and "To billing" in s.explanation


def test_null_expected_values_are_checked_not_dropped() -> None:
    m = build_metric("golden_expectations")
    ref = Turn(
        expectations=[
            Expectation(updated_variables={"coupon": None}),
            Expectation(tool_response=ToolResponse(name="pay", response={"error": None})),
        ]
    )
    ok = actual({"coupon": None}, ToolResponse(name="pay", response={"error": None}))
    assert run(m, ok, ref).value == 1.0
    bad = actual({"coupon": "X"}, ToolResponse(name="pay", response={"error": "declined"}))
    assert run(m, bad, ref).value == 0.0
    assert run(m, actual(), ref).value == 0.0  # nothing set, nothing returned


def test_adk_transfer_tool_call_counts_as_an_agent_transfer() -> None:
    m = build_metric("golden_expectations")
    ref = Turn(expectations=[Expectation(agent_transfer="billing_agent")])
    assert run(m, actual(call("transfer_to_agent", agent_name="billing_agent")), ref).value == 1.0


def test_value_match_subset_accepts_partial_nested_expectations() -> None:
    ref = Turn(expectations=[Expectation(updated_variables={"sm": {"status": "in_progress"}})])
    act = actual({"sm": {"status": "in_progress", "filled": {"date": "today"}}})
    assert run(build_metric("golden_expectations"), act, ref).value == 0.0
    assert run(build_metric("golden_expectations", {"valueMatch": "subset"}), act, ref).value == 1.0
    with pytest.raises(ConfigError, match=r"value_?[mM]atch"):
        build_metric("golden_expectations", {"value_match": "fuzzy"})


def test_golden_expectations_without_checkable_expectations_give_no_score() -> None:
    m = build_metric("golden_expectations")
    only_response = Turn(expectations=[Expectation(agent_response="hi")])
    s = run(m, actual(), only_response)
    assert s.value is None and s.explanation is not None and "semantic_similarity" in s.explanation
    assert s.details["expectations"][0]["outcome"] == "NOT_EVALUATED"
    assert run(m, actual(), Turn(expectations=[Expectation(tool_call=call("a"))])).value is None
    assert run(m, actual(), Turn()).value is None
    assert run(m, actual(), None).value is None


# -- a real CES export ----------------------------------------------------------------------------


def _ces_turns(path: Path) -> list[Turn]:
    """Just enough of the CES golden format for this test (the format module owns the rest)."""
    turns = []
    for t in json.loads(path.read_text(encoding="utf-8"))["golden"]["turns"]:
        expectations = []
        text = None
        for step in t["steps"]:
            if "userInput" in step:
                text = step["userInput"].get("text", text)
                continue
            e = step["expectation"]
            if "toolCall" in e:
                tc = e["toolCall"]
                expectations.append(
                    Expectation(
                        note=e.get("note"), tool_call=call(tc["tool"], **tc.get("args", {}))
                    )
                )
            elif "updatedVariables" in e:
                expectations.append(
                    Expectation(note=e.get("note"), updated_variables=e["updatedVariables"])
                )
            elif "agentResponse" in e:
                chunks = "".join(c.get("text", "") for c in e["agentResponse"]["chunks"])
                expectations.append(Expectation(note=e.get("note"), agent_response=chunks))
        turns.append(Turn(user_input={"text": text}, expectations=expectations))
    return turns


def test_real_ces_golden_evaluation() -> None:
    path = SHARED / "realworld/ces/bella_notte/evaluations/Off-the-Rails_-_Repeated_Off-Topic.json"
    reference = _ces_turns(path)
    assert len(reference) == 4
    state = {"status": "in_progress", "filled": {}, "stall": 0}
    agent = [
        actual({"sm": state}),
        actual({"sm": {**state, "stall": 1}}),
        actual({"sm": {**state, "stall": 2}}),
        actual(
            {"sm": {**state, "status": "escalated"}},
            call("end_session", reason="retry_exhausted", session_escalated=True),
        ),
    ]
    case = EvalCase(id="c3c25604", reference=reference)
    subset = build_metric("golden_expectations", {"value_match": "subset"})
    result = subset.score_case(case, agent, reference)
    assert (result.score, result.status) == (1.0, Status.PASSED)
    exact = build_metric("golden_expectations")
    assert exact.score_case(case, agent, reference).per_invocation[1].value == 0.0  # partial sm

    tools = build_metric("tool_invocation_score")
    per = tools.score_case(case, agent, reference).per_invocation
    assert [s.value for s in per] == [None, None, None, 1.0]
    params = build_metric("parameter_correctness_score")
    wrong = actual(call("end_session", reason="user_left", session_escalated=True))
    assert params.score_invocation(wrong, reference[3], case).value == 0.5
