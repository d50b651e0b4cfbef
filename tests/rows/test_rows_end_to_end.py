"""The row kernel's runs (`assay.rows`), end to end: `assay eval` over plain rows scored
by the kernel writes byte for byte what the reference path (the ordinary reader,
metrics and writers) writes — the store's documents, the JSON report, the CSV, the
JUnit report, the console — and every other row, mixed in, takes the reference path."""

from __future__ import annotations

import json
import random
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.rows import batch as stream_batch
from assay.rows.plan import RowPlan
from compiled import kernel

kernel("assay.rows.kernel", "RowKernel", "the row kernel")

runner = CliRunner()
TOOLS = ["search_flights", "book_hotel", "get_weather"]
WORDS = ["the", "flight", "to", "paris", "leaves", "at", "nine", "hotel", "près", "東京"]
# Every metric the kernel computes, with options where they matter.
CRITERIA: dict[str, Any] = {
    "trajectory_exact_match": 1.0,
    "trajectory_in_order_match": 1.0,
    "trajectory_any_order_match": 1.0,
    "trajectory_precision": 0.5,
    "trajectory_recall": 0.5,
    "trajectory_single_tool_use": {"threshold": 1.0, "tool_name": "get_weather"},
    "tool_trajectory_avg_score": {"threshold": 0.5, "match_type": "IN_ORDER"},
    "response_match_score": 0.6,
    "tool_call_count_v1": {},
    "inference_call_count_v1": {},
    "token_usage_v1": {},
    "invocation_duration_v1": {},
}


def _call(rng: random.Random) -> dict[str, Any]:
    args: dict[str, Any] = {"n": rng.randint(1, 3)}
    if rng.random() < 0.2:  # nested values, nulls, Unicode
        args["filters"] = {"city": rng.choice(["Zürich", "東京", None]), "tags": [1, None, "ü"]}
    return {"tool_name": rng.choice(TOOLS), "tool_input": args}


def _plain_rows(n: int, seed: int = 5) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        ref = [_call(rng) for _ in range(rng.randint(0, 3))]
        pred = ref[::-1] if rng.random() < 0.3 else list(ref)
        if rng.random() < 0.2:
            pred.append(_call(rng))
        reference = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
        row: dict[str, Any] = {
            "prompt": f"trip {i} ✈",
            "response": reference if rng.random() < 0.5 else "something else",
            "reference": reference,
            "predicted_trajectory": pred,
            "reference_trajectory": ref,
        }
        if i % 7:
            row["id"] = f"case-{i}" if i % 11 else i  # integer ids too
        rows.append(row)
    return rows


# Rows at the edge of the plain shape (the kernel) and beyond it (the reference path).
EDGE_ROWS: list[dict[str, Any]] = [
    {"id": "no-response", "prompt": "p", "reference": "r",
     "predicted_trajectory": [{"tool_name": "a", "tool_input": {"x": 1}}],
     "reference_trajectory": [{"tool_name": "a", "tool_input": {"x": 2}}, {"tool_name": "b"}]},
    {"id": "no-reference", "prompt": "p", "response": "resp",
     "reference_trajectory": [{"tool_name": "get_weather"}]},
    {"id": "no-prompt", "response": "r", "predicted_trajectory": [{"tool_name": "a"}],
     "reference_trajectory": [{"tool_name": "a", "tool_input": None}]},
    {"id": "empty", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": [], "reference_trajectory": []},
    {"id": "int-vs-float", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": [{"tool_name": "a", "tool_input": {"n": 1}}],
     "reference_trajectory": [{"tool_name": "a", "tool_input": {"n": 1.0}}]},
    {"id": "bool-arg", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": [{"tool_name": "a", "tool_input": {"n": True}}],
     "reference_trajectory": [{"tool_name": "a", "tool_input": {"n": 1}}]},
    # Equal calls in another key order, a string that is not the integer, a call twice.
    {"id": "key-order", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": [{"tool_name": "a", "tool_input": {"x": "1", "n": 2}}],
     "reference_trajectory": [{"tool_name": "a", "tool_input": {"n": 2, "x": "1"}}]},
    {"id": "str-vs-int", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": [{"tool_name": "a", "tool_input": {"n": "1"}}],
     "reference_trajectory": [{"tool_name": "a", "tool_input": {"n": 1}}]},
    {"id": "twice", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": [{"tool_name": "a", "tool_input": {"n": 1}}] * 2,
     "reference_trajectory": [{"tool_name": "a", "tool_input": {"n": 1}}, {"tool_name": "b"}]},
    # Text that JSON must escape, in every cell the kernel writes.
    {"id": 'q"\\u2028\n', "prompt": "tab\t nul\x00 \u2028 😀 </x>", "response": 'say "hi"',
     "reference": "back\\slash", "predicted_trajectory": [
         {"tool_name": "x\x00y", "tool_input": {'k"': "v\n", "ü": ["\u2029", None]}}],
     "reference_trajectory": [{"tool_name": "x\x00y", "tool_input": {'k"': "v\r"}}]},
    # Not plain: the reference path scores these.
    {"id": "latency", "prompt": "p", "response": "r", "reference": "r",
     "latency_in_seconds": 1.5},
    {"id": "tool-output", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": [{"tool_name": "a", "tool_output": "ok"}]},
    {"id": "json-cell", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": '[{"tool_name": "a"}]'},
    {"id": "response-only", "prompt": "p", "response": "r"},
    {"id": "extra-column", "prompt": "p", "response": "r", "reference": "r", "note": "x"},
]  # fmt: skip
# JSON that orjson refuses and the loader reads (NaN: the reference path), and digits
# that could be an integer beyond 64 bits (the reference path too).
ODD_LINES = [
    '{"id": "nan", "prompt": "p", "response": "r", "reference": "r", '
    '"predicted_trajectory": [{"tool_name": "a", "tool_input": {"v": NaN}}]}',
    '{"id": "big", "prompt": "p", "response": "r", "reference": "r", '
    # Digits that could be an integer beyond 64 bits send the line to `json` and the
    # reference path (tests/session/test_big_ints.py); here they are only a string.
    '"predicted_trajectory": [{"tool_name": "a", "tool_input": {"v": "1234567890123456789012"}}]}',
]


def _write(path: Path, rows: list[dict[str, Any]], odd: list[str] = ODD_LINES) -> Path:
    lines = [json.dumps(r, ensure_ascii=False) for r in rows]
    for i, line in enumerate(odd):
        lines.insert(len(lines) * (i + 1) // (len(odd) + 1), line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def stored_rows(db: Path) -> list[tuple[Any, ...]]:
    """Every stored case result of the SQLite store at `db`, in the order stored."""
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT eval_set_id, case_id, run_index, status, execution_state, error_type,"
            " latency_s, document FROM case_results ORDER BY id"
        ).fetchall()


def _run(
    tmp_path: Path, data: Path, tag: str, *extra: str, fast: bool, loaded: bool = False
) -> dict[str, Any]:
    """`assay eval` streamed, with the row kernel (`fast`) or the reference path only,
    or (`loaded`) not streamed at all; its outputs as bytes."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    db = tmp_path / f"{tag}.sqlite"
    out, csv_path = tmp_path / f"{tag}.json", tmp_path / f"{tag}.csv"
    with pytest.MonkeyPatch.context() as patch:
        if not fast:
            patch.setattr(stream_batch, "_row_kernel", lambda plan: None)
        if loaded:
            patch.setattr("assay.cli.eval._streamable", lambda *_: None)
        result = runner.invoke(
            app,
            ["eval", str(data), "--config", str(config), "--out", str(out),
             "--csv", str(csv_path), "--store", f"sqlite:///{db}", *extra],
        )  # fmt: skip
    doc = json.loads(out.read_bytes())
    run_id = doc["run_id"]
    return {
        "run_id": run_id,
        "exit": result.exit_code,
        "stdout": result.stdout,
        "json": out.read_bytes().replace(run_id.encode(), b"RUN"),
        "csv": csv_path.read_bytes(),
        "stored": stored_rows(db),
        "cases": doc["summary"]["case_count"],
    }


@pytest.mark.parametrize("workers", ["1", "2"])
def test_kernel_rows_write_what_the_reference_path_writes(tmp_path: Path, workers: str) -> None:
    rows = _plain_rows(2_400)
    for i, edge in enumerate(EDGE_ROWS):
        rows.insert(150 * i + 7, edge)
    data = _write(tmp_path / "rows.jsonl", rows)
    counted: list[int] = []
    real = stream_batch._add_cases
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            stream_batch,
            "_add_cases",
            lambda spec, out, cases: counted.append(len(cases)) or real(spec, out, cases),
        )
        fast = _run(tmp_path, data, "fast", "--workers", workers, fast=True)
    reference = _run(tmp_path, data, "reference", "--workers", workers, fast=False)
    assert fast["exit"] == reference["exit"] == 1, fast["stdout"]
    assert fast["cases"] == len(rows) + len(ODD_LINES)
    assert fast["json"] == reference["json"]
    assert fast["csv"] == reference["csv"]
    assert fast["stored"] == reference["stored"]
    assert fast["stdout"] == reference["stdout"]
    if workers == "1":  # in this process: only the rows beyond the plain shape, and the
        # two odd lines (NaN; digits that could be an integer beyond 64 bits)
        assert sum(counted) == len(EDGE_ROWS) - 10 + 2  # 10 plain edge rows
    # ... and the run loaded whole (not streamed) writes the same.
    data = _write(tmp_path / "rows.jsonl", rows)
    fast = _run(tmp_path, data, "fast-b", "--workers", workers, fast=True)
    whole = _run(tmp_path, data, "loaded", fast=False, loaded=True)
    assert whole["exit"] == fast["exit"] == 1
    assert whole["csv"] == fast["csv"]
    assert whole["stored"] == fast["stored"]
    assert json.loads(whole["json"]) == json.loads(fast["json"])


def test_a_csv_of_rows_of_several_shapes_is_made_at_the_end(tmp_path: Path) -> None:
    """Rows with and without a reference have different columns: the CSV is then made
    from the JSON rows (the union of their columns), as the loaded run makes it."""
    rows = _plain_rows(300)
    for row in rows[::5]:
        del row["reference"]
    data = _write(tmp_path / "rows.jsonl", rows, odd=[])
    fast = _run(tmp_path, data, "fast", "--workers", "1", fast=True)
    whole = _run(tmp_path, data, "loaded", fast=False, loaded=True)
    assert fast["csv"] == whole["csv"]
    assert b"reference" in fast["csv"].splitlines()[0]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_junit_report_of_kernel_rows_is_the_reference_one(tmp_path: Path, workers: str) -> None:
    """`--junit` takes the kernel: a passing row's testcase from its id, a failing
    one's (failure analysis, failed metrics) from its case rebuilt the reference way."""
    rows = _plain_rows(1_200)
    for i, edge in enumerate(EDGE_ROWS):
        rows.insert(90 * i + 3, edge)
    data = _write(tmp_path / "rows.jsonl", rows)
    rebuilt: list[str] = []
    real = stream_batch.kept_case
    # Imported before the patch, or it would keep the patched function as its own.
    import assay.session.streaming  # noqa: F401

    reports = {}
    for tag, fast in (("fast", True), ("reference", False)):
        junit = tmp_path / f"{tag}.xml"
        with pytest.MonkeyPatch.context() as patch:
            if fast:
                patch.setattr(
                    stream_batch,
                    "kept_case",
                    lambda *a: rebuilt.append(a[2][2].decode()) or real(*a),  # a row's line
                )
            run = _run(tmp_path, data, tag, "--workers", workers, "--junit", str(junit), fast=fast)
        assert run["exit"] == 1
        reports[tag] = junit.read_bytes().replace(run["run_id"].encode(), b"RUN")
    assert reports["fast"] == reports["reference"]
    assert b"<failure" in reports["fast"] and b'failures="0"' not in reports["fast"]
    if workers == "1":  # in this process: only rows that did not pass were rebuilt
        passed = {c["eval_id"] for c in json.loads(run["json"])["cases"] if c["status"] == "PASSED"}
        assert rebuilt and passed
        assert not {json.loads(line).get("id") for line in rebuilt} & passed


def test_failing_cases_shown_are_the_ordinary_ones(tmp_path: Path) -> None:
    """The console shows the first failing cases whole: rebuilt from their kernel rows."""
    data = _write(tmp_path / "rows.jsonl", _plain_rows(1_500), odd=[])
    fast = _run(tmp_path, data, "fast", "--workers", "1", fast=True)
    reference = _run(tmp_path, data, "reference", "--workers", "1", fast=False)
    assert fast["stdout"] == reference["stdout"]
    assert "case-" in fast["stdout"]


@pytest.mark.filterwarnings("ignore:metric 'bleu' is not computed by the row kernel")
def test_a_metric_the_kernel_does_not_know_is_scored_beside_it(tmp_path: Path) -> None:
    """A run with a metric the kernel does not compute (`bleu`) writes what the
    reference path writes, and the kernel still scores the rows."""
    from assay.engine import build_metrics

    criteria = {"trajectory_exact_match": 1.0, "response_match_score": 0.5, "bleu": 0.5}
    plan = RowPlan.of(build_metrics(None, criteria))
    assert plan is not None and plan.in_python == ["bleu"]
    data = _write(tmp_path / "rows.jsonl", _plain_rows(600), odd=[])
    counted: list[int] = []
    real = stream_batch._add_cases
    runs = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            stream_batch,
            "_add_cases",
            lambda spec, out, cases: counted.append(len(cases)) or real(spec, out, cases),
        )
        patch.setattr(sys.modules[__name__], "CRITERIA", criteria)
        runs["kernel"] = _run(tmp_path, data, "kernel", "--workers", "1", fast=True)
        assert sum(counted) == 0  # no row took the reference path
        runs["reference"] = _run(tmp_path, data, "reference", "--workers", "1", fast=False)
    assert sum(counted) == 600
    kernel_run, reference = runs["kernel"], runs["reference"]
    assert kernel_run["json"] == reference["json"]
    assert kernel_run["csv"] == reference["csv"]
    assert kernel_run["stored"] == reference["stored"]
    assert b"bleu/score" in kernel_run["csv"].splitlines()[0]


def test_resume_and_a_bad_row_on_the_kernel(tmp_path: Path) -> None:
    """A malformed row stops a kernel run after the rows before it (named by line and
    field); fixed, the same command resumes and ends with the full run's outputs."""
    rows = _plain_rows(2_300)
    good = rows[2_099]
    rows[2_099] = {**good, "reference_trajectory": [{"tool_name": 7}]}  # line 2,100
    data = _write(tmp_path / "rows.jsonl", rows, odd=[])
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    db = tmp_path / "db.sqlite"
    args = ["eval", str(data), "--config", str(config), "--quiet", "--workers", "2",
            "--store", f"sqlite:///{db}", "--out", str(tmp_path / "r.json")]  # fmt: skip
    failed = runner.invoke(app, args)
    assert failed.exit_code == 2
    assert "line 2100" in failed.stderr and "reference_trajectory[0].tool_name" in failed.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM case_results").fetchone() == (2_099,)
    rows[2_099] = good
    _write(data, rows, odd=[])
    resumed = runner.invoke(app, args)
    assert resumed.exit_code == 1 and "resuming run" in resumed.stderr
    whole = _run(tmp_path, data, "whole", "--workers", "2", fast=False)
    doc, whole_doc = json.loads((tmp_path / "r.json").read_bytes()), json.loads(whole["json"])
    assert doc["summary"] == whole_doc["summary"]
    assert [c["eval_id"] for c in doc["cases"]] == [c["eval_id"] for c in whole_doc["cases"]]


def test_ci_gates_on_the_kernel(tmp_path: Path) -> None:
    """`--min-mean` averages the case scores the kernel tallies: the same verdict
    and lines as the reference path, passing and failing."""
    data = _write(tmp_path / "rows.jsonl", _plain_rows(1_200), odd=[])
    for floor, code in (("0.3", 0), ("0.9", 1)):
        gate = ("--min-mean", f"trajectory_exact_match={floor}", "--workers", "1")
        fast = _run(tmp_path, data, f"fast-{floor}", *gate, fast=True)
        reference = _run(tmp_path, data, f"reference-{floor}", *gate, fast=False)
        assert fast["exit"] == reference["exit"] == code, fast["stdout"]
        assert fast["stdout"] == reference["stdout"]
        assert fast["stored"] == reference["stored"]


def test_kept_encoded_results_hold_their_text_not_orjsons_buffer() -> None:
    # orjson's output keeps the ~4 KB buffer it was written into: a memo of thousands of
    # encoded results (20,000 per worker) held ~230 MB more per worker before.
    import tracemalloc

    from assay.core.results import Score
    from assay.engine import build_metrics
    from assay.rows.kernel import EncodedMetric

    (metric,) = build_metrics(None, {"trajectory_precision": 0.5})
    results = [metric.result_from_invocations([Score(i / 1000, f"why {i}")]) for i in range(500)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [EncodedMetric(metric, result) for result in results]
        per_result = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    finally:
        tracemalloc.stop()
    assert per_result < 2_000, per_result
