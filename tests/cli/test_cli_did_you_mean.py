"""Misspelt metrics, criteria keys and columns: a "did you mean" (difflib) and the file
they came from; a misspelt column is named in a warning while the run goes on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app

runner = CliRunner()


def _rows(tmp_path: Path) -> Path:
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([{"prompt": "hi", "response": "hello", "reference": "hello"}]))
    return rows


def _eval(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["eval", *args, "--no-store"])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"criteria": {"tool_trajectory_avg_scor": 1.0}},
            "criteria.tool_trajectory_avg_scor: unknown metric 'tool_trajectory_avg_scor'"
            " (did you mean 'tool_trajectory_avg_score'?); `assay metrics` lists the",
        ),
        (
            {"criteria": {"response_match_score": {"treshold": 0.5}}},
            "criteria.response_match_score: bad options for metric 'response_match_score':"
            " treshold: Extra inputs are not permitted (did you mean 'threshold'?)",
        ),
        (
            {"critera": {"response_match_score": 0.5}},
            "invalid eval config: critera: Extra inputs are not permitted (did you mean"
            " 'criteria'?)",
        ),
    ],
    ids=["metric", "criterion_key", "config_key"],
)
def test_a_misspelling_in_the_config_names_the_file_and_the_closest_name(
    tmp_path: Path, config: dict[str, object], message: str
) -> None:
    path = tmp_path / "my_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    code, output = _eval(str(_rows(tmp_path)), "--config", str(path))
    assert code == 2, output
    flat = " ".join(output.split())
    assert f"error: {path}: " in flat, output
    assert message in flat, output
    assert "Traceback" not in output


def test_the_config_found_beside_the_data_is_named_too(tmp_path: Path) -> None:
    (tmp_path / "test_config.json").write_text('{"criteria": {"respons_match_score": 0.5}}')
    code, output = _eval(str(_rows(tmp_path)))
    assert code == 2
    flat = " ".join(output.split())
    assert f"{tmp_path / 'test_config.json'}: criteria.respons_match_score: unknown metric" in flat
    assert "(did you mean 'response_match_score'?)" in flat


def test_a_metric_flag_from_the_command_line_names_no_file(tmp_path: Path) -> None:
    code, output = _eval(str(_rows(tmp_path)), "-m", "respons_match_score")
    assert code == 2
    assert output.startswith("error: unknown metric 'respons_match_score' (did you mean")


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    if path.suffix == ".csv":
        header = list(rows[0])
        lines = [",".join(header)] + [",".join(r[k] for k in header) for r in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        path.write_text(json.dumps(rows), encoding="utf-8")
    return path


# rows.csv and rows.jsonl are streamed; rows.json is loaded whole
@pytest.mark.parametrize("name", ["rows.csv", "rows.jsonl", "rows.json"])
def test_a_misspelt_column_is_named_while_the_run_goes_on(tmp_path: Path, name: str) -> None:
    rows = [{"prompt": f"q{i}", "response": "yes", "refrence": "yes", "topic": "t"}
            for i in range(3)]  # fmt: skip
    data = _write(tmp_path / name, rows)
    out = tmp_path / "out.json"
    # The program itself: its warnings are printed by `assay`'s own hook.
    args = ["eval", str(data), "-m", "response_match_score", "--out", str(out), "--no-store"]
    proc = subprocess.run(
        [sys.executable, "-m", "assay", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    code, output = proc.returncode, proc.stdout + proc.stderr
    assert code == 1, output  # the run went on: every case NOT_EVALUATED, as before
    flat = " ".join(output.split())
    assert (
        f"warning: {data}: column 'refrence' is not one assay reads (did you mean"
        " 'reference'?); it is kept as case metadata, and no case has a reference"
    ) in flat, output
    assert flat.count("column 'refrence'") == 1
    assert "topic" not in flat  # an ordinary extra column is metadata, no warning
    assert [c["status"] for c in json.loads(out.read_text())["cases"]] == ["NOT_EVALUATED"] * 3


def test_an_mlflow_column_near_miss_is_named(tmp_path: Path) -> None:
    rows = [{"request": "q", "response": "yes", "expected_respons": "yes"}]
    data = _write(tmp_path / "mlflow_rows.json", rows)
    _, output = _eval(str(data), "--from", "mlflow", "-m", "exact_match")
    flat = " ".join(output.split())
    meant = "(did you mean 'expected_response'?)"
    assert f"column 'expected_respons' is not one assay reads {meant}" in flat, output


def test_correct_columns_get_no_warning(tmp_path: Path) -> None:
    rows = [{"prompt": "q", "response": "yes", "reference": "yes", "category": "x"}]
    for name in ("ok.csv", "ok.json"):
        code, output = _eval(str(_write(tmp_path / name, rows)), "-m", "response_match_score")
        assert code == 0, output
        assert "warning" not in output


def test_a_misspelt_map_source_column_gets_the_closest_column(tmp_path: Path) -> None:
    data = tmp_path / "qa.json"
    data.write_text(json.dumps([{"question": "hi", "answer": "hello", "gold": "hello"}]))
    maps = ["--map", "questoin=prompt", "--map", "answer=response", "--map", "gold=reference"]
    code, output = _eval(str(data), "--from", "vertex", *maps, "-m", "response_match_score")
    assert code == 2, output
    flat = " ".join(output.split())
    assert "column mapping source 'questoin' is not a column of the data (did you mean" in flat
    assert "'question'?)" in flat
