"""JSON, JUnit XML and CSV writers, checked by parsing what they wrote."""

from __future__ import annotations

import csv
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from report_samples import sample_result

from assay.errors import AssayError
from assay.report import build_report, write_csv, write_json, write_junit


def test_json_report_top_level_shape(tmp_path: Path) -> None:
    path = write_json(
        sample_result(),
        tmp_path / "sub" / "results.json",
        eval_set_files={"home": "data/home.evalset.json"},
    )
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert set(doc) == {"summary", "rows", "cases", "run_id", "eval_set_ids", "metrics"}
    assert doc["run_id"] == "run-123"
    assert doc["eval_set_ids"] == ["home", "other"]
    assert doc["metrics"][:2] == ["tool_trajectory_avg_score", "response_match_score"]
    assert doc["summary"]["response_match_score/mean"] == 0.575
    assert len(doc["rows"]) == 3
    # NaN is not JSON: it is written as null.
    assert doc["rows"][1]["latency_in_seconds"] is None
    assert [c["eval_id"] for c in doc["cases"]] == [
        "turn_off",
        "temperature",
        "no_response",
        "crash",
    ]
    assert doc["cases"][0]["eval_set_file"] == "data/home.evalset.json"
    assert "eval_set_file" not in doc["cases"][2]


def test_json_cases_carry_adk_statuses_and_scores() -> None:
    cases = build_report(sample_result())["cases"]
    passed, failed, not_evaluated, crashed = cases
    assert [c["final_eval_status"] for c in cases] == [1, 2, 3, 2]
    assert [c["status"] for c in cases] == ["PASSED", "FAILED", "NOT_EVALUATED", "FAILED"]
    overall = {m["metric_name"]: m for m in passed["overall_eval_metric_results"]}
    assert overall["response_match_score"] == {
        "metric_name": "response_match_score",
        "threshold": 0.8,
        "score": 0.875,
        "eval_status": 1,
    }
    assert overall["tool_call_count"]["eval_status"] == 4  # informational
    first = passed["eval_metric_result_per_invocation"][0]
    assert first["actual_invocation"]["invocation_id"] == "inv-1"
    assert first["actual_invocation"]["final_response"]["parts"][0]["text"] == (
        "Done, device_2 is off."
    )
    tool_uses = first["actual_invocation"]["intermediate_data"]["tool_uses"]
    assert tool_uses == [
        {"name": "set_device_info", "args": {"device_id": "device_2", "status": "OFF"}}
    ]
    # A non-object tool output is wrapped the way ADK records it.
    assert first["actual_invocation"]["intermediate_data"]["tool_responses"][0]["response"] == {
        "result": "done"
    }
    per = {m["metric_name"]: m for m in first["eval_metric_results"]}
    assert per["response_match_score"]["score"] == 0.75
    assert per["response_match_score"]["eval_status"] == 2  # 0.75 < 0.8 on this invocation
    assert failed["explanations"] == {"response_match_score": "rouge1 below threshold"}
    # An actual turn without an id takes the expected turn's position-based fallback.
    assert (
        failed["eval_metric_result_per_invocation"][0]["actual_invocation"]["invocation_id"]
        == "temperature-1"
    )
    assert not_evaluated["eval_metric_result_per_invocation"] == []
    assert all(m["score"] is None for m in not_evaluated["overall_eval_metric_results"])
    # The agent crashed before answering: the user input is kept, no response.
    crash_inv = crashed["eval_metric_result_per_invocation"][0]["actual_invocation"]
    assert crash_inv["user_content"]["parts"] == [{"text": "Break please"}]
    assert crash_inv["final_response"] is None
    assert crashed["failure"] is True and crashed["error_type"] == "RUNTIME_FAILURE"
    assert len({c["session_id"] for c in cases}) == 4


def test_every_json_case_validates_as_adk_eval_case_result() -> None:
    eval_result = pytest.importorskip("google.adk.evaluation.eval_result")
    for case in build_report(sample_result())["cases"]:
        parsed = eval_result.EvalCaseResult.model_validate(case)
        assert parsed.eval_id == case["eval_id"]
        assert parsed.final_eval_status.value == case["final_eval_status"]
        assert len(parsed.eval_metric_result_per_invocation) == len(
            case["eval_metric_result_per_invocation"]
        )


def test_junit_suites_cases_and_outcomes(tmp_path: Path) -> None:
    path = write_junit(sample_result(), tmp_path / "junit.xml")
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert root.get("tests") == "4"
    assert root.get("failures") == "1"
    assert root.get("errors") == "1"
    assert root.get("skipped") == "1"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"home", "other"}
    home = {tc.get("name"): tc for tc in suites["home"].findall("testcase")}
    assert set(home) == {"turn_off", "temperature", "crash"}
    assert list(home["turn_off"]) == []
    assert home["turn_off"].get("time") == "0.250"
    failure = home["temperature"].find("failure")
    assert failure is not None
    # The message is the failure analysis' reason; the body lists the failed metrics.
    assert failure.get("message") == "response drift: response_match_score 0.40 < 0.80"
    assert "response_match_score: score 0.4 < threshold 0.8" in (failure.text or "")
    assert "tool_trajectory_avg_score" not in failure.get("message", "")
    error = home["crash"].find("error")
    assert error is not None and error.get("type") == "RUNTIME_FAILURE"
    assert "boom" in error.get("message", "")
    skipped = suites["other"].find("testcase/skipped")
    assert skipped is not None
    assert "no agent given" in skipped.get("message", "")
    assert suites["home"].get("tests") == "3" and suites["other"].get("skipped") == "1"


def test_junit_names_repeated_runs(tmp_path: Path) -> None:
    result = sample_result()
    second = sample_result().cases[0]
    second.run_index = 1
    result.cases.append(second)
    root = ET.parse(write_junit(result, tmp_path / "j.xml")).getroot()
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert "turn_off [run 1]" in names and "turn_off [run 2]" in names


def test_csv_rows_round_trip(tmp_path: Path) -> None:
    path = write_csv(sample_result(), tmp_path / "rows.csv")
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 3
    header = list(rows[0])
    # Columns of every row appear, in first-seen order.
    assert header[:4] == ["eval_set_id", "case_id", "run", "prompt"]
    assert "response_match_score/explanation" in header and "error" in header
    assert float(rows[0]["response_match_score/score"]) == 0.75
    assert json.loads(rows[0]["predicted_trajectory"]) == [
        {"tool_name": "set_device_info", "tool_input": {"a": 1}}
    ]
    assert rows[1]["prompt"] == 'He said "hi", then left'
    assert rows[1]["response"] == "line one\nline two"
    assert rows[1]["latency_in_seconds"] == ""  # NaN
    assert rows[2]["response_match_score/score"] == ""
    assert rows[2]["error"] == "no agent"
    assert not math.isnan(float(rows[0]["latency_in_seconds"]))


def test_writers_report_unwritable_paths(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for writer in (write_json, write_junit, write_csv):
        with pytest.raises(AssayError, match="cannot write"):
            writer(sample_result(), blocker / "out")


def test_written_json_is_build_reports_document(tmp_path: Path) -> None:
    # The file is written case by case (json_report); parsed, it is the in-memory document.
    result = sample_result()
    files = {"home": "data/home.evalset.json"}
    path = write_json(result, tmp_path / "results.json", eval_set_files=files)
    assert json.loads(path.read_text(encoding="utf-8")) == build_report(
        result, eval_set_files=files
    )
    # One case per line, and no temporary files left beside the report.
    text = path.read_text(encoding="utf-8")
    assert sum('"eval_id":' in line for line in text.splitlines()) == 4
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_csv_from_the_spool_equals_the_in_memory_csv(tmp_path: Path) -> None:
    from assay.report.json_report import RowSpool, write_csv_from

    result = sample_result()
    spool = RowSpool(tmp_path / "results.json")
    for row in result.rows:
        spool.add(row)
    streamed = write_csv_from(spool, tmp_path / "streamed.csv").read_text(encoding="utf-8")
    spool.close()
    assert streamed == write_csv(result, tmp_path / "rows.csv").read_text(encoding="utf-8")


def test_rows_appended_by_other_processes_keep_their_place(tmp_path: Path) -> None:
    """Workers append their batches' rows to the spool itself (`RowSpool.hand_over`):
    the report holds every row once, in the order they were added, whichever process
    wrote them; a spool that also makes the CSV's lines keeps its rows (None)."""
    import os

    from assay.report.json_report import JsonReportWriter, RowSpool, dumps, rows_text

    rows = [{"case_id": f"c{i}", "n": i, "text": 'a\u00e9\n"b"'} for i in range(9)]
    spool = RowSpool(tmp_path / "results.json")
    writer = JsonReportWriter(
        tmp_path / "results.json", run_id="r", eval_set_ids=["s"], metrics=["m"], rows=spool
    )
    spool.add(rows[0])
    path = spool.hand_over()
    assert path is not None
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)  # as a worker opens it
    try:
        os.write(fd, rows_text([dumps(r) + b"\n" for r in rows[1:4]]))
        spool.appended(3)
        spool.add(rows[4])  # this process writes after what was appended
        os.write(fd, rows_text([dumps(r) + b"\n" for r in rows[5:]]))
        spool.appended(4)
    finally:
        os.close(fd)
    report = json.loads(writer.finish({}).read_text(encoding="utf-8"))
    assert report["rows"] == rows
    assert spool.count == 9

    with_csv = RowSpool(tmp_path / "other.json", csv=True)
    assert with_csv.hand_over() is None
    with_csv.close()
