"""The HTML case page of a case whose agent raised shows its traceback, in Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser import browser, open_page
from home_runs import home_result

from assay.report.html import write_html

__all__ = ["browser"]  # the fixture, imported for pytest

TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/me/boom_agent.py", line 6, in answer\n'
    "    return _backend(prompt)\n"
    "RuntimeError: backend <exploded> & [bold]gone[/bold]\n"
)


def test_the_case_page_shows_the_agents_traceback_as_text(browser: Any, tmp_path: Path) -> None:
    result = home_result()
    case, other = result.cases[0], result.cases[1]
    case.error = "agent raised RuntimeError: backend <exploded> & [bold]gone[/bold]"
    case.traceback = TRACEBACK
    path = write_html(result, tmp_path / "report.html")
    w = open_page(browser, path.as_uri() + f"#case/{case.eval_set_id}%2F{case.case_id}%231")
    w.page.wait_for_selector("#case-page pre#traceback")
    # Kept as it is: lines, markup-looking text and all.
    assert w.page.inner_text("pre#traceback").rstrip("\n") == TRACEBACK.rstrip("\n")
    assert w.page.locator("pre#traceback b, pre#traceback bold").count() == 0
    # A case whose agent did not raise has none.
    w.page.goto(path.as_uri() + f"#case/{other.eval_set_id}%2F{other.case_id}%231")
    w.page.wait_for_selector("#case-page")
    assert w.page.locator("#traceback").count() == 0
    assert w.errors == []
