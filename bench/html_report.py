"""The HTML report on a big run: build time, file size, and how fast Chromium shows it.

    python bench/html_report.py                 # 10,000 case runs (from the repo root)
    python bench/html_report.py --cases 2000

Builds a run of N case runs by repeating the home-automation example's 14 results under
new ids (its four failure causes included), writes the report, opens it from disk in
headless Chromium (Debian's /usr/bin/chromium through Playwright) and measures:

- time to first render: navigation start until the case table shows its row count;
- scrolling: 200 jumps through the whole case table, each waiting for the next frame;
  the slowest frame and the mean are printed (a frozen page would show seconds);
- opening a case page and filtering the table by a cause.

Prints times; asserts only that the page rendered the right rows, without errors.
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

from assay.api import evaluate
from assay.core.results import EvalResult
from assay.report.html import write_html

ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "home_automation" / "home.evalset.json"


def big_result(n: int) -> EvalResult:
    base = evaluate(str(EXAMPLE), agent="examples.home_automation.agent:root_agent", store=None)
    cases = []
    for i in range(n):
        case = copy.deepcopy(base.cases[i % len(base.cases)])
        case.case_id = f"{case.case_id}_{i:05d}"
        cases.append(case)
    return EvalResult(base.summary, cases=cases, run_id="bench", metrics=base.metrics)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=10_000)
    args = parser.parse_args()
    result = big_result(args.cases)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        path = write_html(result, Path(tmp) / "big.html")
        build = time.perf_counter() - start
        size = path.stat().st_size
        print(f"cases: {args.cases}; build {build:.2f} s; file {size / 1e6:.1f} MB")
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.as_uri())
            page.wait_for_function(
                "document.querySelector('#row-count') && "
                "document.querySelector('#row-count').textContent.length > 0"
            )
            first = page.evaluate("performance.now()")
            rows = page.locator("#case-scroller .body .row").count()
            print(f"time to first render: {first:.0f} ms (DOM rows drawn: {rows})")
            frames = page.evaluate(
                """async () => {
                const s = document.getElementById('case-scroller');
                const times = [];
                for (let i = 0; i < 200; i++) {
                  const t0 = performance.now();
                  s.scrollTop = (s.scrollHeight * i) / 200;
                  s.dispatchEvent(new Event('scroll'));
                  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
                  times.push(performance.now() - t0);
                }
                return times;
              }"""
            )
            print(f"scroll: 200 jumps, mean frame {sum(frames) / len(frames):.1f} ms, "
                  f"slowest {max(frames):.1f} ms")  # fmt: skip
            t0 = time.perf_counter()
            page.select_option("#cause-filter", "missing call")
            page.wait_for_function(
                "document.querySelector('#row-count').textContent.indexOf(' of ') > 0"
            )
            print(f"filter by cause: {1000 * (time.perf_counter() - t0):.0f} ms "
                  f"({page.inner_text('#row-count')})")  # fmt: skip
            t0 = time.perf_counter()
            page.locator("#case-scroller a.case-link").first.click()
            page.wait_for_selector("#case-page")
            print(f"open a case page: {1000 * (time.perf_counter() - t0):.0f} ms")
            assert not errors, errors
            browser.close()


if __name__ == "__main__":
    main()
