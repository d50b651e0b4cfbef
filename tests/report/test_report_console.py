"""The terminal report: case table, big-run summary, summary line and hints."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st
from report_samples import failed_case, not_evaluated_case, passed_case, sample_result
from rich.console import Console

from assay.core.results import EvalResult, Status
from assay.report import render_results, summary_text
from assay.report.console import metric_cell, pass_at_k
from assay.report.console_runs import short_ids


def _render(result: EvalResult, **kwargs: int) -> str:
    console = Console(record=True, width=200, color_system=None)
    render_results(result, console, **kwargs)
    return console.export_text()


def test_case_table_lists_every_case_with_scores() -> None:
    text = _render(sample_result())
    for case_id in ("turn_off", "temperature", "no_response", "crash"):
        assert case_id in text
    assert "0.40 / 0.80" in text  # failed response score vs threshold
    assert "0.88 / 0.80" in text
    assert "n/a" in text  # not evaluated: no score, never 0
    assert "agent raised ValueError: boom" in text
    assert "Result: 1 passed, 2 failed, 1 not evaluated (4 cases)" in text
    # Cases from two eval sets: the set is shown.
    assert "eval set" in text


def test_hint_when_no_agent_and_no_recorded_response() -> None:
    assert "Hint:" in _render(sample_result())
    only_scored = sample_result()
    only_scored.cases = [passed_case(), failed_case()]
    assert "Hint:" not in _render(only_scored)


def test_big_runs_show_metric_summary_and_failing_cases_only() -> None:
    result = sample_result()
    cases = []
    for i in range(60):
        case = copy.deepcopy(passed_case() if i % 10 else failed_case())
        case.case_id = f"case_{i:02d}"
        cases.append(case)
    result.cases = cases
    text = _render(result)
    assert "Metrics" in text and "not evaluated" in text
    assert "case_00" in text and "case_10" in text  # failing
    assert "case_01" not in text  # passing cases are not listed
    assert "60 case runs: passing cases are not listed" in text
    # response_match_score row: 54 passed, 6 failed.
    line = next(li for li in text.splitlines() if li.startswith("│ response_match_score"))
    assert "54" in line and "6" in line


def test_summary_line_reports_pass_at_k_for_repeated_runs() -> None:
    result = sample_result()
    first, second = passed_case(), passed_case()
    second.run_index = 1
    second.status = Status.FAILED
    other = failed_case()
    other_second = failed_case()
    other_second.run_index = 1
    result.cases = [first, second, other, other_second]
    assert pass_at_k(result) == (2, 0.5, 0.0)
    text = summary_text(result).plain
    assert "(4 case runs)" in text
    assert "pass@2 0.50, pass^2 0.00" in text


def test_metric_cell_styles() -> None:
    case = passed_case()
    assert metric_cell(case.metrics["tool_call_count"]).plain == "1.00"  # informational
    assert metric_cell(None).plain == ""
    failed = failed_case().metrics["response_match_score"]
    assert "red" in str(metric_cell(failed).style)


def test_progress_observer_draws_on_a_terminal_and_stops_twice_safely() -> None:
    import io

    from assay.report.progress import CaseCollector, ProgressObserver

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=120)
    progress, collector = ProgressObserver(console), CaseCollector()
    result = sample_result()
    for observer in (progress, collector):
        observer.on_start(len(result.cases))
        for case in result.cases:
            observer.on_case_done(case)
        observer.on_finish(result)
    progress.close()
    assert "evaluating" in buffer.getvalue()
    assert "1 passed" in buffer.getvalue()
    assert collector.total == 4 and collector.cases == result.cases


def test_failed_cases_get_their_reason_under_the_table() -> None:
    text = _render(sample_result())
    assert "Why cases failed" in text
    assert "temperature: response drift: response_match_score 0.40 < 0.80" in text
    assert "crash: agent error: agent raised ValueError: boom" in text
    assert "Failure causes: 1 response below threshold, 1 agent error" in text


def test_narrow_terminals_move_metrics_into_the_summary_instead_of_cropping() -> None:
    console = Console(record=True, width=60, color_system=None)
    render_results(sample_result(), console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines() if line.startswith(("┃", "│"))) <= 60
    assert "Metrics" in text and "metrics" in text.split("Metrics", 1)[1]
    # The failed metric is named in the case's row (folded, not cut off).
    row = next(li for li in text.splitlines() if "│ temperat" in li)
    assert "│ response" in row and "FAILED" in row


def test_a_note_every_case_shares_is_printed_once() -> None:
    result = sample_result()
    result.cases = [not_evaluated_case(), not_evaluated_case()]
    result.cases[1].case_id = "also_no_response"
    text = _render(result)
    reason = "no agent given and the case has no recorded response"
    assert text.count(reason) == 1
    assert f"note (every case): {reason}" in text


@settings(max_examples=200, deadline=None)
@given(st.sets(st.text(alphabet="0123456789abcdefghjkmnpqrstvwxyz", min_size=16, max_size=16),
               max_size=25))  # fmt: skip
def test_short_ids_are_unique_prefixes_of_at_least_eight_characters(ids: set[str]) -> None:
    listed = sorted(ids)
    # A store that holds one more run, sharing the first 10 characters with the first.
    hidden = listed[0][:10] + "zzzzzz" if listed else ""
    everything = [*listed, hidden] if hidden not in ids else listed

    def unique(prefix: str) -> bool:
        return sum(i.startswith(prefix) for i in everything) == 1

    short = short_ids(listed, unique)
    for full, prefix in short.items():
        assert full.startswith(prefix) and len(prefix) >= 8
        assert [i for i in everything if i.startswith(prefix)] == [full]
