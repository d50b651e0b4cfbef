"""Inputs the seeded tools accept today: MLflow classic CSVs, saved Vertex results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay import formats
from assay.cli import app
from assay.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data" / "parity"


def test_mlflow_qa_csv_is_detected_and_mapped_without_from() -> None:
    evalset = formats.load(DATA / "mlflow_qa.csv")
    assert len(evalset.cases) == 3
    first = evalset.cases[0]
    assert first.reference is not None
    assert first.reference[0].user_input.text == "What is MLflow?"
    assert first.expected_response is not None
    assert first.expected_response.startswith("MLflow is an open source platform")


def test_mlflow_retriever_csv_parses_python_list_cells() -> None:
    evalset = formats.load(DATA / "mlflow_retriever.csv")
    first, second, third = evalset.cases
    assert [c.doc_uri for c in first.expected_retrieved_context or []] == ["tracking.html"]
    assert first.actual is not None
    assert [c.doc_uri for c in first.actual[0].retrieved_chunks()] == [
        "runs.html",
        "tracking.html",
    ]
    assert [c.doc_uri for c in second.expected_retrieved_context or []] == [
        "models.html",
        "flavors.html",
    ]
    assert third.actual is not None
    assert third.actual[0].retrieved_chunks() == []


def test_retriever_csv_scores_document_recall(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            str(DATA / "mlflow_retriever.csv"),
            "--metric",
            "document_recall=0.5",
            "--no-store",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 1, result.output  # the third row retrieves nothing
    summary = json.loads(out.read_text())["summary"]
    assert summary["document_recall/mean"] == pytest.approx((1.0 + 0.5 + 0.0) / 3)


def test_ambiguous_header_lists_the_candidate_mappings(tmp_path: Path) -> None:
    path = tmp_path / "amb.csv"
    path.write_text("query,question,ground_truth\na,b,c\n")
    with pytest.raises(InputError) as info:
        formats.load(path)
    message = str(info.value)
    assert "ambiguous header" in message
    assert "--map query=request" in message
    assert "--map question=request" in message


def test_malformed_literal_cell_deep_in_a_csv_names_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    lines = ["question,predictions,ground_truth"]
    for i in range(6_000):
        truth = "['x.html', 'y.html'" if i == 4_999 else "['x.html']"
        lines.append(f'"q{i}","[\'x.html\']","{truth}"')
    path.write_text("\n".join(lines) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "assay.cli", "eval", str(path), "--no-store"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "$[4999].ground_truth" in proc.stderr
    assert "neither JSON nor a Python literal" in proc.stderr


def test_literal_cells_are_never_evaluated_as_code(tmp_path: Path) -> None:
    path = tmp_path / "evil.csv"
    path.write_text("question,ground_truth\n\"q\",\"[__import__('os').system('false')]\"\n")
    with pytest.raises(InputError, match="neither JSON nor a Python literal"):
        formats.load(path)


def test_saved_vertex_result_loads_as_recorded_rows_with_original_scores() -> None:
    evalset = formats.load(DATA / "vertex_saved_result.json")
    assert evalset.metadata["vertex:summary_metrics"]["rouge_1/mean"] == 0.6
    first = evalset.cases[0]
    assert first.actual is not None
    assert first.actual[0].final_response == "TV is now off."
    assert first.actual[0].latency_s == 1.2
    assert first.metadata["rouge_1/score"] == 0.57  # Vertex's own number, kept


def test_saved_vertex_result_is_rescored(tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            str(DATA / "vertex_saved_result.json"),
            "--metric",
            "trajectory_exact_match",
            "--no-store",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 1, result.output
    summary = json.loads(out.read_text())["summary"]
    # The same value Vertex reported in the saved summary (1 of 2 rows match exactly).
    assert summary["trajectory_exact_match/mean"] == 0.5
