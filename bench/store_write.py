"""Write-speed benchmark of the store (not collected by pytest; prints, asserts nothing).

    python bench/store_write.py [--results 100000] [--shape row|tools]
        [--url sqlite:////tmp/bench.db]

Writes `--results` case results in batches of 1,000 with `Store.add_case_results`, then
again through a `StoreRecorder` (as `assay eval` does), reads them back, and, as the
baseline, writes 5,000 the straightforward way (`CaseResult.to_dict()` rows through
SQLAlchemy's executemany). `row` results are Vertex-style dataset rows scored by seven
metrics (~3 KB of JSON each, like bench/score_rows.py); `tools` results are two-turn
tool-using conversations with three metrics (~3.8 KB).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import insert

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "store"))

from store_samples import weather_result

from assay.core import Step, ToolCall, Turn, UserInput
from assay.core.results import (
    CaseResult,
    EvalResult,
    InvocationResult,
    MetricResult,
    Score,
    Status,
)
from assay.store import Store, StoreRecorder
from assay.store.schema import case_results
from assay.store.types import utcnow

METRICS = [
    "trajectory_exact_match",
    "trajectory_in_order_match",
    "trajectory_any_order_match",
    "trajectory_precision",
    "trajectory_recall",
    "trajectory_single_tool_use",
    "response_match_score",
]


def row(i: int) -> CaseResult:
    def turn(response: str, tools: list[str]) -> Turn:
        calls = [Step(tool_call=ToolCall(name=t, args={"city": "Paris", "n": 2})) for t in tools]
        return Turn(
            user_input=UserInput(text=f"Plan trip {i}"), steps=calls, final_response=response
        )

    scores = {m: Score(float(i % 2)) for m in METRICS}
    return CaseResult(
        case_id=f"row-{i}",
        status=Status.PASSED if i % 2 else Status.FAILED,
        metrics={
            m: MetricResult(
                m, s.value, 1.0, Status.PASSED if s.value else Status.FAILED, per_invocation=[s]
            )
            for m, s in scores.items()
        },
        invocations=[
            InvocationResult(
                0,
                None,
                turn("the flight to paris leaves at nine and the hotel is near", ["a", "b"]),
                turn("the flight to paris leaves at nine the hotel costs eighty", ["b", "a", "c"]),
                scores,
            )
        ],
        eval_set_id="rows",
    )


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f} results/s"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=int, default=100_000)
    parser.add_argument("--shape", choices=["row", "tools"], default="row")
    parser.add_argument("--url", default=None, help="default: a new SQLite file in /tmp")
    ns = parser.parse_args()
    make = row if ns.shape == "row" else (lambda i: weather_result(f"case-{i}"))
    results = [make(i) for i in range(ns.results)]
    url = ns.url or f"sqlite:///{tempfile.mkdtemp(prefix='assay-bench-')}/bench.db"
    print(f"{ns.results:,} {ns.shape} results, {len(json.dumps(results[0].to_dict())):,} B each")
    with Store.open(url) as store:
        run_id = store.start_run(eval_set_ids=["x"], metrics=METRICS, config={}, agent=None, runs=1)
        start = time.perf_counter()
        for i in range(0, len(results), 1000):
            store.add_case_results(run_id, results[i : i + 1000])
        direct = time.perf_counter() - start
        print(f"add_case_results, batches of 1,000: {rate(len(results), direct)}")

        run_id = store.start_run(eval_set_ids=["x"], metrics=METRICS, config={}, agent=None, runs=1)
        recorder = StoreRecorder(store, run_id)
        start = time.perf_counter()
        recorder.on_start(len(results))
        for result in results:
            recorder.on_case_done(result)
        recorder.on_finish(EvalResult(summary={"row_count": len(results)}, rows=[], cases=[]))
        print(f"StoreRecorder (defaults): {rate(len(results), time.perf_counter() - start)}")

        start = time.perf_counter()
        docs = store.case_results(run_id)
        print(f"case_results read back: {rate(len(docs), time.perf_counter() - start)}")

        baseline_n = min(5000, len(results))
        run_id = store.start_run(eval_set_ids=["x"], metrics=METRICS, config={}, agent=None, runs=1)
        writer = store.engine.execution_options(assay_write=True)
        start = time.perf_counter()
        for i in range(0, baseline_n, 1000):
            now = utcnow()
            rows = [
                {"run_id": run_id, "eval_set_id": r.eval_set_id or "", "case_id": r.case_id,
                 "run_index": r.run_index, "status": r.status.value,
                 "execution_state": "COMPLETED", "created_at": now, "document": r.to_dict()}
                for r in results[i : i + 1000]
            ]  # fmt: skip
            with writer.begin() as conn:
                conn.execute(insert(case_results), rows)
        naive = time.perf_counter() - start
        print(f"baseline to_dict() + SQLAlchemy executemany: {rate(baseline_n, naive)}")
        speed_up = (len(results) / direct) / (baseline_n / naive)
        print(f"add_case_results / baseline: {speed_up:.1f}x")


if __name__ == "__main__":
    main()
