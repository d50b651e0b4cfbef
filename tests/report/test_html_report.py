"""The self-contained HTML report, opened from disk in a real headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from browser import Watched, browser, open_page
from home_runs import home_result

from assay.report.html import render_html, write_html

__all__ = ["browser"]  # the fixture, imported for pytest
REPO = Path(__file__).resolve().parents[2]


def _data(text: str) -> dict[str, Any]:
    raw = re.search(r'<script type="application/json" id="assay-data">(.*?)</script>', text, re.S)
    assert raw is not None
    return json.loads(raw.group(1))  # type: ignore[no-any-return]


def test_the_report_is_one_offline_file_with_the_run_data() -> None:
    text = render_html(home_result(), commit="abc123")
    assert "<script src" not in text and "<link" not in text  # everything inline
    assert re.search(r"""(src|href)=["']https?://""", text) is None
    data = _data(text)
    assert data["header"]["commit"] == "abc123"
    assert data["header"]["counts"] == {"PASSED": 10, "FAILED": 4, "NOT_EVALUATED": 0}
    # The config's criteria first (informational metrics an ADK config adds follow).
    assert [m["name"] for m in data["metrics"]][:3] == [
        "tool_trajectory_avg_score", "response_match_score", "trajectory_recall",
    ]  # fmt: skip
    response = data["metrics"][1]
    assert response["threshold"] == 0.7 and response["passed"] == 11
    assert len(response["ci95"]) == 2 and sum(response["histogram"]) == 14
    calls = data["details"]["home_automation/two_devices_off#1"]["invocations"][0]["calls"]
    assert [c["mark"] for c in calls] == ["match", "missing"]
    # Hostile text in the data cannot close the script element.
    result = home_result()
    case = result.cases[0]
    original = case.case_id
    case.case_id = "</script><script>alert(1)</script>"
    try:
        hostile = render_html(result)
    finally:
        case.case_id = original
    assert hostile.count("</script>") == 2  # the data block and the code block


def _open(browser: Any, path: Path, fragment: str = "") -> Watched:
    return open_page(browser, path.as_uri() + fragment)


def test_failing_case_shows_missing_extra_and_wrong_argument(browser: Any, tmp_path: Path) -> None:
    path = write_html(home_result(), tmp_path / "report.html")
    w = _open(browser, path)
    page = w.page
    assert page.inner_text("#summary").startswith("10 passed, 4 failed, 0 not evaluated")
    # The failure analysis links each count to its cases.
    page.click("text=1 missing call")
    page.wait_for_function("document.querySelector('#row-count').textContent.startsWith('1 of')")
    rows = page.locator("#case-scroller .body .row")
    assert rows.count() == 1 and "two_devices_off" in rows.first.inner_text()
    rows.first.locator("a.case-link").click()
    page.wait_for_selector("#case-page")
    missing = page.locator("tr.call.missing")
    assert missing.count() == 1
    assert 'device_id="device_4"' in missing.inner_text()
    assert "MISSING CALL" in missing.inner_text().upper()
    page.click("#back")
    # Search and status filter narrow the virtual table; sorting works.
    page.fill("#search", "fahrenheit")
    page.wait_for_function("document.querySelector('#row-count').textContent.startsWith('1 of')")
    page.click("#case-scroller a.case-link")
    page.wait_for_selector("#case-page")
    wrong = page.locator("tr.call.args .wrong-arg")
    assert wrong.all_inner_texts() == ["temperature=22", "temperature=72"]
    assert "temperature: expected 22, got 72" in page.inner_text("tr.call.args")
    # A deep link opens a case directly.
    extra = _open(browser, path, "#case/" + "home_automation%2Fconditional_switch_off%231")
    extra.page.wait_for_selector("#case-page")
    assert 'get_device_info(device_id="device_1")' in extra.page.inner_text("tr.call.extra")
    for watched in (w, extra):
        assert watched.errors == []
        assert watched.outside() == []


def test_table_filters_and_sorts(browser: Any, tmp_path: Path) -> None:
    path = write_html(home_result(), tmp_path / "report.html")
    w = _open(browser, path)
    page = w.page
    page.select_option("#status-filter", "FAILED")
    page.wait_for_function("document.querySelector('#row-count').textContent.startsWith('4 of')")
    page.select_option("#status-filter", "")
    page.select_option("#metric-filter", "trajectory_recall")
    page.wait_for_function("document.querySelector('#row-count').textContent.startsWith('2 of')")
    page.select_option("#metric-filter", "")
    page.click("button[data-sort='m:response_match_score']")
    first = page.locator("#case-scroller .body .row").first.inner_text()
    assert "set_temperature_fahrenheit" in first  # the lowest response score
    assert w.errors == [] and w.outside() == []


def test_a_scenario_case_page_says_why_the_conversation_ended(browser: Any, tmp_path: Path) -> None:
    from assay.store._document import encode_document, expand_document

    result = home_result()
    case = result.cases[0]
    case.conversation = {
        "stopped_by": "max_turns", "user_turns": 5, "max_turns": 5, "persona": "impatient",
        "user_model": "openai:user-sim", "initiator": "USER", "simulator_calls": 5,
    }  # fmt: skip
    # Stored and read back unchanged.
    assert expand_document(json.loads(encode_document(case))) == case.to_dict()
    path = write_html(result, tmp_path / "report.html")
    key = f"{case.eval_set_id}%2F{case.case_id}%231"
    w = _open(browser, path, "#case/" + key)
    w.page.wait_for_selector("#case-page #conversation")
    text = w.page.inner_text("#conversation")
    assert "Ended: it reached the turn limit (max_turns)." in text
    assert "persona impatient" in text and "5 of at most 5 user turns" in text
    # A case without a conversation has no such section.
    other = result.cases[1]
    w.page.goto(path.as_uri() + f"#case/{other.eval_set_id}%2F{other.case_id}%231")
    w.page.wait_for_selector("#case-page")
    assert w.page.locator("#conversation").count() == 0
    assert w.errors == []
