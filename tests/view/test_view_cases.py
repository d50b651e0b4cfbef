"""The local viewer's authoring pages in Chromium: blessing a case run shows the diff,
then writes the eval set file; posts without the viewer's token are refused."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.formats import load
from assay.store import Store

uvicorn = pytest.importorskip("uvicorn")
TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS / "report")]
from browser import browser, open_page  # noqa: E402
from view_server import serving  # noqa: E402

from assay.view import create_view_app  # noqa: E402  (needs the service extra)

__all__ = ["browser"]
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "home_automation"
TRACES = REPO / "examples" / "traces" / "mlflow_travel.traces.jsonl"
KEY = "home_automation/two_devices_off#1"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("authoring")
    shutil.copy(EXAMPLE / "home.evalset.json", root / "home.evalset.json")
    return root


@pytest.fixture(scope="module")
def runs(folder: Path) -> tuple[str, str, str]:
    url = f"sqlite:///{folder / 'runs.db'}"
    args = ["--agent", "examples.home_automation.agent:root_agent", "--store", url]
    result = CliRunner().invoke(app, ["eval", str(folder / "home.evalset.json"), *args])
    assert result.exit_code == 1, result.output
    result = CliRunner().invoke(app, ["eval", str(TRACES), "--store", url])
    assert result.exit_code in (0, 1), result.output
    with Store.open(url) as db:
        traced, home = (i.id for i in db.list_runs(limit=2))
    return url, home, traced


@pytest.fixture(scope="module")
def server(runs: tuple[str, str, str], folder: Path) -> Iterator[str]:
    with Store.open(runs[0]) as db, serving(create_view_app(db, cases_root=folder)) as url:
        yield url


def test_bless_shows_the_diff_then_writes_the_file(
    runs: tuple[str, str, str], server: str, folder: Path, browser: Any
) -> None:
    _url, home, _traced = runs
    target = folder / "home.evalset.json"
    original = target.read_text(encoding="utf-8")
    w = open_page(
        browser, f"{server}/runs/{home}#case/{KEY.replace('#', '%23').replace('/', '%2F')}"
    )
    page = w.page
    page.wait_for_selector("#case-page")
    page.click("#bless")
    page.wait_for_selector("#preview")
    page.fill("#file", "home.evalset.json")
    page.click("#preview")
    page.wait_for_selector("#diff")
    diff = page.inner_text("#diff")
    assert (
        '-                "text": "OK, the Living Room Light (device_1) and the Living Room TV'
        in diff
    )
    assert '+                "text": "OK, the Living Room Light (device_1) is now off."' in diff
    assert target.read_text(encoding="utf-8") == original  # shown, not written yet
    page.click("#save")
    page.wait_for_selector("#saved")
    blessed = {c.id: c for c in load(target).cases}["two_devices_off"]
    assert (blessed.reference or [])[
        0
    ].final_response == "OK, the Living Room Light (device_1) is now off."
    # the other cases kept their text
    before = json.loads(original)["eval_cases"]
    after = json.loads(target.read_text(encoding="utf-8"))["eval_cases"]
    assert [c for c in after if c["eval_id"] != "two_devices_off"] == [
        c for c in before if c["eval_id"] != "two_devices_off"
    ]
    # blessing it again: nothing to write
    page.go_back()
    page.go_back()
    page.wait_for_selector("#preview")
    page.click("#preview")
    page.wait_for_selector("#no-change")
    assert w.errors == [] and w.outside() == []


def test_new_case_from_a_traced_conversation(
    runs: tuple[str, str, str], server: str, folder: Path, browser: Any
) -> None:
    _url, _home, traced = runs
    target = folder / "traced.evalset.json"
    target.write_text('{\n  "eval_set_id": "traced",\n  "eval_cases": []\n}\n')
    key = "mlflow_travel%2Fhotel%231"
    w = open_page(browser, f"{server}/runs/{traced}#case/{key}")
    page = w.page
    page.wait_for_selector("#add-to-set")
    assert page.inner_text("#add-to-set") == "new case from this conversation"
    page.click("#add-to-set")
    page.fill("#file", "traced.evalset.json")
    page.click("#preview")
    page.wait_for_selector("#diff")
    assert '+      "eval_id": "hotel",' in page.inner_text("#diff")
    page.click("#save")
    page.wait_for_selector("#saved")
    assert [c.id for c in load(target).cases] == ["hotel"]
    assert w.errors == [] and w.outside() == []


def test_posts_without_the_token_or_outside_the_folder_are_refused(
    runs: tuple[str, str, str], server: str, folder: Path
) -> None:
    _url, home, _traced = runs
    target = folder / "home.evalset.json"
    before = target.read_bytes()
    action = f"{server}/runs/{home}/author/{KEY.replace('/', '%2F').replace('#', '%23')}"
    form = {"file": "home.evalset.json", "mode": "update", "step": "save"}
    refused = httpx.post(action, data=form)
    assert refused.status_code == 403 and "no valid token" in refused.text
    page = httpx.get(action)
    token = page.text.split('name="csrf" value="')[1].split('"')[0]
    other_origin = httpx.post(
        action, data={**form, "csrf": token}, headers={"Origin": "http://evil.example"}
    )
    assert other_origin.status_code == 403 and "another origin" in other_origin.text
    for host in ("localhost.evil.example", "127.0.0.1.evil.example", "evil.example"):
        rebound = httpx.post(action, data={**form, "csrf": token}, headers={"Host": host})
        assert rebound.status_code == 403 and "loopback address only" in rebound.text
    outside = httpx.post(action, data={**form, "csrf": token, "file": "../elsewhere.json"})
    assert outside.status_code == 400 and "outside the folder" in outside.text
    stale = httpx.post(action, data={**form, "csrf": token, "before": "0" * 64})
    assert stale.status_code == 409 and "changed since the diff was shown" in stale.text
    assert target.read_bytes() == before
    # `assay serve`'s /ui (no cases_root) has no authoring pages and no buttons
    with Store.open(runs[0]) as db, serving(create_view_app(db)) as plain:
        assert httpx.get(f"{plain}/runs/{home}/author/x").status_code == 404
        assert '"case_actions"' not in httpx.get(f"{plain}/runs/{home}").text


@pytest.mark.parametrize(
    "header,loopback",
    [
        ("127.0.0.1:8765", True),
        ("127.0.0.2", True),
        ("localhost:8765", True),
        ("LocalHost:8765", True),
        ("[::1]:8765", True),
        ("localhost.evil.example:8765", False),
        ("127.0.0.1.nip.example", False),
        ("[::2]:8765", False),
        ("", False),
    ],
)
def test_only_loopback_hosts_may_post(header: str, loopback: bool) -> None:
    from assay.view.writes import loopback_host

    assert loopback_host(header) is loopback
