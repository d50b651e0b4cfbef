"""Failure analysis: every failed case classified by cause, counted per cause and tool."""

from __future__ import annotations

from home_runs import home_result
from report_samples import crashed_case, failed_case, passed_case

from assay.core.results import CaseResult, MetricResult, Score, Status
from assay.report.analysis import Cause, analyze, analyze_case


def test_the_example_failures_are_classified_from_the_data() -> None:
    analysis = analyze(home_result().cases)
    reasons = {c.case_id: c.reason() for c in analysis.cases}
    assert set(reasons) == {
        "set_temperature_fahrenheit", "energy_today", "two_devices_off", "conditional_switch_off",
    }  # fmt: skip
    assert reasons["two_devices_off"].startswith(
        'missing call set_device_info(device_id="device_4", status="OFF")'
    )
    assert reasons["set_temperature_fahrenheit"].startswith(
        "wrong argument set_temperature.temperature: expected 22, got 72"
    )
    assert reasons["conditional_switch_off"] == 'extra call get_device_info(device_id="device_1")'
    assert reasons["energy_today"] == "response drift: response_match_score 0.48 < 0.70"
    by_cause = {cause: [c.case_id for c in cases] for cause, cases in analysis.by_cause().items()}
    assert by_cause[Cause.WRONG_ARGUMENT] == ["set_temperature_fahrenheit"]
    assert by_cause[Cause.MISSING_CALL] == ["two_devices_off"]
    assert by_cause[Cause.EXTRA_CALL] == ["conditional_switch_off"]
    assert len(by_cause[Cause.RESPONSE]) == 3
    by_tool = analysis.by_tool()
    assert by_tool["set_temperature"][Cause.WRONG_ARGUMENT] == 1
    assert by_tool["set_device_info"][Cause.MISSING_CALL] == 1
    assert analysis.by_argument() == {"set_temperature.temperature": 1}
    assert analysis.headline().startswith(
        "1 wrong argument (set_temperature.temperature), 1 missing call, 1 extra call"
    )
    wrong = next(f for c in analysis.cases for f in c.findings if f.cause is Cause.WRONG_ARGUMENT)
    assert (wrong.expected, wrong.actual, wrong.invocation) == (22, 72, 0)
    doc = analysis.to_dict()
    assert doc["failed"] == 4
    assert doc["by_cause"]["missing call"] == ["home_automation/two_devices_off#1"]


def test_passing_cases_have_no_findings() -> None:
    assert analyze_case(passed_case()) is None


def test_agent_error_and_timeout() -> None:
    crashed = analyze_case(crashed_case())
    assert crashed is not None and crashed.causes == [Cause.AGENT_ERROR]
    assert crashed.reason() == "agent error: agent raised ValueError: boom"
    slow = crashed_case()
    slow.error = "agent timed out after 5s"
    found = analyze_case(slow)
    assert found is not None and found.causes == [Cause.TIMEOUT]


def test_judge_verdict_keeps_the_rationale() -> None:
    case = failed_case()
    case.metrics = {
        "safety_v1": MetricResult(
            "safety_v1", 0.0, 1.0, Status.FAILED, per_invocation=[Score(0.0, "insults the user")]
        )
    }
    found = analyze_case(case)
    assert found is not None and found.causes == [Cause.JUDGE]
    assert found.reason() == "judge verdict: safety_v1 0.00 < 1.00 (insults the user)"


def test_other_metrics_and_unknown_names() -> None:
    case = CaseResult(
        "slow",
        Status.FAILED,
        {"my_latency_budget": MetricResult("my_latency_budget", 0.2, 0.5, Status.FAILED)},
    )
    found = analyze_case(case)
    assert found is not None and found.causes == [Cause.METRIC]
    assert found.reason() == "my_latency_budget 0.20 < 0.50"
