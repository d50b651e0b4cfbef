"""Unstable judged items in the viewer (`assay view`), in headless Chromium: the case
table marks them and filters on them, the case page shows how the samples split, the
metric card counts them, and the compare page counts their flips apart."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.metrics.sample_split import is_unstable, split_of
from assay.store import Store
from assay.store.reading import load_result
from assay.testing import JudgeServer
from assay.testing.standin_judges import seeded_coin

uvicorn = pytest.importorskip("uvicorn")
TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS / "report")]
from browser import browser, open_page  # noqa: E402
from view_server import serving  # noqa: E402

from assay.view import create_view_app  # noqa: E402

__all__ = ["browser"]
METRIC = "final_response_match_v2"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    folder = tmp_path_factory.mktemp("noise")
    url = f"sqlite:///{folder / 'runs.db'}"
    data = folder / "items.jsonl"
    rows = [
        {
            "id": f"q{i}",
            "prompt": f"question {i}",
            "response": f"answer {i}",
            "reference": f"ref {i}",
        }
        for i in range(16)
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {"OPENAI_API_KEY": "test-key"}
    ids = []
    with JudgeServer(seeded_coin(2)) as server:
        env["OPENAI_BASE_URL"] = server.openai_base_url
        for _ in range(2):
            result = CliRunner().invoke(
                app,
                [
                    "eval",
                    str(data),
                    "-m",
                    METRIC,
                    "--judge",
                    "openai:standin",
                    "--judge-samples",
                    "3",
                    "--store",
                    url,
                    "--no-cache",
                ],
                env=env,
            )
            assert result.exit_code in (0, 1), result.output
            with Store.open(url) as db:
                ids.append(db.list_runs(limit=1)[0].id)
    return url, ids


@pytest.fixture(scope="module")
def server(runs: tuple[str, list[str]]) -> Iterator[str]:
    with Store.open(runs[0]) as db, serving(create_view_app(db)) as url:
        yield url


def test_the_run_page_marks_filters_and_explains_unstable_items(
    runs: tuple[str, list[str]], server: str, browser: Any
) -> None:
    # `runs` first: its `assay eval` runs an event loop, which cannot start inside the
    # sync Playwright's.
    url, ids = runs
    with Store.open(url) as db:
        result = load_result(db, db.get_run(ids[0]))
    unstable = [c for c in result.cases if is_unstable(c.metrics[METRIC].details)]
    assert unstable  # three coin flips straddle the threshold three times in four
    w = open_page(browser, f"{server}/runs/{ids[0]}")
    page = w.page
    page.wait_for_selector("#case-scroller .body .row")
    card = page.inner_text(f".card[data-metric='{METRIC}']")
    assert f"~ {len(unstable)} unstable" in card
    page.select_option("#judge-filter", "unstable")
    page.wait_for_function(
        f"document.querySelector('#row-count').textContent.startsWith('{len(unstable)} of')"
    )
    rows = page.locator("#case-scroller .body .row")
    assert rows.count() == len(unstable)
    assert page.locator("#case-scroller .body .row .unstable-mark").count() == len(unstable)
    rows.first.locator("a.case-link").click()
    page.wait_for_selector("#case-page")
    shown = page.inner_text("#case-page .badge.unstable")
    first = next(c for c in unstable if c.case_id in page.inner_text("#case-page"))
    passed, failed = split_of(first.metrics[METRIC].details) or (0, 0)
    assert shown == f"unstable {passed} pass / {failed} fail"
    assert w.errors == [] and w.outside() == []


def test_the_compare_page_counts_flips_of_unstable_items_apart(
    runs: tuple[str, list[str]], server: str, browser: Any
) -> None:
    from assay.report.compare import compare_results

    url, ids = runs
    with Store.open(url) as db:
        results = [load_result(db, db.get_run(i)) for i in ids]
    comparison = compare_results(*results)
    w = open_page(browser, f"{server}/compare?runs={ids[0]}&runs={ids[1]}")
    page = w.page
    page.wait_for_selector("#verdict")
    flips = page.locator("#compare-cases tr.case-row[data-change='unstable flip']")
    assert flips.count() == len(comparison.unstable_flips)
    # Each case flips through noise about half the time (a pass or a fail of three coin
    # flips, each side unstable three times in four): 16 cases without one is 1 in 20,000.
    assert comparison.unstable_flips
    verdict = page.inner_text("#verdict")
    count = len(comparison.unstable_flips)
    assert f"{count} flip{'' if count == 1 else 's'} of unstable items" in verdict
    assert w.errors == [] and w.outside() == []
