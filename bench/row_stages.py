"""Where a worker's CPU goes per recorded row, stage by stage: the reference path (a
case built from the row, scored into a `CaseResult`, encoded three times) against the
row kernel (`assay.rows.kernel`), with the metrics of `bench/score_rows.py` and with one
metric the kernel leaves to its own Python beside them, on the rows of
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
    from assay.report.json_report import case_to_adk, csv_line, dumps
    from assay.rows import batch as stream_batch
    from assay.rows.batch import BatchSpec, score_batch
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
    gc.disable()  # as the batches run (see rows.batch.score_batch)
    print(f"{n:,} rows, {len(metrics)} metrics; load average {os.getloadavg()[0]:.1f}")

    print("reference path:")
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

    raws = [raw for b in batches for _, raw in b.rows]
    kernel = _row_kernel(metrics)
    if kernel is not None:
        print("row kernel (rows.kernel, compiled), each row read, scored and written:")
        _stage("RowKernel.row (all four outputs)", n, lambda: [
            kernel.row(raw, i, set_id, "run", FILE, True, True, True, True)
            for i, raw in enumerate(raws)
        ])  # fmt: skip
        extra = [*metrics, *build_metrics(None, {"tool_parameter_kv_match": 0.5})]
        with_python = _row_kernel(extra)
        _stage("... with tool_parameter_kv_match (its own Python)", n, lambda: [
            with_python.row(raw, i, set_id, "run", FILE, True, True, True, True)
            for i, raw in enumerate(raws)
        ])  # fmt: skip
    else:
        print("row kernel: not compiled here (the reference path scores every row)")

    print("whole batches, as a worker scores them (rows.batch.score_batch):")
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
    real_kernel = stream_batch._row_kernel
    stream_batch._row_kernel = lambda plan: None  # type: ignore[assignment]
    stream_batch._KERNEL = None
    try:
        _stage("score_batch, reference path", n, lambda: [score_batch(spec, b) for b in batches])
    finally:
        stream_batch._row_kernel = real_kernel  # type: ignore[assignment]


def _row_kernel(metrics: list[Any]) -> Any:
    try:
        from assay.rows.kernel import RowKernel
    except ImportError:
        return None
    from assay.rows.plan import RowPlan

    plan = RowPlan.of(metrics)
    return None if plan is None else RowKernel.of(plan)


if __name__ == "__main__":
    main()
