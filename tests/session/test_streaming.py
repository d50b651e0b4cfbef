"""Streamed `assay eval` of recorded rows: the same results as the loaded path, bounded
batches, worker processes, a malformed row deep in a file, resuming after it."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.store import Store
from trip_rows import trip_rows

runner = CliRunner()
WORDS = [
    "the",
    "flight",
    "to",
    "paris",
    "leaves",
    "at",
    "nine",
    "and",
    "the",
    "hotel",
    "near",
    "the",
    "station",
    "costs",
]
CRITERIA = {
    "trajectory_exact_match": 1.0,
    "trajectory_in_order_match": 1.0,
    "trajectory_precision": 0.5,
    "trajectory_recall": 0.5,
    "trajectory_single_tool_use": {"threshold": 1.0, "tool_name": "get_weather"},
    "response_match_score": 0.6,
}


def _rows(n: int, seed: int = 3) -> list[dict[str, Any]]:
    return trip_rows(n, seed=seed, words=WORDS)


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    return path


def _eval(
    tmp_path: Path, data: Path, *extra: str, tag: str, loaded: bool = False
) -> tuple[Any, dict[str, Any]]:
    """`assay eval` with every output; `loaded` takes the path that loads the data whole
    (the reference the streamed run must equal)."""
    out = tmp_path / f"{tag}.json"
    with pytest.MonkeyPatch.context() as patch:
        if loaded:
            patch.setattr("assay.cli.eval._streamable", lambda *_: None)
        result = _invoke(tmp_path, data, out, tag, extra)
    doc = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    return result, doc


def _invoke(tmp_path: Path, data: Path, out: Path, tag: str, extra: tuple[str, ...]) -> Any:
    return runner.invoke(
        app,
        ["eval", str(data), "--config", str(_config(tmp_path)), "--quiet", "--out", str(out),
         "--csv", str(tmp_path / f"{tag}.csv"), "--store", f"sqlite:///{tmp_path / 'db.sqlite'}",
         "--junit", str(tmp_path / f"{tag}.xml"), "--fresh", *extra],
    )  # fmt: skip


def _without_run_ids(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    doc.pop("run_id")
    doc["cases"] = [{k: v for k, v in c.items() if k != "session_id"} for c in doc["cases"]]
    return doc


def _stored(db_path: Path, run_id: str) -> list[dict[str, Any]]:
    with Store.open(f"sqlite:///{db_path}") as db:
        return db.case_results(run_id)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_streamed_run_equals_the_loaded_run(tmp_path: Path, workers: str) -> None:
    # 2,600 rows: three batches, more than the console's case table holds.
    data = _write_jsonl(tmp_path / "rows.jsonl", _rows(2_600))
    loaded, loaded_doc = _eval(tmp_path, data, tag="loaded", loaded=True)
    streamed, streamed_doc = _eval(tmp_path, data, "--workers", workers, tag="streamed")
    assert loaded.exit_code == streamed.exit_code == 1, streamed.output
    assert _without_run_ids(streamed_doc) == _without_run_ids(loaded_doc)
    assert streamed_doc["summary"]["case_count"] == 2_600
    assert (tmp_path / "streamed.csv").read_text() == (tmp_path / "loaded.csv").read_text()
    # The JUnit report, written case by case, is the loaded run's byte for byte.
    junit = (tmp_path / "streamed.xml").read_bytes()
    assert junit == (tmp_path / "loaded.xml").read_bytes()
    assert b'tests="2600"' in junit and b"<failure " in junit
    assert streamed.stdout == loaded.stdout  # the summary line
    stored = _stored(tmp_path / "db.sqlite", streamed_doc["run_id"])
    reference = _stored(tmp_path / "db.sqlite", loaded_doc["run_id"])
    assert len(stored) == 2_600
    assert stored == reference
    with Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}") as db:
        info = db.get_run(streamed_doc["run_id"])
    assert info.status == "COMPLETED"
    assert info.summary == streamed_doc["summary"]


def test_small_streamed_runs_print_the_case_table(tmp_path: Path) -> None:
    data = _write_jsonl(tmp_path / "rows.jsonl", _rows(12))
    out = tmp_path / "r.json"
    args = ["eval", str(data), "--config", str(_config(tmp_path)), "--no-store"]
    streamed = runner.invoke(app, [*args, "--out", str(out)])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("assay.cli.eval._streamable", lambda *_: None)
        loaded = runner.invoke(app, args)
    assert streamed.exit_code == loaded.exit_code == 1
    assert streamed.stdout == loaded.stdout
    assert "case-1" in streamed.stdout


def test_csv_rows_stream_like_the_loaded_csv(tmp_path: Path) -> None:
    rows = _rows(120)
    path = tmp_path / "rows.csv"
    columns = ["id", "prompt", "response", "reference", "predicted_trajectory",
               "reference_trajectory"]  # fmt: skip
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        for row in rows:
            writer.writerow(
                {k: json.dumps(v) if isinstance(v, list) else v for k, v in row.items()}
            )
    loaded, loaded_doc = _eval(tmp_path, path, tag="l", loaded=True)
    streamed, streamed_doc = _eval(tmp_path, path, tag="s")
    assert streamed.exit_code == loaded.exit_code == 1
    assert _without_run_ids(streamed_doc) == _without_run_ids(loaded_doc)


def test_a_malformed_row_deep_in_the_file_keeps_the_rows_before_it(tmp_path: Path) -> None:
    rows = _rows(2_500)
    good = rows[2_299]
    rows[2_299] = {**good, "predicted_trajectory": 42}  # line 2,300
    data = _write_jsonl(tmp_path / "rows.jsonl", rows)
    db_path = tmp_path / "db.sqlite"
    args = ["eval", str(data), "--config", str(_config(tmp_path)), "--quiet",
            "--store", f"sqlite:///{db_path}"]  # fmt: skip
    failed = runner.invoke(app, args)
    assert failed.exit_code == 2
    message = failed.stderr
    assert "line 2300" in message and "predicted_trajectory" in message, message
    assert "Traceback" not in failed.output
    with Store.open(f"sqlite:///{db_path}") as db:
        (info,) = db.list_runs()
        assert info.status == "INTERRUPTED"
        assert len(db.case_results(info.id)) == 2_299
    # Fixed, the same command resumes after the stored rows.
    rows[2_299] = good
    _write_jsonl(data, rows)
    fixed = runner.invoke(app, [*args, "--out", str(tmp_path / "r.json")])
    assert fixed.exit_code == 1, fixed.output
    assert "resuming run" in fixed.stderr
    with Store.open(f"sqlite:///{db_path}") as db:
        (info,) = db.list_runs()
        assert info.status == "COMPLETED"
        assert len(db.case_results(info.id)) == 2_500
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["summary"]["case_count"] == 2_500 == len(doc["cases"])


def test_invalid_json_names_its_line(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    lines = [json.dumps(r) for r in _rows(60)]
    lines[41] = lines[41][:-5]
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["eval", str(data), "--config", str(_config(tmp_path)),
                                 "--no-store", "--quiet"])  # fmt: skip
    assert result.exit_code == 2
    assert "line 42" in result.stderr and "not valid JSON" in result.stderr


def test_options_that_need_every_case_say_so_in_one_line(tmp_path: Path) -> None:
    data = _write_jsonl(tmp_path / "rows.jsonl", _rows(30))
    args = ["eval", str(data), "--config", str(_config(tmp_path)), "--no-store"]
    for extra, reason in [
        (["--html", str(tmp_path / "r.html")], "--html"),
        (["--limit", "5"], "case selection"),
        (["--runs", "2"], "--runs above 1"),
    ]:
        result = runner.invoke(app, [*args, *extra])
        assert result.exit_code in (0, 1), result.output
        notes = [line for line in result.stderr.splitlines() if "not streamed" in line]
        assert len(notes) == 1 and reason in notes[0], result.stderr
    streamed = runner.invoke(app, [*args, "--junit", str(tmp_path / "j.xml")])
    assert "not streamed" not in streamed.stderr


def test_the_streamed_run_lives_through_a_run_session(tmp_path: Path, monkeypatch) -> None:
    """Opened, recorded and marked by `RunSession`: a store that fails mid-run leaves the
    run ERROR with the message, the batches before the failure stored."""
    from assay.engine import build_metrics
    from assay.errors import StoreError
    from assay.formats.stream import RowFile
    from assay.session import run_session
    from assay.session.streaming import StreamingRun

    data = _write_jsonl(tmp_path / "rows.jsonl", _rows(2_500))
    metrics = build_metrics(None, {"response_match_score": 0.6})
    identity = {"eval_set_ids": ["rows"], "metrics": ["response_match_score"],
                "config": {}, "agent": None}  # fmt: skip
    opened = []
    real_open = run_session.RunSession.open
    monkeypatch.setattr(
        run_session.RunSession, "open", lambda self: opened.append(self) or real_open(self)
    )
    real_add = Store.add_encoded
    calls = []

    def add_encoded(self: Store, run_id: str, encoded: Any) -> None:
        calls.append(len(encoded))
        if len(calls) == 2:
            raise StoreError("disk full")
        real_add(self, run_id, encoded)

    monkeypatch.setattr(Store, "add_encoded", add_encoded)
    with Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}") as db:
        run = StreamingRun([RowFile(data, "jsonl")], metrics, identity, store=db, workers=1)
        with pytest.raises(StoreError, match="disk full"):
            run.run()
        assert len(opened) == 1
        (info,) = db.list_runs()
        assert info.status == "ERROR" and "disk full" in (info.error or "")
        assert len(db.case_results(info.id)) == 1_000


def test_html_of_a_streamed_run_is_built_from_the_store(tmp_path: Path) -> None:
    data = _write_jsonl(tmp_path / "rows.jsonl", _rows(1_200))
    store = f"sqlite:///{tmp_path / 'db.sqlite'}"
    page = tmp_path / "run.html"
    args = ["eval", str(data), "--config", str(_config(tmp_path)), "--store", store]
    result = runner.invoke(app, [*args, "--html", str(page), "--workers", "1"])
    assert result.exit_code == 1, result.output
    # The console wraps its lines wherever in the (temporary, any length) path.
    shown = "".join(result.stderr.split())
    assert "notstreamed" not in shown and f"wrote{page}".replace(" ", "") in shown
    with Store.open(store) as db:
        (info,) = db.list_runs()
    # The page `assay report RUN --html` writes of the same stored run.
    again = tmp_path / "again.html"
    report = runner.invoke(app, ["report", info.id, "--html", str(again), "--store", store])
    assert report.exit_code == 0, report.output
    assert page.read_bytes() == again.read_bytes()
    assert b"case-1199" in page.read_bytes()


@pytest.mark.slow
def test_a_malformed_row_900000_lines_in_is_named_and_the_rows_before_it_kept(
    tmp_path: Path,
) -> None:
    # At the scale the issue names: the CLI in a subprocess, as a user runs it (worker
    # processes, the lean row path, the default batches), one metric to keep it short.
    import sqlite3
    import subprocess
    import sys

    data = tmp_path / "rows.jsonl"
    with data.open("wb") as out:
        for i in range(899_999):
            out.write(
                b'{"id": "r%d", "response": "a", "reference": "a", "predicted_trajectory":'
                b' [{"tool_name": "t", "tool_input": {"n": %d}}], "reference_trajectory":'
                b' [{"tool_name": "t", "tool_input": {"n": 1}}]}\n' % (i, i % 3)
            )
        out.write(b'{"id": "bad", "response": "a", "reference_trajectory": {"tool_name": 5}}\n')
        out.write(b'{"id": "after", "response": "a", "reference": "a"}\n')
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": {"trajectory_exact_match": 1.0}}))
    db_path = tmp_path / "db.sqlite"
    done = subprocess.run(
        [sys.executable, "-m", "assay", "eval", str(data), "--config", str(config),
         "--quiet", "--store", f"sqlite:///{db_path}", "--workers", "2"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "line 900000" in done.stderr and "reference_trajectory" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    with sqlite3.connect(db_path) as conn:
        ((status, total),) = conn.execute("SELECT status, case_count FROM runs").fetchall()
        (stored,) = conn.execute("SELECT count(*) FROM case_results").fetchone()
    assert status == "INTERRUPTED"
    assert stored == total == 899_999


@pytest.mark.parametrize("at", [10, 1_500])  # within the first batch; in a later one
def test_a_duplicate_case_id_is_named_with_the_rows_before_it_kept(tmp_path: Path, at: int) -> None:
    rows = [{**row, "id": f"case-{i}"} for i, row in enumerate(_rows(2_000))]
    rows[at]["id"] = "case-3"
    data = _write_jsonl(tmp_path / "rows.jsonl", rows)
    # The same ids in another file are another eval set's: not duplicates.
    other = _write_jsonl(
        tmp_path / "other.jsonl", [{**r, "id": f"case-{i}"} for i, r in enumerate(rows[:5])]
    )
    db_path = tmp_path / "db.sqlite"
    failed = runner.invoke(
        app,
        ["eval", str(other), str(data), "--config", str(_config(tmp_path)), "--quiet",
         "--store", f"sqlite:///{db_path}"],
    )  # fmt: skip
    assert failed.exit_code == 2, failed.output
    assert "duplicate case id" in failed.stderr and "case-3" in failed.stderr, failed.stderr
    assert "rows.jsonl" in failed.stderr
    with Store.open(f"sqlite:///{db_path}") as db:
        (info,) = db.list_runs()
        assert info.status == "INTERRUPTED"
        # The other file's 5 rows and every batch of this file before the duplicate's.
        assert len(db.case_results(info.id)) == 5 + at // 1_000 * 1_000
