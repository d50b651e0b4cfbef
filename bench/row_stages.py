"""Where a worker's CPU goes per recorded row, stage by stage: the ordinary path (a case
built from the row, scored into a `CaseResult`, encoded three times) against the lean
row path (`session.lean_rows` / `lean_score` / `lean_encode`), on the rows and metrics of
`bench/score_rows.py`, in one process (CPU time, so the two are compared under the same
load).

    python bench/row_stages.py [--rows 20000]
"""

from __future__ import annotations

import argparse
import gc
import os
import pickle
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from score_rows import METRICS, write_rows

FILE = "rows.jsonl"


def _stage(name: str, rows: int, run: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    value = run()
    per_row = (time.process_time() - start) / rows * 1e6
    print(f"  {name:<44} {per_row:7.1f} us/row")
    return per_row, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    ns = parser.parse_args()

    import orjson

    from assay.engine import build_metrics
    from assay.engine.aggregate import case_rows
    from assay.engine.runner import score_recorded
    from assay.engine.tally import Tally
    from assay.formats.stream import RowFile, batch_cases
    from assay.report.json_report import case_to_adk
    from assay.report.json_stream import csv_line, dumps
    from assay.session import stream_batch
    from assay.session.lean_encode import (
        encoded_calls,
        report_case,
        report_csv_line,
        report_row,
        store_row,
    )
    from assay.session.lean_rows import plain_row
    from assay.session.lean_score import LeanPlan
    from assay.session.stream_batch import BatchSpec, score_batch
    from assay.store import encode_case

    criteria: dict[str, Any] = {m: {"threshold": 1.0} for m in METRICS}
    criteria["trajectory_single_tool_use"] = {"threshold": 1.0, "tool_name": "get_weather"}
    criteria["response_match_score"] = 0.8
    # ... and ADK's four informational efficiency metrics, which `assay eval` adds.
    for name in ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1",
                 "invocation_duration_v1"):  # fmt: skip
        criteria[name] = {}
    metrics = build_metrics(None, criteria)
    names = [m.name for m in metrics]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        write_rows(path, ns.rows)
        batches = list(RowFile(path, "jsonl").batches(1000))
    n = sum(len(b.rows) for b in batches)
    set_id = "rows"
    gc.disable()  # as the batches run (see stream_batch.score_batch)
    print(f"{n:,} rows, {len(metrics)} metrics; load average {os.getloadavg()[0]:.1f}")

    print("ordinary path (before):")
    cases: list[Any] = []
    results: list[Any] = []
    rows: list[bytes] = []
    tally = Tally(names)
    for name, run in [
        ("build the cases (batch_cases)",
         lambda: cases.extend(c for b in batches for c in batch_cases(b)[0])),
        ("score the metrics (score_recorded)",
         lambda: results.extend(score_recorded(c, metrics, eval_set_id=set_id) for c in cases)),
        ("store document (encode_case)", lambda: [encode_case(r) for r in results]),
        ("report case (case_to_adk + JSON)",
         lambda: [dumps(case_to_adk(r, run_id="run", eval_set_file=FILE)) for r in results]),
        ("report rows (case_rows + JSON)",
         lambda: rows.extend(dumps(w) for r in results for w in case_rows(r, metrics, False))),
        ("CSV lines (from the JSON rows)", lambda: [csv_line(orjson.loads(r)) for r in rows]),
        ("tally", lambda: [tally.add(r) for r in results]),
    ]:  # fmt: skip
        _stage(name, n, run)
    del cases[:], results[:], rows[:]

    print("lean row path (after):")
    plan = LeanPlan.of(metrics)
    assert plan is not None
    raws = [raw for b in batches for _, raw in b.rows]
    interned: dict[str, str] = {}
    parsed: list[Any] = []
    leans: list[Any] = []
    tally = Tally(names)
    calls: list[Any] = []
    for name, run in [
        ("parse the line (orjson)", lambda: parsed.extend(orjson.loads(r) for r in raws)),
        ("read the plain row (plain_row)",
         lambda: leans.extend(plain_row(r, i, interned) for i, r in enumerate(parsed))),
        ("score the metrics (LeanPlan.score)", lambda: [plan.score(x) for x in leans]),
        ("encode the calls (encoded_calls)",
         lambda: calls.extend(encoded_calls(x) for x in leans)),
        ("store document (store_row)",
         lambda: [store_row(x, set_id, c) for x, c in zip(leans, calls, strict=True)]),
        ("report case (report_case)",
         lambda: [report_case(x, set_id, "run", FILE, c)
                  for x, c in zip(leans, calls, strict=True)]),
        ("report row (report_row)", lambda: [report_row(x, set_id) for x in leans]),
        ("CSV line (report_csv_line)", lambda: [report_csv_line(x, set_id) for x in leans]),
        ("tally", lambda: [tally.add_row(x.status, [m.result for m in x.metrics]) for x in leans]),
    ]:  # fmt: skip
        _stage(name, n, run)

    kernel = _row_kernel(metrics)
    if kernel is not None:
        print("row kernel (session.row_kernel, compiled), each row read, scored and written:")
        _stage("RowKernel.row (all four outputs)", n, lambda: [
            kernel.row(raw, i, set_id, "run", FILE, True, True, True, True)
            for i, raw in enumerate(raws)
        ])  # fmt: skip
    else:
        print("row kernel: not compiled here (the lean path scores every row)")

    print("whole batches, as a worker scores them (stream_batch.score_batch):")
    spec = BatchSpec(metrics=tuple(metrics), run_id="run", csv=True, keep=200,
                     eval_set_files={set_id: FILE})  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        write_rows(path, ns.rows)
        chunks = list(RowFile(path, "jsonl").chunks(1000))
    _stage("score_batch of line chunks, as workers get them", n,
           lambda: [score_batch(spec, c) for c in chunks])  # fmt: skip
    _, outs = _stage(
        "score_batch of numbered rows", n, lambda: [score_batch(spec, b) for b in batches]
    )
    protocol = pickle.HIGHEST_PROTOCOL
    _, blobs = _stage("  its output pickled (to the CLI process)", n,
                      lambda: [pickle.dumps(o, protocol=protocol) for o in outs])  # fmt: skip
    _stage("  and unpickled there", n, lambda: [pickle.loads(b) for b in blobs])
    print(f"  {sum(map(len, blobs)) / n:,.0f} bytes per row sent back")
    real_plan = stream_batch._lean_plan
    stream_batch._lean_plan = lambda spec, batch: None  # type: ignore[assignment]
    try:
        _stage("score_batch, ordinary (before)", n, lambda: [score_batch(spec, b) for b in batches])
    finally:
        stream_batch._lean_plan = real_plan  # type: ignore[assignment]


def _row_kernel(metrics: list[Any]) -> Any:
    try:
        from assay.session.row_kernel import RowKernel
    except ImportError:
        return None
    from assay.session.lean_score import LeanPlan

    plan = LeanPlan.of(metrics)
    return None if plan is None else RowKernel.of(plan)


if __name__ == "__main__":
    main()
