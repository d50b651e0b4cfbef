"""CI gates and plain progress lines."""

from __future__ import annotations

import pytest
from home_runs import home_result
from rich.console import Console

from assay.errors import ConfigError
from assay.report.gates import check_rate, failed_gates, parse_min_means
from assay.report.progress import PlainProgress


def test_pass_rate_and_mean_gates() -> None:
    result = home_result()  # 10 of 14 cases pass; response_match_score mean about 0.87
    assert failed_gates(result, min_pass_rate=0.7, min_means={}) == []
    [rate] = failed_gates(result, min_pass_rate=0.9, min_means={})
    assert rate == "pass rate 0.714 (10/14) < --min-pass-rate 0.9"
    means = {"response_match_score": 0.95, "trajectory_recall": 0.5}
    [mean] = failed_gates(result, min_pass_rate=None, min_means=means)
    assert mean.startswith("response_match_score mean 0.8") and "< --min-mean 0.95" in mean


def test_gate_flags_are_checked() -> None:
    assert parse_min_means(["a=0.5", "b=1"]) == {"a": 0.5, "b": 1.0}
    for bad in ("a", "a=x", "=0.3"):
        with pytest.raises(ConfigError, match="expected METRIC=MINIMUM"):
            parse_min_means([bad])
    with pytest.raises(ConfigError, match="between 0 and 1"):
        check_rate(1.5, "--min-pass-rate")


def test_plain_progress_prints_a_line_per_interval() -> None:
    now = [0.0]
    console = Console(record=True, width=200, color_system=None)
    progress = PlainProgress(console, interval=10.0, clock=lambda: now[0])
    result = home_result()
    progress.on_start(len(result.cases))
    for i, case in enumerate(result.cases):
        now[0] = 3.0 * (i + 1)
        progress.on_case_done(case)
    progress.on_finish(result)
    lines = console.export_text().splitlines()
    # Every 10 s of the (fake) 42 s: at 12, 24 and 36 s, then the last line.
    assert len(lines) == 4
    assert lines[0].startswith("progress: 4/14 case runs (29%), 0.3/s, ETA 30s; ")
    assert lines[-1].startswith("progress: 14/14 case runs (100%), 0.3/s; 10 passed, 4 failed")


def test_plain_progress_shows_the_runs_judge_work() -> None:
    from assay.judges.stats import JudgeStats

    console = Console(record=True, width=200, color_system=None)
    stats = JudgeStats()
    progress = PlainProgress(console, interval=0.0, clock=lambda: 1.0, judges=stats)
    result = home_result()
    progress.on_start(2)
    progress.on_case_done(result.cases[0])  # no judge used yet: nothing said about one
    stats.record_call("openai")
    stats.record_call("openai")
    stats.record_cache_hits("openai", 3)
    stats.record_error("openai")
    progress.on_case_done(result.cases[1])
    first, second = console.export_text().splitlines()
    assert "judge" not in first
    assert second.endswith("; judge: 2 calls, 3 cached, 1 error")
