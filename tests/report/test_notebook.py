"""`assay.evaluate(...)` results render themselves in Jupyter (`_repr_html_`)."""

from __future__ import annotations

import html
import re

from home_runs import HOME_EVALSET

import assay
from assay.report.notebook import notebook_html


def test_evaluate_returns_a_result_that_renders_as_html() -> None:
    result = assay.evaluate(str(HOME_EVALSET), agent="examples.home_automation.agent:root_agent")
    text = result._repr_html_()  # type: ignore[attr-defined]
    assert "<strong>10 passed, 4 failed, 0 not evaluated</strong> (14 case runs)" in text
    assert text.count('<span class="badge FAILED">') == 4
    assert html.escape('missing call set_device_info(device_id="device_4"') in text
    assert "Failure causes: 1 wrong argument (set_temperature.temperature)" in text
    rows = re.findall(r"<tr><td>response_match_score</td><td class=\"num\">([0-9.]+)</td>", text)
    assert rows and 0.8 < float(rows[0]) < 0.95
    assert "<script" not in text  # notebooks may not run a result's scripts


def test_long_runs_are_cut_and_text_is_escaped() -> None:
    result = assay.evaluate(str(HOME_EVALSET), agent="examples.home_automation.agent:root_agent")
    result.cases[0].case_id = "<b>bold</b>"
    text = notebook_html(result, max_rows=3)
    assert "&lt;b&gt;bold&lt;/b&gt;" in text and "<b>bold</b>" not in text
    assert "11 more case runs" in text
