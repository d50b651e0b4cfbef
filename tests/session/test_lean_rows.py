"""The lean row path (`session.lean_rows`, `lean_score`, `lean_encode`): plain rows scored
from their cells write byte for byte what the ordinary path writes — the store's
documents, the JSON report, the CSV, the console — and every other row, mixed in,
takes the ordinary path."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.session import stream_batch
from assay.session.lean_rows import plain_row
from assay.session.lean_score import LeanPlan

runner = CliRunner()
TOOLS = ["search_flights", "book_hotel", "get_weather"]
WORDS = ["the", "flight", "to", "paris", "leaves", "at", "nine", "hotel", "près", "東京"]
# Every metric the lean path scores, with options where they matter.
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


# Rows at the edge of the plain shape (lean) and beyond it (the ordinary path).
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
    # Text that JSON must escape, in every cell the lean documents spell out.
    {"id": 'q"\\u2028\n', "prompt": "tab\t nul\x00 \u2028 😀 </x>", "response": 'say "hi"',
     "reference": "back\\slash", "predicted_trajectory": [
         {"tool_name": "x\x00y", "tool_input": {'k"': "v\n", "ü": ["\u2029", None]}}],
     "reference_trajectory": [{"tool_name": "x\x00y", "tool_input": {'k"': "v\r"}}]},
    # Not plain: the ordinary path scores these.
    {"id": "latency", "prompt": "p", "response": "r", "reference": "r",
     "latency_in_seconds": 1.5},
    {"id": "tool-output", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": [{"tool_name": "a", "tool_output": "ok"}]},
    {"id": "json-cell", "prompt": "p", "response": "r", "reference": "r",
     "predicted_trajectory": '[{"tool_name": "a"}]'},
    {"id": "response-only", "prompt": "p", "response": "r"},
    {"id": "extra-column", "prompt": "p", "response": "r", "reference": "r", "note": "x"},
]  # fmt: skip
# JSON that orjson refuses and the loader reads (NaN: the ordinary path), and an
# integer beyond 64 bits (read as a float by both paths: lean).
ODD_LINES = [
    '{"id": "nan", "prompt": "p", "response": "r", "reference": "r", '
    '"predicted_trajectory": [{"tool_name": "a", "tool_input": {"v": NaN}}]}',
    '{"id": "big", "prompt": "p", "response": "r", "reference": "r", '
    # Digits that could be an integer beyond 64 bits send the line to `json` and the
    # ordinary path (tests/session/test_big_ints.py); here they are only a string.
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
    tmp_path: Path, data: Path, tag: str, *extra: str, lean: bool, loaded: bool = False
) -> dict[str, Any]:
    """`assay eval` streamed, on the lean path or (`lean` False) the ordinary one only,
    or (`loaded`) not streamed at all; its outputs as bytes."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    db = tmp_path / f"{tag}.sqlite"
    out, csv_path = tmp_path / f"{tag}.json", tmp_path / f"{tag}.csv"
    with pytest.MonkeyPatch.context() as patch:
        if not lean:
            patch.setattr(stream_batch, "_lean_plan", lambda spec, batch: None)
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
def test_lean_rows_write_what_the_ordinary_path_writes(tmp_path: Path, workers: str) -> None:
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
        lean = _run(tmp_path, data, "lean", "--workers", workers, lean=True)
    ordinary = _run(tmp_path, data, "ordinary", "--workers", workers, lean=False)
    assert lean["exit"] == ordinary["exit"] == 1, lean["stdout"]
    assert lean["cases"] == len(rows) + len(ODD_LINES)
    assert lean["json"] == ordinary["json"]
    assert lean["csv"] == ordinary["csv"]
    assert lean["stored"] == ordinary["stored"]
    assert lean["stdout"] == ordinary["stdout"]
    if workers == "1":  # in this process: only the rows beyond the plain shape, and the
        # two odd lines (NaN; digits that could be an integer beyond 64 bits)
        assert sum(counted) == len(EDGE_ROWS) - 10 + 2  # 10 plain edge rows
    # ... and the run loaded whole (not streamed) writes the same.
    data = _write(tmp_path / "rows.jsonl", rows)
    lean = _run(tmp_path, data, "lean-b", "--workers", workers, lean=True)
    whole = _run(tmp_path, data, "loaded", lean=False, loaded=True)
    assert whole["exit"] == lean["exit"] == 1
    assert whole["csv"] == lean["csv"]
    assert whole["stored"] == lean["stored"]
    assert json.loads(whole["json"]) == json.loads(lean["json"])


def test_a_csv_of_rows_of_several_shapes_is_made_at_the_end(tmp_path: Path) -> None:
    """Rows with and without a reference have different columns: the CSV is then made
    from the JSON rows (the union of their columns), as the loaded run makes it."""
    rows = _plain_rows(300)
    for row in rows[::5]:
        del row["reference"]
    data = _write(tmp_path / "rows.jsonl", rows, odd=[])
    lean = _run(tmp_path, data, "lean", "--workers", "1", lean=True)
    whole = _run(tmp_path, data, "loaded", lean=False, loaded=True)
    assert lean["csv"] == whole["csv"]
    assert b"reference" in lean["csv"].splitlines()[0]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_junit_report_of_lean_rows_is_the_ordinary_one(tmp_path: Path, workers: str) -> None:
    """`--junit` takes the lean path: a passing row's testcase from its id, a failing
    one's (failure analysis, failed metrics) from its case rebuilt the ordinary way."""
    rows = _plain_rows(1_200)
    for i, edge in enumerate(EDGE_ROWS):
        rows.insert(90 * i + 3, edge)
    data = _write(tmp_path / "rows.jsonl", rows)
    rebuilt: list[str] = []
    real = stream_batch.kept_case
    # Imported before the patch, or it would keep the patched function as its own.
    import assay.session.streaming  # noqa: F401

    reports = {}
    for tag, lean in (("lean", True), ("ordinary", False)):
        junit = tmp_path / f"{tag}.xml"
        with pytest.MonkeyPatch.context() as patch:
            if lean:
                patch.setattr(
                    stream_batch,
                    "kept_case",
                    lambda *a: rebuilt.append(a[2][2].decode()) or real(*a),  # a row's line
                )
            run = _run(tmp_path, data, tag, "--workers", workers, "--junit", str(junit), lean=lean)
        assert run["exit"] == 1
        reports[tag] = junit.read_bytes().replace(run["run_id"].encode(), b"RUN")
    assert reports["lean"] == reports["ordinary"]
    assert b"<failure" in reports["lean"] and b'failures="0"' not in reports["lean"]
    if workers == "1":  # in this process: only rows that did not pass were rebuilt
        passed = {c["eval_id"] for c in json.loads(run["json"])["cases"] if c["status"] == "PASSED"}
        assert rebuilt and passed
        assert not {json.loads(line).get("id") for line in rebuilt} & passed


def test_failing_cases_shown_are_the_ordinary_ones(tmp_path: Path) -> None:
    """The console shows the first failing cases whole: rebuilt from their lean rows."""
    data = _write(tmp_path / "rows.jsonl", _plain_rows(1_500), odd=[])
    lean = _run(tmp_path, data, "lean", "--workers", "1", lean=True)
    ordinary = _run(tmp_path, data, "ordinary", "--workers", "1", lean=False)
    assert lean["stdout"] == ordinary["stdout"]
    assert "case-" in lean["stdout"]


def test_only_the_plain_shape_is_lean() -> None:
    names: dict[str, str] = {}
    plain = {"id": "a", "prompt": "p", "response": "r", "reference": "r",
             "predicted_trajectory": [{"tool_name": "t", "tool_input": {"x": 1}}]}  # fmt: skip
    lean = plain_row(plain, 0, names)
    assert lean is not None and lean.case_id == "a"
    assert [(c.name, c.args) for c in lean.predicted] == [("t", {"x": 1})]
    assert plain_row({k: v for k, v in plain.items() if k != "id"}, 4, names).case_id == "row-4"  # type: ignore[union-attr]
    for odd in [
        {**plain, "id": True},
        {**plain, "id": 1.5},
        {**plain, "prompt": {"parts": []}},
        {**plain, "predicted_trajectory": [{"tool_name": "t", "tool_input": [1]}]},
        {**plain, "predicted_trajectory": [{"tool_name": 3}]},
        {**plain, "predicted_trajectory": [{"tool_name": "t", "id": "c1"}]},
        {**plain, "predicted_trajectory": "[]"},
        {**plain, "input": "p"},
        {"id": "a", "prompt": "p", "response": "r"},  # no reference turn
        {"id": "a", "prompt": "p", "reference": "r"},  # no recorded turn
        ["not", "a", "row"],
    ]:
        assert plain_row(odd, 0, names) is None, odd


def test_a_metric_the_lean_path_does_not_know_takes_the_ordinary_path() -> None:
    from assay.engine import build_metrics

    known = build_metrics(None, {"trajectory_exact_match": 1.0, "response_match_score": 0.5})
    assert LeanPlan.of(known) is not None
    other = build_metrics(None, {"trajectory_exact_match": 1.0, "bleu": 0.5})
    assert LeanPlan.of(other) is None


def test_resume_and_a_bad_row_on_the_lean_path(tmp_path: Path) -> None:
    """A malformed row stops a lean run after the rows before it (named by line and
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
    whole = _run(tmp_path, data, "whole", "--workers", "2", lean=False)
    doc, whole_doc = json.loads((tmp_path / "r.json").read_bytes()), json.loads(whole["json"])
    assert doc["summary"] == whole_doc["summary"]
    assert [c["eval_id"] for c in doc["cases"]] == [c["eval_id"] for c in whole_doc["cases"]]


def test_ci_gates_on_the_lean_path(tmp_path: Path) -> None:
    """`--min-mean` averages the case scores the lean path tallies: the same verdict
    and lines as the ordinary path, passing and failing."""
    data = _write(tmp_path / "rows.jsonl", _plain_rows(1_200), odd=[])
    for floor, code in (("0.3", 0), ("0.9", 1)):
        gate = ("--min-mean", f"trajectory_exact_match={floor}", "--workers", "1")
        lean = _run(tmp_path, data, f"lean-{floor}", *gate, lean=True)
        ordinary = _run(tmp_path, data, f"ordinary-{floor}", *gate, lean=False)
        assert lean["exit"] == ordinary["exit"] == code, lean["stdout"]
        assert lean["stdout"] == ordinary["stdout"]
        assert lean["stored"] == ordinary["stored"]


def test_kept_encoded_results_hold_their_text_not_orjsons_buffer() -> None:
    # orjson's output keeps the ~4 KB buffer it was written into: a memo of thousands of
    # encoded results (20,000 per worker) held ~230 MB more per worker before.
    import tracemalloc

    from assay.engine import build_metrics
    from assay.model.results import Score
    from assay.session.lean_rows import EncodedMetric

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
