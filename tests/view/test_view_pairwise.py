"""The viewer's compare page shows `assay compare --judge`'s pairwise verdicts: the form
filled in headless Chromium, the verdicts read from the store's judge cache."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.store import Store
from assay.testing import JudgeServer
from assay.testing.standin_judges import longer_answer

uvicorn = pytest.importorskip("uvicorn")
TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS / "report"), str(TESTS / "cli")]
from browser import browser, open_page  # noqa: E402
from view_server import serving  # noqa: E402

from assay.view import create_view_app  # noqa: E402  (needs the service extra)

__all__ = ["browser"]
runner = CliRunner()
#: (case id, run A's answer, run B's answer): B is longer in c1 and c2, A in c3
ANSWERS = [("c1", "On.", "The light is on now."), ("c2", "Off.", "Both lamps are off."),
           ("c3", "It is 21 degrees in the hall.", "21.")]  # fmt: skip


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str, str]]:
    """(store URL, run A, run B, the judge's base URL) after `assay compare --judge`
    judged them (the stand-in is stopped: the page must not need it)."""
    root = tmp_path_factory.mktemp("pairwise")
    store = f"sqlite:///{root / 'runs.db'}"
    for side, column in (("a", 1), ("b", 2)):
        (root / side).mkdir()
        rows = [{"id": c[0], "prompt": "Do it.", "response": c[column]} for c in ANSWERS]
        (root / side / "home.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        runner.invoke(app, ["eval", str(root / side / "home.jsonl"), "--store", store])
    with Store.open(store) as db:
        b, a = (info.id for info in db.list_runs(limit=2))
    saved = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = "unused"
    try:
        with JudgeServer(longer_answer) as server:
            base_url = server.openai_base_url
            result = runner.invoke(app, ["compare", a, b, "--store", store, "--judge",
                                         "openai:standin", "--base-url", base_url])  # fmt: skip
            assert result.exit_code == 0, result.output
        yield store, a, b, base_url
    finally:
        if saved is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = saved


def test_the_compare_page_form_shows_the_pairwise_verdicts(
    judged: tuple[str, str, str, str], browser: Any
) -> None:
    store, a, b, base_url = judged
    with Store.open(store) as db, serving(create_view_app(db)) as url:
        w = open_page(browser, f"{url}/compare?runs={a}&runs={b}")
        page = w.page
        assert page.locator("#pairwise-stats").count() == 0
        page.fill("#pairwise-judge", "openai:standin")
        page.fill("#pairwise-base_url", base_url)
        page.click("#pairwise-form button")
        page.wait_for_selector("#pairwise-stats")
        assert page.inner_text("#pairwise-win-rate") == "0.67"
        assert page.inner_text("#pairwise-inconsistent") == "0"
        choices = page.eval_on_selector_all(
            "tr.pairwise-row", "rows => rows.map(r => r.dataset.choice)"
        )
        assert sorted(choices) == ["A", "B", "B"]
        # A's win is listed first, and the form keeps what was asked.
        assert choices[0] == "A"
        assert page.input_value("#pairwise-judge") == "openai:standin"
        assert "B wins 2, A wins 1, ties 0" in page.inner_text("#pairwise-summary")
        assert not w.errors and not w.outside()
