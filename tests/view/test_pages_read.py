"""The HTML report and `assay view` as a person reads them, in Chromium at 1366x768:
readable criteria, no empty metrics or null fields, rounded numbers with the exact
value in a tooltip, the case timeline, previous/next case, metric means per run, the
chart's axes, tables that fit, run names and the response diff on the compare page.
The README's screenshot (docs/report.png) is written here, so it cannot go stale."""

from __future__ import annotations

import copy
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")
TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS / "report"), str(TESTS / "cli"), str(Path(__file__).parent)]
from browser import browser, open_page  # noqa: E402
from home_runs import home_result  # noqa: E402
from view_server import eval_run, serving  # noqa: E402

from assay.core.results import EvalResult  # noqa: E402
from assay.report.html import write_html  # noqa: E402
from assay.report.html.data import RunFacts, criterion_text  # noqa: E402
from assay.store import Store  # noqa: E402
from assay.view import create_view_app  # noqa: E402
from assay.view.pages import response_diff  # noqa: E402

__all__ = ["browser"]
REPO = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO / "docs" / "report.png"
WIDTH, HEIGHT = 1366, 768
FAHRENHEIT = "home_automation%2Fset_temperature_fahrenheit%231"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('pages') / 'runs.db'}"
    base = eval_run(url, "examples.home_automation.agent:root_agent", name="baseline")
    terse = eval_run(url, "ui_agents:terse_agent", name="terse")
    with Store.open(url) as db, serving(create_view_app(db)) as served:
        yield served, base, terse


def _page(browser: Any, url: str) -> Any:
    return open_page(browser, url, width=WIDTH, height=HEIGHT)


def _shot(page: Any, folder: Path, name: str) -> None:
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def _fits(page: Any, selector: str) -> bool:
    """Whether every element matching `selector` shows all its content (no clipping)."""
    return bool(page.evaluate(
        "s => [...document.querySelectorAll(s)].every(e => e.scrollWidth <= e.clientWidth + 1)",
        selector,
    ))  # fmt: skip


def test_criteria_read_as_text() -> None:
    exact = {"threshold": 1.0, "match_type": "EXACT"}
    assert criterion_text("tool_trajectory_avg_score", exact) == (
        "tool_trajectory_avg_score: EXACT match, threshold 1.0"
    )
    assert criterion_text("response_match_score", 0.7) == "response_match_score: threshold 0.7"
    judged = {
        "threshold": 0.8,
        "judge_model_options": {"judge_model": "openai:m", "num_samples": 3},
    }
    assert criterion_text("final_response_match_v2", judged) == (
        "final_response_match_v2: threshold 0.8, judged by openai:m, 3 samples"
    )
    assert criterion_text("x", {}) == "x: default settings"


def test_the_word_diff_marks_removed_and_added_words() -> None:
    diff = response_diff("OK, the lamp is now off.", "Done: the <b>lamp</b> is off now.")
    assert diff == (
        "<del>OK,</del><ins>Done:</ins> the <del>lamp</del><ins>&lt;b&gt;lamp&lt;/b&gt;</ins> "
        "is <del>now</del><ins>off</ins> <del>off.</del><ins>now.</ins>"
    )
    assert response_diff("same words", "same words") == "same words"


def test_the_run_page_reads_for_people(
    stored: tuple[str, str, str], browser: Any, tmp_path: Path
) -> None:
    served, base, terse = stored
    w = _page(browser, f"{served}/runs/{terse}")
    page = w.page
    page.wait_for_selector("#summary")
    _shot(page, tmp_path, "run")
    criteria = page.locator(".fact-criteria li").all_inner_texts()
    assert criteria == [
        "tool_trajectory_avg_score: EXACT match, threshold 1.0",
        "response_match_score: threshold 0.7",
        "trajectory_recall: threshold 1.0",
    ]
    # Metrics no case measured are named once, not drawn as cards of dashes.
    cards = page.locator(".card h3").all_inner_texts()
    assert "token_usage_v1" not in cards and "inference_call_count_v1" not in cards
    assert "token_usage_v1" in page.inner_text("#unmeasured")
    # Seconds read as milliseconds, the exact value in the tooltip.
    duration = page.locator(".card[data-metric='invocation_duration_v1'] .big")
    shown = duration.inner_text()
    exact = float(duration.get_attribute("title") or "nan")
    assert re.fullmatch(r"\d+ ms", shown) or (shown == "<1 ms" and exact < 0.001)
    if shown != "<1 ms":
        assert int(shown.split()[0]) == pytest.approx(exact * 1000, abs=0.5 + 1e-9)
    # The case table fits 1366 px: headers whole, no horizontal scrolling, "why" inside.
    assert _fits(page, "#case-scroller")
    assert _fits(page, ".row.head .cell")
    why = page.locator("#case-scroller .body .row .cell.reason").first.bounding_box()
    scroller = page.locator("#case-scroller").bounding_box()
    assert why["x"] + why["width"] <= scroller["x"] + scroller["width"]
    # The link to the comparison with the run before.
    link = page.locator("#compare-previous")
    assert "(baseline)" in link.inner_text()
    link.click()
    page.wait_for_selector("#verdict")
    assert base in page.url and terse in page.url
    first = _page(browser, f"{served}/runs/{base}")
    first.page.wait_for_selector("#summary")
    assert "first run of this eval set" in first.page.inner_text("#compare-previous")
    for watched in (w, first):
        assert watched.errors == [] and watched.outside() == []


def test_the_case_page_is_a_timeline_with_previous_and_next(
    stored: tuple[str, str, str], browser: Any, tmp_path: Path
) -> None:
    served, base, _terse = stored
    w = _page(browser, f"{served}/runs/{base}#case/{FAHRENHEIT}")
    page = w.page
    page.wait_for_selector("#case-page")
    _shot(page, tmp_path, "case")
    kinds = page.eval_on_selector_all(
        "#turn-1 .timeline > li", "items => items.map(i => i.className)"
    )
    assert kinds == ["event user", "event tool-call", "event tool-result tool-error",
                     "event agent-reply"]  # fmt: skip
    # The tool's error is on the page, not folded away.
    error = page.locator("#turn-1 .tool-error")
    assert error.is_visible() and "must be between 10 and 30" in error.inner_text()
    assert "set_temperature failed" in error.inner_text().lower()
    assert re.search(r"\d+ ms|\d\.\d\d s", page.inner_text("#turn-1 h3"))  # the turn's time
    # Null fields and unmeasured metrics are left out; no raw null anywhere.
    text = page.inner_text("#case-page")
    assert "null" not in text and "token_usage_v1" in page.inner_text("#not-measured")
    assert page.locator(".metric-table td:text-is('token_usage_v1')").count() == 0
    # A multi-turn case shows each turn's scores, without the unmeasured metrics.
    page.goto(f"{served}/runs/{base}#case/home_automation%2Ftv_follow_up%231")
    page.wait_for_function("document.querySelectorAll('#case-page .turn').length === 2")
    per_turn = page.inner_text("#turn-2 .scores")
    assert "response_match_score" in per_turn and "token_usage_v1" not in per_turn
    page.goto(f"{served}/runs/{base}#case/{FAHRENHEIT}")
    page.wait_for_selector("#case-page")
    # Previous and next case.
    page.click("#next-case")
    page.wait_for_function("location.hash.includes('energy_today')")
    assert page.inner_text("#case-page h1").startswith("energy_today")
    page.click("#prev-case")
    page.wait_for_function("location.hash.includes('set_temperature_fahrenheit')")
    page.goto(f"{served}/runs/{base}#case/home_automation%2Fturn_off_device_by_id%231")
    page.wait_for_selector("#case-page")
    assert page.locator("#prev-case").count() == 0 and "first case" in page.inner_text(".case-nav")
    assert w.errors == [] and w.outside() == []


def test_runs_page_has_metric_means_and_a_labelled_chart(
    stored: tuple[str, str, str], browser: Any, tmp_path: Path
) -> None:
    served, base, terse = stored
    w = _page(browser, served + "/")
    page = w.page
    _shot(page, tmp_path, "runs")
    means = page.locator(f"tr:has(a:text-is('{base}')) td.means div")
    assert means.count() == 3
    first = means.first
    assert re.fullmatch(r"tool_trajectory_avg_score \d\.\d\d", first.inner_text())
    assert float(first.get_attribute("title") or "nan") == pytest.approx(
        float(first.inner_text().split()[-1]), abs=0.005
    )
    chart = page.locator("svg[aria-label='pass rate over time']")
    labels = chart.locator("text").all_text_contents()
    assert "pass rate" in labels and "100%" in labels and "0%" in labels
    assert any(re.fullmatch(r"\d{4}-\d\d-\d\d", t) for t in labels)  # the runs' dates
    assert any(re.fullmatch(r"\d\d:\d\d", t) for t in labels)  # and times
    assert "run started (UTC), oldest to newest" in labels
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    assert _fits(page, "table.runs th")
    assert terse in page.inner_text("table.runs")
    assert w.errors == [] and w.outside() == []


def test_compare_page_names_the_runs_and_diffs_the_responses(
    stored: tuple[str, str, str], browser: Any, tmp_path: Path
) -> None:
    served, base, terse = stored
    w = _page(browser, f"{served}/compare?runs={base}&runs={terse}")
    page = w.page
    _shot(page, tmp_path, "compare")
    title = page.inner_text("section h2")
    assert title == f"{terse} (terse) against {base} (baseline)"
    row = page.locator("#compare-cases tr[data-change='regressed']").first
    diff = row.locator(".response-diff .rdiff")
    assert diff.is_visible()
    assert diff.locator("del").all_inner_texts()[0].startswith("OK,")
    assert "Done:" in diff.locator("ins").all_inner_texts()[0]
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    # Means rounded, the exact value in the tooltip; metrics neither run measured named once.
    cell = page.locator("section table").first.locator("tbody tr").first.locator("td.num").first
    assert re.fullmatch(r"\d\.\d{3}", cell.inner_text())
    assert float(cell.get_attribute("title") or "nan") == pytest.approx(
        float(cell.inner_text()), abs=0.0005
    )
    assert "token_usage_v1" in page.inner_text("#unmeasured")
    assert "token_usage_v1" not in page.locator("section table").first.inner_text()
    assert w.errors == [] and w.outside() == []


def stable_result() -> EvalResult:
    """The example's result with its timings fixed, so its picture is the same each run."""
    result = copy.deepcopy(home_result())
    for n, case in enumerate(result.cases):
        case.latency_s = 0.004 + 0.001 * (n % 5)
        for inv in case.invocations:
            if inv.actual is not None:
                inv.actual.latency_s = case.latency_s
        duration = case.metrics.get("invocation_duration_v1")
        if duration is not None:
            duration.score = case.latency_s
            duration.details = {"total_seconds": case.latency_s}
    return result


def test_the_readme_screenshot_is_the_report_as_it_is(browser: Any, tmp_path: Path) -> None:
    """Writes docs/report.png (the README's picture) from the code as it is now; the file
    changes only when the page does."""
    facts = RunFacts(
        name="home automation, nightly", status="COMPLETED", eval_set_ids=["home_automation"],
        agent="examples.home_automation.agent:root_agent",
        config={"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "EXACT"},
                             "response_match_score": 0.7, "trajectory_recall": 1.0}},
        created_at=datetime(2026, 1, 5, 9, 30, tzinfo=UTC),
        finished_at=datetime(2026, 1, 5, 9, 30, 2, tzinfo=UTC),
    )  # fmt: skip
    path = write_html(stable_result(), tmp_path / "report.html", run=facts)
    w = _page(browser, path.as_uri())
    w.page.wait_for_selector("#summary")
    w.page.evaluate("document.fonts.ready")
    fresh = tmp_path / "report.png"
    w.page.screenshot(path=str(fresh))
    assert w.errors == [] and w.outside() == []
    png = fresh.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == WIDTH
    assert int.from_bytes(png[20:24], "big") == HEIGHT
    if not SCREENSHOT.exists() or SCREENSHOT.read_bytes() != png:
        SCREENSHOT.write_bytes(png)


def test_every_step_kind_reads_in_the_timeline(browser: Any, tmp_path: Path) -> None:
    from assay.core.cases import (
        AgentMessage,
        AgentTransfer,
        Chunk,
        Retrieval,
        Step,
        ToolCall,
        ToolResponse,
        Usage,
    )

    result = copy.deepcopy(home_result())
    case = result.cases[0]
    turn = case.invocations[0].actual
    assert turn is not None
    turn.steps = [
        Step(tool_call=ToolCall(name="lookup", args={"q": "<b>x</b>"})),
        Step(tool_response=ToolResponse(name="lookup", response={"error": {"code": 7}},
                                        latency_s=0.0123)),
        Step(tool_response=ToolResponse(name="lookup", response=["a", 1])),
        Step(tool_response=ToolResponse(name="lookup", response={"output": "plain text"})),
        Step(agent_message=AgentMessage(author="planner", text="thinking")),
        Step(agent_transfer=AgentTransfer(target_agent="billing")),
        Step(variables_update={"k": None}),
        Step(retrieval=Retrieval(chunks=[Chunk(content="c")])),
    ]  # fmt: skip
    turn.error = "agent raised RuntimeError: boom"
    turn.model_latency_s, turn.tool_latency_s, turn.model_calls = 1.5, 0.25, 2
    turn.usage = Usage(input_tokens=10, output_tokens=3)
    path = write_html(result, tmp_path / "report.html")
    key = f"{case.eval_set_id}%2F{case.case_id}%231"
    w = _page(browser, path.as_uri() + "#case/" + key)
    page = w.page
    page.wait_for_selector("#case-page")
    events = page.locator("#turn-1 .timeline > li")
    texts = events.all_inner_texts()
    assert len(texts) == 11  # user, 8 steps, the agent's error, its reply
    assert 'lookup(q="<b>x</b>")' in texts[1]  # shown as text, never as markup
    assert page.locator("#turn-1 .timeline b").count() == 0
    assert "LOOKUP FAILED" in texts[2].upper() and '{"code":7}' in texts[2]
    assert "12 ms" in texts[2] and '["a",1]' in texts[3] and "plain text" in texts[4]
    assert "thinking" in texts[5] and "to billing" in texts[6] and "1 chunk" in texts[8]
    assert "boom" in texts[9] and events.nth(9).get_attribute("class") == "event agent-error"
    timing = page.inner_text("#turn-1 h3 .timing")
    assert "model 1.50 s" in timing and "tools 250 ms" in timing and "2 model calls" in timing
    assert "10 tokens in, 3 out" in timing
    assert w.errors == [] and w.outside() == []
