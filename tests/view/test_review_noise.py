"""The review queue and judge samples together, in headless Chromium: `assay eval
--judge-samples 5` against the coin-flip stand-in judge, then `assay view`'s review
queue: its "unstable verdicts" filter lists exactly the items the run marked unstable
(`assay.metrics.sample_split`), and each shows its per-sample scores."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.metrics.sample_split import SAMPLE_SCORES, is_unstable
from assay.store import Store
from assay.store.labels import case_ref
from assay.store.labels import is_unstable as review_unstable
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
SAMPLES = 5


class Judged:
    def __init__(self, url: str, run: str, documents: list[dict[str, Any]]) -> None:
        self.url, self.run, self.documents = url, run, documents

    def marked(self) -> dict[str, list[float]]:
        """The case runs the run marked unstable, with their per-sample scores."""
        out = {}
        for doc in self.documents:
            result = doc["metrics"][METRIC]
            if is_unstable(result.get("details")):
                ref = case_ref(doc.get("eval_set_id") or "", doc["case_id"], doc["run_index"])
                per = result["per_invocation"]
                out[ref] = [s for p in per for s in p["details"][SAMPLE_SCORES]]
        return out


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Judged:
    # Before the browser fixture: `assay eval` runs an event loop, which cannot start
    # inside the sync Playwright's.
    folder = tmp_path_factory.mktemp("review-noise")
    url = f"sqlite:///{folder / 'runs.db'}"
    data = folder / "items.jsonl"
    rows = [{"id": f"q{i}", "prompt": f"question {i}", "response": f"answer {i}",
             "reference": f"ref {i}"} for i in range(20)]  # fmt: skip
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with JudgeServer(seeded_coin(11)) as server:
        env = {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.openai_base_url}
        done = CliRunner().invoke(app, ["eval", str(data), "-m", METRIC, "--judge",
                                        "openai:coin", "--judge-samples", str(SAMPLES),
                                        "--store", url, "--no-cache"], env=env)  # fmt: skip
    assert done.exit_code in (0, 1), done.output
    with Store.open(url) as db:
        run = db.list_runs(limit=1)[0].id
        documents = list(db.case_results(run))
    return Judged(url, run, documents)


@pytest.fixture(scope="module")
def viewer(judged: Judged) -> Iterator[str]:
    with Store.open(judged.url) as db, serving(create_view_app(db, local_writes=True)) as base:
        yield base


def test_the_unstable_filter_lists_exactly_the_runs_unstable_items(
    judged: Judged, viewer: str, browser: Any
) -> None:
    marked = judged.marked()
    # Five coin flips straddle the threshold 15 times in 16.
    assert marked
    assert all(len(scores) == SAMPLES for scores in marked.values())
    w = open_page(browser, f"{viewer}/runs/{judged.run}/review?filter=unstable")
    page = w.page
    page.wait_for_selector("#queue-size")
    assert int(page.inner_text("#queue-size")) == len(marked)
    assert f"{len(marked)} unstable" in page.inner_text("#progress")
    seen: dict[str, str] = {}
    while True:
        ref = str(page.get_attribute("#case", "data-case"))
        if ref in seen:
            break
        section = page.locator(f"section.item[data-metric='{METRIC}']")
        assert section.locator("h3 .unstable").count() == 1, ref
        seen[ref] = section.locator(".samples").inner_text()
        if page.locator("#next").count() == 0:
            break
        page.click("#next")
        page.wait_for_function("r => document.querySelector('#case').dataset.case !== r", arg=ref)
    assert set(seen) == set(marked)
    for ref, shown in seen.items():
        expected = "scores " + ", ".join(f"{s:g}" for s in marked[ref])
        assert f"{SAMPLES} samples" in shown and expected in shown, (ref, shown)
    assert w.errors == [] and w.outside() == []
    page.context.close()


def test_the_queue_follows_the_runs_mark_not_the_pooled_scores() -> None:
    # Two invocations, each stable (all its samples on one side), on opposite sides of
    # the threshold: the run marks the item stable; the review queue must agree.
    result = {
        "status": "FAILED",
        "score": 0.5,
        "threshold": 1.0,
        "details": {
            "sample_split": {"pass": 3, "fail": 3},
            "unstable_invocations": 0,
            "unstable": False,
        },
        "per_invocation": [
            {"details": {"samples": 3, "sample_scores": [1.0, 1.0, 1.0], "unstable": False}},
            {"details": {"samples": 3, "sample_scores": [0.0, 0.0, 0.0], "unstable": False}},
        ],
    }
    assert not is_unstable(result["details"])
    assert review_unstable(result) is False
    result["details"]["unstable"] = True
    assert review_unstable(result) is True
