"""The review queue in a real Chromium (issue #35): clicks and keys store labels that
`assay labels list` shows, filters narrow the queue, progress and people's agreement
are shown, the run page carries the judge-against-people numbers; a post without the
page's token (or from a non-loopback Host) is refused; behind `assay serve`'s /ui the
label is the API key's name's."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("uvicorn")
TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS / "report"), str(TESTS / "store"), str(Path(__file__).parent)]
from browser import browser, open_page  # noqa: E402
from label_samples import ITEMS, METRIC, case_id, judge_wrong, judged_run, unstable  # noqa: E402
from typer.testing import CliRunner  # noqa: E402
from view_server import serving  # noqa: E402

from assay.cli import app as cli  # noqa: E402
from assay.service.app import create_app  # noqa: E402
from assay.store import Store  # noqa: E402
from assay.store.labels import local_author  # noqa: E402
from assay.view import create_view_app  # noqa: E402

__all__ = ["browser"]


class Viewer:
    def __init__(self, url: str, store_url: str, run: str) -> None:
        self.url, self.store_url, self.run = url, store_url, run

    def labels(self) -> list[dict[str, Any]]:
        """What `assay labels list RUN --json` prints."""
        done = CliRunner().invoke(cli, ["labels", "list", self.run, "--json", "--store",
                                        self.store_url])  # fmt: skip
        assert done.exit_code == 0, done.output
        return [json.loads(line) for line in done.output.splitlines()]


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    url = f"sqlite:///{tmp_path_factory.mktemp('review') / 'runs.db'}"
    with Store.open(url) as db:
        run = judged_run(db)
        with serving(create_view_app(db, local_writes=True)) as base:
            yield Viewer(base, url, run)


def _case(page: Any) -> str:
    return str(page.get_attribute("#case", "data-case"))


def test_a_click_and_the_keys_store_labels(viewer: Viewer, browser: Any, tmp_path: Path) -> None:
    w = open_page(browser, f"{viewer.url}/runs/{viewer.run}/review")
    page = w.page
    assert _case(page) == f"sums/{case_id(0)}"
    assert "you labelled 0 of 60" in page.inner_text("#progress")
    assert page.locator("section.item .rationale").inner_text().startswith("the answer")
    assert "5 samples" in page.locator("section.item .samples").inner_text()
    page.screenshot(path=str(tmp_path / "review.png"))
    # A click on "disagree" with a note stores the opposite of the judge's verdict.
    page.fill("section.item textarea.note", "0 + 0 is 0, the agent said 1")
    with page.expect_navigation():  # the post's answer is the next page
        page.click("section.item button.disagree")
    labels = viewer.labels()
    assert [(x["case"], x["verdict"], x["author"], x["note"]) for x in labels] == [
        (f"sums/{case_id(0)}", "fail", local_author(), "0 + 0 is 0, the agent said 1")
    ]  # the judge passed item 0: its answer is wrong, but the judge errs on every fifth
    # The queue moved on to the next case not labelled yet.
    assert _case(page) == f"sums/{case_id(1)}"
    # Keys: "a" agrees with the judge, "x" fails, "n"/"p" move without labelling.
    page.keyboard.press("a")
    page.wait_for_selector(f"#case[data-case='sums/{case_id(2)}']")
    page.keyboard.press("n")
    page.wait_for_selector(f"#case[data-case='sums/{case_id(3)}']")
    page.keyboard.press("p")
    page.wait_for_selector(f"#case[data-case='sums/{case_id(2)}']")
    page.keyboard.press("x")
    page.wait_for_selector(f"#case[data-case='sums/{case_id(3)}']")
    # Typing a note does not trigger the keys.
    page.keyboard.press("e")
    page.keyboard.type("a d x")
    assert page.input_value("section.item textarea.note") == "a d x"
    assert _case(page) == f"sums/{case_id(3)}"
    page.keyboard.press("Escape")
    page.fill("section.item input.score", "0.95")
    page.click("section.item button.set-score")
    page.wait_for_selector(f"#case[data-case='sums/{case_id(4)}']")
    found = {x["case"]: (x["label"], x["verdict"], x["note"]) for x in viewer.labels()}
    assert found[f"sums/{case_id(1)}"] == ("pass", "pass", None)
    assert found[f"sums/{case_id(2)}"] == ("fail", "fail", None)
    assert found[f"sums/{case_id(3)}"] == ("0.95", "pass", "a d x")
    assert w.errors == [] and w.outside() == []
    page.context.close()


def test_sixty_items_by_keyboard_filters_and_the_run_page(viewer: Viewer, browser: Any) -> None:
    w = open_page(browser, f"{viewer.url}/runs/{viewer.run}/review?filter=unlabelled")
    page = w.page
    # Label every item left, agreeing with the judge (so people and judge disagree only
    # where the earlier test disagreed).
    while page.locator("#empty").count() == 0:
        before = _case(page)
        page.keyboard.press("a")
        page.wait_for_function(
            "b => !document.querySelector('#case') || "
            "document.querySelector('#case').dataset.case !== b",
            arg=before,
        )
    assert len(viewer.labels()) == ITEMS
    progress = page.inner_text("#progress")
    assert "you labelled 60 of 60" in progress
    # Filters narrow the queue: unstable verdicts, and disagreements (items 0 and 2, failed
    # by the person where the judge passed them, and item 3, scored 0.95 where it failed).
    page.click("#filter-unstable")
    page.wait_for_selector("#queue-size")
    assert int(page.inner_text("#queue-size")) == sum(unstable(k) for k in range(ITEMS))
    assert page.locator("section.item h3 .unstable").count() == 1
    page.click("#filter-disagree")
    page.wait_for_selector("#queue-size")
    assert int(page.inner_text("#queue-size")) == 3
    assert _case(page) == f"sums/{case_id(0)}"
    page.click("#filter-all")
    assert int(page.inner_text("#queue-size")) == ITEMS
    # The run page shows the run's judge against the labels, with intervals.
    page.goto(f"{viewer.url}/runs/{viewer.run}")
    row = page.locator(f"#agreement tr[data-metric='{METRIC}']")
    assert row.count() == 1
    assert page.locator("#agreement td.accuracy").inner_text().startswith("0.950 [")
    assert page.locator("#review-link").count() == 1
    assert w.errors == [] and w.outside() == []
    assert judge_wrong(0)  # what the disagreement on item 0 rests on
    page.context.close()


def test_a_post_without_the_token_or_from_another_host_is_refused(viewer: Viewer) -> None:
    target = f"{viewer.url}/runs/{viewer.run}/review"
    # Item 11: the judge and the person (test above) passed it.
    form = {"case": case_id(11), "metric": METRIC, "action": "fail", "csrf_token": "guess"}
    refused = httpx.post(target, data=form)
    assert refused.status_code == 403 and "token" in refused.text
    page = httpx.get(f"{target}?filter=all&case={case_id(11)}").text
    token = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    rebound = httpx.post(target, data={**form, "csrf_token": token},
                         headers={"Host": "evil.example:80"})  # fmt: skip
    assert rebound.status_code == 403 and "loopback" in rebound.text
    unknown = httpx.post(target, data={**form, "csrf_token": token, "metric": "coherence"})
    assert unknown.status_code == 404 and "coherence" in unknown.text
    bad = httpx.post(target, data={**form, "csrf_token": token, "action": "score", "score": "9"})
    assert bad.status_code == 400 and "outside the metric" in bad.text
    mine = {x["case"]: x["verdict"] for x in viewer.labels()}
    assert mine[f"sums/{case_id(11)}"] == "pass"
    ok = httpx.post(target, data={**form, "csrf_token": token})
    assert ok.status_code == 303
    assert {x["case"]: x["verdict"] for x in viewer.labels()}[f"sums/{case_id(11)}"] == "fail"


def test_ui_of_assay_serve_labels_as_the_keys_name(tmp_path: Path, browser: Any) -> None:
    url = f"sqlite:///{tmp_path / 'served.db'}"
    with Store.open(url) as db:
        run = judged_run(db, items=4)
        _, key = db.api_keys.create("reviewer-rita")
        with serving(create_app(db)) as base:
            page = browser.new_page()
            page.goto(f"{base}/ui/runs/{run}/review")
            page.fill("#api-key", key)
            page.click("#login-button")
            page.wait_for_selector("#case")
            assert page.inner_text("#author") == "reviewer-rita"
            page.click("section.item button.agree")
            page.wait_for_selector(f"#case[data-case='sums/{case_id(1)}']")
            # The session's CSRF token is required.
            page.evaluate("document.querySelector('section.item input[name=csrf_token]')"
                          ".value = 'forged'")  # fmt: skip
            page.click("section.item button.fail")
            assert "CSRF" in page.inner_text("#error")
            page.context.close()
            # A Bearer key labels as its own name (no cookie, no CSRF needed).
            _, bob = db.api_keys.create("bob")
            done = httpx.post(f"{base}/ui/runs/{run}/review",
                              data={"case": case_id(2), "metric": METRIC, "action": "pass"},
                              headers={"Authorization": f"Bearer {bob}"})  # fmt: skip
            assert done.status_code == 303
        found = [(x.author, x.case_id) for x in db.labels.list_labels([run])]
    assert found == [("reviewer-rita", case_id(0)), ("bob", case_id(2))]


def _two_metric_run(db: Store) -> str:
    from assay.core import Turn, UserInput
    from assay.core.results import CaseResult, InvocationResult, MetricResult, Score, Status

    second = "rubric_based_final_response_quality_v1"
    results = []
    for k in range(2):
        turn = Turn(user_input=UserInput(text=f"question {k}"), final_response=f"answer {k}")
        one = Score(1.0, "valid", {"samples": 3, "agreement": 1.0})
        two = Score(0.2, "misses the rubric", {"samples": 3, "agreement": 2 / 3})
        results.append(CaseResult(
            case_id=f"c{k}", status=Status.FAILED, eval_set_id="two",
            metrics={METRIC: MetricResult(METRIC, 1.0, 0.8, Status.PASSED, per_invocation=[one]),
                     second: MetricResult(second, 0.2, 0.8, Status.FAILED, per_invocation=[two])},
            invocations=[InvocationResult(0, None, turn, None, {METRIC: one, second: two})],
        ))  # fmt: skip
    run = db.start_run(eval_set_ids=["two"], metrics=[METRIC, second], config={}, agent=None,
                       runs=1)  # fmt: skip
    db.add_case_results(run, results)
    return run


def test_number_keys_pick_the_metric_of_a_case(tmp_path: Path, browser: Any) -> None:
    url = f"sqlite:///{tmp_path / 'two.db'}"
    with Store.open(url) as db:
        run = _two_metric_run(db)
        with serving(create_view_app(db, local_writes=True)) as base:
            w = open_page(browser, f"{base}/runs/{run}/review")
            page = w.page
            assert page.locator("section.item").count() == 2
            assert page.locator("section.item.selected").get_attribute("data-number") == "1"
            # The second metric's samples split: it is marked unstable.
            assert page.locator("section.item[data-number='2'] .unstable").count() == 1
            page.keyboard.press("2")
            with page.expect_navigation():  # the post's answer is the next page
                page.keyboard.press("d")  # disagree with the judge's fail on the second metric
            # Still case c0 (its first metric is not labelled), that metric selected.
            assert _case(page) == "two/c0"
            assert page.locator("section.item.selected").get_attribute("data-number") == "1"
            page.keyboard.press("a")
            page.wait_for_selector("#case[data-case='two/c1']")
            assert w.errors == []
            page.context.close()
        found = {(x.case_id, x.metric): x.verdict for x in db.labels.list_labels([run])}
    assert found == {
        ("c0", "rubric_based_final_response_quality_v1"): "pass",
        ("c0", METRIC): "pass",
    }


def test_serve_without_keys_writes_as_assay_view_does(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'open.db'}"
    with Store.open(url) as db:
        run = judged_run(db, items=2)
        with serving(create_app(db, auth=False)) as base:
            target = f"{base}/ui/runs/{run}/review"
            form = {"case": case_id(1), "metric": METRIC, "action": "pass"}
            assert httpx.post(target, data=form).status_code == 403
            page = httpx.get(target).text
            token = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
            done = httpx.post(target, data={**form, "csrf_token": token})
            assert done.status_code == 303
        [label] = db.labels.list_labels([run])
    assert (label.author, label.case_id, label.verdict) == (local_author(), case_id(1), "pass")
