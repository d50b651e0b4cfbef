"""`assay view` in a real server, driven by headless Chromium; its errors over HTTP."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.store import Store

uvicorn = pytest.importorskip("uvicorn")
# The HTML report's browser helper and the CLI tests' agent variants, shared, not copied.
TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS / "report"), str(TESTS / "cli")]
from browser import browser, open_page  # noqa: E402
from view_server import serving  # noqa: E402

from assay.view import create_view_app  # noqa: E402  (needs the service extra)

__all__ = ["browser"]
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "home_automation" / "home.evalset.json"


def _eval(store: str, agent: str) -> str:
    result = CliRunner().invoke(app, ["eval", str(EXAMPLE), "--agent", agent, "--store", store])
    assert result.exit_code == 1, result.output
    with Store.open(store) as db:
        return db.list_runs(limit=1)[0].id


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    url = f"sqlite:///{tmp_path_factory.mktemp('view') / 'runs.db'}"
    base = _eval(url, "examples.home_automation.agent:root_agent")
    worse = _eval(url, "home_variants:forgetful_agent")
    return url, base, worse


@pytest.fixture(scope="module")
def server(runs: tuple[str, str, str]) -> Iterator[str]:
    with Store.open(runs[0]) as db, serving(create_view_app(db)) as url:
        yield url


def test_assay_serve_mounts_the_view_behind_api_keys(runs: tuple[str, str, str]) -> None:
    from assay.service.app import create_app

    url, base, _worse = runs
    with Store.open(url) as db:
        _info, secret = db.api_keys.create("viewer")
        with serving(create_app(db)) as service, httpx.Client(base_url=service) as client:
            assert client.get("/ui/").status_code == 401
            page = client.get("/ui/", headers={"Authorization": f"Bearer {secret}"})
            assert page.status_code == 200 and base in page.text
            assert f'href="/ui/runs/{base}"' in page.text  # links stay under /ui
            report = client.get(f"/ui/runs/{base}", headers={"Authorization": f"Bearer {secret}"})
            assert report.status_code == 200 and 'id="assay-data"' in report.text


def test_runs_run_case_and_compare_pages(
    runs: tuple[str, str, str], server: str, browser: Any
) -> None:
    # The runs are made before the browser starts: Playwright's sync API keeps an
    # event loop in this thread, which `assay eval` (asyncio.run) must not meet.
    _url, base, worse = runs
    w = open_page(browser, server + "/")
    page = w.page
    ids = page.locator("table.runs td.id").all_inner_texts()
    assert ids == [worse, base]  # full ids, newest first
    assert page.locator("svg[aria-label='pass rate over time'] circle").count() == 2
    # A run: the report page of the stored run.
    page.click(f'td.id a:text-is("{base}")')
    page.wait_for_selector("#summary")
    assert page.inner_text("#summary").startswith("10 passed, 4 failed")
    page.click("#case-scroller a.case-link >> text=two_devices_off")
    page.wait_for_selector("#case-page")
    assert 'device_id="device_4"' in page.inner_text("tr.call.missing")
    # A case has its own URL.
    case = open_page(browser, f"{server}/runs/{base}/cases/home_automation%2Ftwo_devices_off%231")
    case.page.wait_for_selector("#case-page")
    assert case.page.locator("#case-page").get_attribute("data-key") == (
        "home_automation/two_devices_off#1"
    )
    # Compare: select both runs on the runs page; the regressed case is listed first.
    page.goto(server + "/")
    page.check(f"input[value='{base}']")
    page.check(f"input[value='{worse}']")
    page.click("#compare-button")
    page.wait_for_selector("#verdict")
    assert page.inner_text("#verdict").startswith(
        "Regression: 14 cases in common, 13 unchanged, 1 newly failing"
    )
    first = page.locator("#compare-cases tbody tr").first
    assert first.get_attribute("data-change") == "regressed"
    assert "turn_off_device_by_id" in first.inner_text()
    assert "missing call set_device_info" in first.inner_text()
    for watched in (w, case):
        assert watched.errors == [], watched.errors
        assert watched.outside() == [], watched.outside()


def test_filters_and_bad_references_over_http(server: str, runs: tuple[str, str, str]) -> None:
    _url, base, worse = runs
    with httpx.Client(base_url=server) as client:
        listed = client.get("/", params={"agent": "forgetful"})
        assert worse in listed.text and base not in listed.text
        assert base in client.get("/", params={"eval_set": "home", "status": "completed"}).text
        assert client.get("/", params={"since": "yesterday"}).status_code == 400
        unknown = client.get("/", params={"status": "done"})
        assert unknown.status_code == 400 and "CANCELLED" in unknown.text  # names the choices
        cancelled = client.get("/", params={"status": "cancelled"})
        assert cancelled.status_code == 200 and base not in cancelled.text
        assert '<option value="CANCELLED" selected>' in cancelled.text
        missing = client.get("/runs/zzzz")
        assert missing.status_code == 404 and "no run id starts with" in missing.text
        common = base[: next(i for i, (a, b) in enumerate(zip(base, worse, strict=True)) if a != b)]
        assert client.get(f"/runs/{common}").status_code == 400  # ambiguous
        assert client.get("/compare", params={"runs": base}).status_code == 400
        ok = client.get("/compare", params=[("runs", base), ("runs", worse)])
        assert ok.status_code == 200 and 'data-change="regressed"' in ok.text
        redirect = client.get("/runs/latest/cases/x%2Fy%231", follow_redirects=False)
        assert redirect.status_code == 307
        assert redirect.headers["location"] == f"/runs/{worse}#case/x%2Fy%231"


def test_view_command_checks_its_input(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["view", "--store", f"sqlite:///{tmp_path / 'no.db'}",
                                  "--no-open"])  # fmt: skip
    assert missing.exit_code == 2 and "does not exist" in missing.output
    exposed = runner.invoke(app, ["view", "--host", "0.0.0.0", "--no-open"])
    assert exposed.exit_code == 2 and "loopback" in exposed.output
