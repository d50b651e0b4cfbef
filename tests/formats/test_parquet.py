"""Row files in Parquet: streamed like JSON lines (same results, store and reports),
MLflow rows loaded, a bad row named by its row number and column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from assay import formats
from assay.cli import app
from assay.formats.stream import row_file
from assay.store import Store
from trip_rows import trip_rows

runner = CliRunner()
WORDS = ["the", "flight", "to", "paris", "leaves", "at", "nine", "hotel", "near", "station"]
CRITERIA = {
    "trajectory_exact_match": 1.0,
    "trajectory_any_order_match": 1.0,
    "trajectory_precision": 0.5,
    "trajectory_single_tool_use": {"threshold": 1.0, "tool_name": "get_weather"},
    "response_match_score": 0.6,
}


def _rows(n: int, seed: int = 5) -> list[dict[str, Any]]:
    return trip_rows(n, seed=seed, words=WORDS)


def _as_text(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Trajectories as JSON text, as a DataFrame of strings writes them."""
    keys = ("predicted_trajectory", "reference_trajectory")
    return [{k: json.dumps(v) if k in keys else v for k, v in r.items()} for r in rows]


def _parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Every column any row has (`from_pylist` would take the first row's keys only);
    # a row without one gets a null cell there.
    keys = list(dict.fromkeys(k for r in rows for k in r))
    table = pa.Table.from_pydict({k: [r.get(k) for r in rows] for k in keys})
    pq.write_table(table, path, row_group_size=700)
    return path


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _eval(tmp_path: Path, data: Path, *extra: str, tag: str) -> tuple[Any, dict[str, Any]]:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    out = tmp_path / f"{tag}.json"
    result = runner.invoke(
        app,
        ["eval", str(data), "--config", str(config), "--quiet", "--out", str(out),
         "--csv", str(tmp_path / f"{tag}.csv"), "--store", f"sqlite:///{tmp_path / 'db.sqlite'}",
         "--fresh", *extra],
    )  # fmt: skip
    doc = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    return result, doc


def _comparable(doc: dict[str, Any]) -> dict[str, Any]:
    doc = dict(doc)
    doc.pop("run_id")
    doc["cases"] = [
        {k: v for k, v in c.items() if k not in ("session_id", "eval_set_file")}
        for c in doc["cases"]
    ]
    return doc


@pytest.mark.parametrize(("text", "workers"), [(False, "2"), (True, "1")])
def test_parquet_rows_stream_to_the_results_of_the_same_json_lines(
    tmp_path: Path, text: bool, workers: str
) -> None:
    rows = _rows(2_300)  # several record batches and row groups
    written = _as_text(rows) if text else rows
    data = _parquet(tmp_path / "p" / "rows.parquet", written)
    same = _jsonl(tmp_path / "j" / "rows.jsonl", rows)
    found = row_file(data, None)
    assert found is not None and found.kind == "parquet" and found.count_rows() == 2_300
    streamed, streamed_doc = _eval(tmp_path, data, "--workers", workers, tag="parquet")
    # The path that loads the file whole (as --html takes it).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("assay.cli.eval._streamable", lambda *_: None)
        loaded, loaded_doc = _eval(tmp_path, data, tag="loaded")
    reference, reference_doc = _eval(tmp_path, same, tag="jsonl")
    assert streamed.exit_code == loaded.exit_code == reference.exit_code == 1, streamed.output
    assert _comparable(streamed_doc) == _comparable(reference_doc) == _comparable(loaded_doc)
    assert streamed_doc["summary"]["case_count"] == 2_300
    assert (tmp_path / "parquet.csv").read_text() == (tmp_path / "jsonl.csv").read_text()
    with Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}") as db:
        stored = db.case_results(streamed_doc["run_id"])
        assert stored == db.case_results(reference_doc["run_id"])
        assert db.get_run(streamed_doc["run_id"]).status == "COMPLETED"


def test_a_bad_row_is_named_by_row_number_and_column(tmp_path: Path) -> None:
    rows = _as_text(_rows(1_600))
    rows[1_234] = {**rows[1_234], "predicted_trajectory": '[{"tool_name": 3}]'}
    data = _parquet(tmp_path / "rows.parquet", rows)
    failed, _ = _eval(tmp_path, data, tag="bad")
    assert failed.exit_code == 2
    assert "Traceback" not in failed.output
    message = failed.stderr
    assert "row 1235, predicted_trajectory[0].tool_name" in message, message
    assert "rows.parquet" in message
    with Store.open(f"sqlite:///{tmp_path / 'db.sqlite'}") as db:
        (info,) = db.list_runs()
        assert info.status == "INTERRUPTED"
        assert len(db.case_results(info.id)) == 1_234  # the rows before it are kept


def test_mlflow_rows_in_parquet_load_as_their_json_lines(tmp_path: Path) -> None:
    rows = [
        {
            "inputs": {"question": f"What is {i} + 1?"},
            "outputs": f"It is {i + 1}.",
            "expectations": {"expected_response": f"It is {i + 1}."},
        }
        for i in range(30)
    ]
    from_parquet = formats.load(_parquet(tmp_path / "p" / "qa.parquet", rows))
    from_jsonl = formats.load(_jsonl(tmp_path / "j" / "qa.jsonl", rows))
    assert len(from_parquet.cases) == 30
    assert [c.model_dump() for c in from_parquet.cases] == [
        c.model_dump() for c in from_jsonl.cases
    ]
    # Not Vertex rows: `assay eval` loads the file whole instead of streaming it.
    assert row_file(tmp_path / "p" / "qa.parquet", None) is None


def test_a_file_that_is_not_parquet_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "rows.parquet"
    data.write_text('{"prompt": "hi"}\n', encoding="utf-8")
    result = runner.invoke(app, ["eval", str(data), "--no-store", "--quiet"])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "not a readable Parquet file" in lines[0], result.stderr


def test_a_folder_includes_its_parquet_row_files(tmp_path: Path) -> None:
    folder = tmp_path / "evals"
    _parquet(folder / "rows.parquet", _as_text(_rows(40)))
    _parquet(folder / "other.parquet", [{"unrelated": 1, "columns": "x"}])
    from assay.formats.folders import expand_inputs

    with pytest.warns(UserWarning, match="other.parquet"):
        found = expand_inputs([folder])
    assert found == [folder / "rows.parquet"]
