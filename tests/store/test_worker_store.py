"""Workers of a streamed run store their own batches and append their cases to the JSON
report (`rows.writes.WorkerWrites`), in file order: the store ends up holding
what a run in one process stores — the same documents, and the same rows when a
duplicate id, a malformed row or a batch the store refuses stops the run — on SQLite
and on PostgreSQL, while the next batch is stored as one is appended."""

from __future__ import annotations

import json
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from assay.cli import app
from assay.session.run_session import RunSession

runner = CliRunner()
CRITERIA = {
    "trajectory_exact_match": 1.0,
    "trajectory_recall": 0.5,
    "response_match_score": 0.5,
}
ROWS = 4_500  # five batches of 1,000


def _rows(n: int) -> list[dict[str, Any]]:
    rng = random.Random(11)
    rows = []
    for i in range(n):
        calls = [{"tool_name": rng.choice("abc"), "tool_input": {"n": rng.randint(1, 2)}}
                 for _ in range(rng.randint(0, 3))]  # fmt: skip
        rows.append({
            "id": f"case-{i}", "prompt": f"p{i}", "response": rng.choice(["a b", "a c"]),
            "reference": "a b", "predicted_trajectory": calls[::-1],
            "reference_trajectory": calls,
        })  # fmt: skip
    return rows


def _write(path: Path, rows: list[dict[str, Any]], bad: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r) for r in rows]
    for index, line in (bad or {}).items():
        lines[index] = line
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _eval(data: Path, url: str, workers: int, name: str, tmp_path: Path) -> Any:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    return runner.invoke(
        app,
        ["eval", str(data), "--config", str(config), "--store", url, "--workers", str(workers),
         "--name", name, "--quiet", "--fresh"],
    )  # fmt: skip


def _eval_out(data: Path, tmp_path: Path, workers: int) -> tuple[bytes, str, str]:
    """`assay eval DATA --out` on `workers` processes, into a store of its own: the
    report (its run id replaced by RUN), the store's URL and the run's id."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    out = tmp_path / f"report-{workers}.json"
    url = f"sqlite:///{tmp_path / f'store-{workers}.db'}"
    done = runner.invoke(app, [
        "eval", str(data), "--config", str(config), "--store", url,
        "--workers", str(workers), "--out", str(out), "--quiet",
    ])  # fmt: skip
    assert done.exit_code in (0, 1), done.output
    run_id = json.loads(out.read_bytes())["run_id"]
    return out.read_bytes().replace(run_id.encode(), b"RUN"), url, run_id


def _stored(url: str, name: str, *, by: str = "name") -> dict[str, str]:
    """The documents of the run named `name` (or with the id `name`), by case id."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT r.case_id, r.document FROM case_results r JOIN runs u ON"
                    f" u.id = r.run_id WHERE u.{'id' if by == 'id' else 'name'} = :name"
                ),
                {"name": name},
            ).fetchall()
    finally:
        engine.dispose()
    out = {}
    for case_id, document in rows:
        doc = json.loads(document) if isinstance(document, str) else document
        out[case_id] = json.dumps(doc, sort_keys=True)
    return out


def _stored_by_main(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many results the reports' process stored itself, batch by batch."""
    counted: list[int] = []
    real = RunSession.record_encoded

    def spy(self: RunSession, encoded: Any) -> None:
        counted.append(len(encoded))
        real(self, encoded)

    monkeypatch.setattr(RunSession, "record_encoded", spy)
    return counted


def test_workers_store_what_one_process_stores(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _write(tmp_path / "rows.jsonl", _rows(ROWS))
    by_main = _stored_by_main(monkeypatch)
    two = _eval(data, store_url, 2, "two", tmp_path)
    assert two.exit_code in (0, 1), two.output
    assert sum(by_main) == 0, "the workers stored every batch themselves"
    one = _eval(data, store_url, 1, "one", tmp_path)
    assert one.exit_code == two.exit_code
    assert sum(by_main) == ROWS
    stored = _stored(store_url, "two")
    assert len(stored) == ROWS
    assert stored == _stored(store_url, "one")


def _without_run_ids(output: str) -> str:
    return re.sub(r"\brun [0-9a-z]{16}\b", "run RUN", output)


def _compare_stopped_runs(data: Path, url: str, tmp_path: Path) -> tuple[Any, dict[str, str]]:
    two = _eval(data, url, 2, "two", tmp_path)
    one = _eval(data, url, 1, "one", tmp_path)
    assert two.exit_code == one.exit_code != 0
    assert _without_run_ids(two.output) == _without_run_ids(one.output)
    stored = _stored(url, "two")
    assert stored == _stored(url, "one")
    return two, stored


def test_a_duplicate_id_in_a_later_batch_stops_where_one_process_stops(tmp_path: Path) -> None:
    rows = _rows(ROWS)
    rows[2_600]["id"] = rows[10]["id"]
    data = _write(tmp_path / "rows.jsonl", rows)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    result, stored = _compare_stopped_runs(data, url, tmp_path)
    assert "duplicate case id" in result.output and "case-10" in result.output
    # The batches before the duplicate's; none of its batch, nor of any after it.
    assert set(stored) == {f"case-{i}" for i in range(2_000)}


def test_a_malformed_row_stops_where_one_process_stops(tmp_path: Path) -> None:
    data = _write(tmp_path / "rows.jsonl", _rows(ROWS), bad={2_600: '{"id": "x", "prompt": '})
    url = f"sqlite:///{tmp_path / 'store.db'}"
    result, stored = _compare_stopped_runs(data, url, tmp_path)
    assert "line 2601" in result.output
    # Every row before the malformed one, its own batch's included; none after it.
    assert set(stored) == {f"case-{i}" for i in range(2_600)}


def test_a_batch_the_store_refuses_stops_where_one_process_stops(tmp_path: Path) -> None:
    """A worker whose batch the store refuses leaves it, and every batch after it, to
    the reports' process, which reports the store's error as a run in one process does."""
    data = _write(tmp_path / "rows.jsonl", _rows(ROWS))
    db = tmp_path / "store.db"
    url = f"sqlite:///{db}"
    assert _eval(tmp_path / "rows.jsonl", url, 1, "setup", tmp_path).exit_code in (0, 1)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(
            "CREATE TRIGGER refuse BEFORE INSERT ON case_results WHEN NEW.case_id = 'case-3100'"
            " BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END"
        ))  # fmt: skip
    engine.dispose()
    result, stored = _compare_stopped_runs(data, url, tmp_path)
    assert "refused by a trigger" in result.output
    assert set(stored) == {f"case-{i}" for i in range(3_000)}


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # even where these tests run with it ignored


@pytest.mark.slow
def test_ctrl_c_counts_every_batch_the_workers_stored(tmp_path: Path) -> None:
    """Ctrl-C stops the pool before the run is marked INTERRUPTED: the batches its
    workers were storing are counted, and the same command resumes after them."""
    data = _write(tmp_path / "rows.jsonl", _rows(60_000))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    db = tmp_path / "store.db"
    command = [sys.executable, "-m", "assay", "eval", str(data), "--config", str(config),
               "--store", f"sqlite:///{db}", "--workers", "2", "--quiet"]  # fmt: skip
    proc = subprocess.Popen(command, cwd=tmp_path, text=True, preexec_fn=_default_sigint,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if db.exists() and _count(db, "SELECT count(*) FROM case_results") >= 3_000:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    stored = _count(db, "SELECT count(*) FROM case_results")
    assert 3_000 <= stored < 60_000
    status, counted = _one(db, "SELECT status, case_count FROM runs")
    assert (status, counted) == ("INTERRUPTED", stored)
    again = subprocess.run(command, cwd=tmp_path, text=True, capture_output=True, timeout=300)
    assert again.returncode in (0, 1), again.stderr
    assert f"{stored} of 60000 case runs already done" in again.stderr
    assert _count(db, "SELECT count(*) FROM case_results") == 60_000
    assert _count(db, "SELECT count(DISTINCT case_id) FROM case_results") == 60_000
    assert _one(db, "SELECT status, case_count FROM runs") == ("COMPLETED", 60_000)


def _one(db: Path, sql: str) -> tuple[Any, ...]:
    with sqlite3.connect(db) as conn:
        row: tuple[Any, ...] = conn.execute(sql).fetchone()
    return row


def _count(db: Path, sql: str) -> int:
    try:
        return int(_one(db, sql)[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


@pytest.mark.parametrize("refusing", ["report", "rows"])
def test_cases_the_report_refuses_are_written_by_the_reports_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusing: str
) -> None:
    """A worker that cannot append its batch's cases to the report, or its rows to the
    report's row spool (here the third batch's), leaves both, and every later batch, to
    the `assay` process: the report (its cases and rows) and the store come out as a
    run in one process writes them. A refused row spool takes back the batch's cases
    already appended."""
    from assay.rows import writes

    data = _write(tmp_path / "rows.jsonl", _rows(ROWS))
    real = writes.WorkerWrites._append_to

    refused = tmp_path / "refused"

    def refuse_third(self: Any, path: str, data: bytes) -> tuple[int, int]:
        if self.cases.value >= 2_000 and path == getattr(self, refusing):
            refused.touch()  # in the worker: seen by the test through the file system
            raise OSError(28, "No space left on device")
        return real(self, path, data)

    reports = {}
    for workers in (2, 1):
        with monkeypatch.context() as patch:
            patch.setattr(writes.WorkerWrites, "_append_to", refuse_third)  # inherited
            report, url, run_id = _eval_out(data, tmp_path, workers)
            reports[workers] = (report, sorted(_stored(url, run_id, by="id").values()))
    assert refused.exists(), "a worker was refused"
    assert reports[2] == reports[1]
    assert len(json.loads(reports[2][0])["cases"]) == ROWS
    assert len(json.loads(reports[2][0])["rows"]) == ROWS


def test_the_next_batch_is_stored_while_one_is_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storing and appending take separate turns: the worker appending the first
    batch's cases is not holding up the second batch's store. Here the first append
    waits (up to a minute) for the second batch to be in the store; with one turn for
    both it would wait the whole minute, and the test fails."""
    from assay.rows import writes

    data = _write(tmp_path / "rows.jsonl", _rows(ROWS))
    db = tmp_path / "store.db"
    seen = tmp_path / "seen"
    real = writes.WorkerWrites._append

    def wait_for_second_batch(self: Any, cases: list[bytes], rows: list[Any]) -> None:
        if self.cases.value == 0:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if _count(db, "SELECT count(*) FROM case_results") >= 2_000:
                    seen.write_text("stored during the append")
                    break
                time.sleep(0.01)
        real(self, cases, rows)

    monkeypatch.setattr(writes.WorkerWrites, "_append", wait_for_second_batch)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    out = tmp_path / "report.json"
    done = runner.invoke(app, [
        "eval", str(data), "--config", str(config), "--store", f"sqlite:///{db}",
        "--workers", "2", "--out", str(out), "--quiet",
    ])  # fmt: skip
    assert done.exit_code in (0, 1), done.output
    assert seen.read_text() == "stored during the append"
    document = json.loads(out.read_bytes())
    assert [c["eval_id"] for c in document["cases"]] == [f"case-{i}" for i in range(ROWS)]
    assert _count(db, "SELECT count(*) FROM case_results") == ROWS


def test_the_workers_append_the_rows_which_never_come_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `--out` (and no `--csv`), each worker appends its batch's report rows to the
    row spool with its cases: the `assay` process writes none of them (nor unpickles
    ~1.6 KB a row), and the report is the one a run in one process writes."""
    from assay.report.json_report import RowSpool

    data = _write(tmp_path / "rows.jsonl", _rows(ROWS))
    real = RowSpool.add_encoded_rows
    written_here: dict[int, int] = {}

    def counted(self: RowSpool, rows: Any) -> None:
        written_here[workers] = written_here.get(workers, 0) + len(rows)
        real(self, rows)

    reports = {}
    for workers in (2, 1):
        with monkeypatch.context() as patch:
            patch.setattr(RowSpool, "add_encoded_rows", counted)
            reports[workers] = _eval_out(data, tmp_path, workers)[0]
    assert written_here.get(2, 0) == 0
    assert written_here[1] == ROWS
    assert reports[2] == reports[1]
    assert [r["case_id"] for r in json.loads(reports[2])["rows"]] == [
        f"case-{i}" for i in range(ROWS)
    ]
