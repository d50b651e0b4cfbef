"""The HTML report (and so the viewer's run page) shows what the judges cost (issue #38)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from browser import browser, open_page
from home_runs import home_result

from assay.report.html import write_html
from assay.report.html.data import judge_cost_lines

__all__ = ["browser"]  # the fixture, imported for pytest

COST = {
    "judge/calls": 7,
    "judge/usd": 0.0123,
    "judge/usd_estimated": 0.02,
    "judge/refused": 3,
    "judge/cost/correctness/openai:gpt-4o-mini/calls": 4,
    "judge/cost/correctness/openai:gpt-4o-mini/cache_hits": 1,
    "judge/cost/correctness/openai:gpt-4o-mini/input_tokens": 1200,
    "judge/cost/correctness/openai:gpt-4o-mini/output_tokens": 80,
    "judge/cost/correctness/openai:gpt-4o-mini/usd": 0.01,
    "judge/cost/safety_v1/anthropic:claude-3-5-haiku/calls": 3,
    "judge/cost/safety_v1/anthropic:claude-3-5-haiku/usd": 0.0023,
}


def test_judge_cost_lines_total_and_per_metric_and_model() -> None:
    lines = judge_cost_lines(COST)
    assert lines == [
        "$0.0123 in total (estimated $0.0200); 3 calls not made: judge budget reached",
        "correctness · openai:gpt-4o-mini: 4 calls, 1 cache hits, 1,200 + 80 tokens, $0.0100",
        "safety_v1 · anthropic:claude-3-5-haiku: 3 calls, 0 cache hits, 0 + 0 tokens, $0.0023",
    ]
    assert judge_cost_lines({"judge/calls": 0}) is None  # a summary with no cost keys


def test_judge_cost_lines_say_how_many_calls_went_in_batches() -> None:
    batched = {
        **COST,
        "judge/batched_calls": 4,
        "judge/cost/correctness/openai:gpt-4o-mini/batched_calls": 4,
        "judge/cost/safety_v1/anthropic:claude-3-5-haiku/batched_calls": 0,
    }
    lines = judge_cost_lines(batched)
    assert lines is not None
    assert lines[0] == (
        "$0.0123 in total (estimated $0.0200); 4 calls batched, at batch prices;"
        " 3 calls not made: judge budget reached"
    )
    assert lines[1].startswith("correctness · openai:gpt-4o-mini: 4 calls (4 batched), 1 cache")
    assert lines[2].startswith("safety_v1 · anthropic:claude-3-5-haiku: 3 calls, 0 cache")


def test_the_report_shows_the_judge_cost(browser: Any, tmp_path: Path) -> None:
    result = copy.copy(home_result())  # a shared result: its summary is left as it is
    result.summary = {**result.summary, **COST}
    path = write_html(result, tmp_path / "report.html")
    w = open_page(browser, path.as_uri())
    w.page.wait_for_selector(".fact-judge-cost")
    shown = w.page.inner_text(".fact-judge-cost")
    assert "$0.0123 in total (estimated $0.0200)" in shown
    assert "correctness · openai:gpt-4o-mini: 4 calls" in shown
    assert "safety_v1 · anthropic:claude-3-5-haiku" in shown
    plain = write_html(home_result(), tmp_path / "plain.html")  # judged nothing: no line
    w.page.goto(plain.as_uri())
    w.page.wait_for_selector("#summary")
    assert w.page.locator(".fact-judge-cost").count() == 0
    assert w.errors == []
