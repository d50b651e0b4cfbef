"""`assay eval` through typer's CliRunner: recorded data, reports, store, errors, Ctrl-C."""

from __future__ import annotations

import json
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.store import Store

runner = CliRunner()


def _call(name: str, **args: object) -> dict[str, object]:
    return {"tool_name": name, "tool_input": args}


def _rows_file(tmp_path: Path, *, wrong: bool = False, name: str = "rows.jsonl") -> Path:
    """Vertex rows with recorded responses: scored without an agent."""
    rows = [
        {
            "id": "lights",
            "prompt": "Turn off device_2.",
            "predicted_trajectory": [_call("set_device_info", device_id="device_2")],
            "reference_trajectory": [_call("set_device_info", device_id="device_2")],
            "response": "device_2 is off now",
            "reference": "device_2 is off now",
        },
        {
            "id": "heat",
            "prompt": "Set the bedroom to 22.",
            "predicted_trajectory": [
                _call("set_temperature", location="Bedroom", temperature=25 if wrong else 22)
            ],
            "reference_trajectory": [_call("set_temperature", location="Bedroom", temperature=22)],
            "response": "The bedroom is set to 22 degrees",
            "reference": "The bedroom is set to 22 degrees",
        },
    ]
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _status_line(output: str, case_id: str) -> str:
    return next(line for line in output.splitlines() if f" {case_id} " in line)


def test_recorded_rows_all_pass_exit_0(tmp_path: Path) -> None:
    data = _rows_file(tmp_path)
    result = runner.invoke(app, ["eval", str(data), "--metric", "trajectory_exact_match",
                                 "--no-store"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "PASSED" in _status_line(result.output, "lights")
    assert "Result: 2 passed, 0 failed, 0 not evaluated (2 cases)" in result.output


def test_a_failing_row_exits_1_and_metric_threshold_flag_applies(tmp_path: Path) -> None:
    data = _rows_file(tmp_path, wrong=True)
    result = runner.invoke(
        app,
        ["eval", str(data), "-m", "trajectory_exact_match", "-m", "response_match_score=0.9",
         "--no-store"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    heat = _status_line(result.output, "heat")
    assert "FAILED" in heat and "0.00 / 1.00" in heat
    assert "1.00 / 0.90" in heat  # the response still matched, against the flag's threshold


def test_config_beside_the_data_is_used(tmp_path: Path) -> None:
    data = _rows_file(tmp_path, wrong=True)
    (tmp_path / "test_config.json").write_text(
        json.dumps({"criteria": {"trajectory_recall": 0.0}}), encoding="utf-8"
    )
    result = runner.invoke(app, ["eval", str(data), "--no-store"])
    assert result.exit_code == 0, result.output
    assert "trajectory_recall" in result.output
    assert "tool_trajectory_avg_score" not in result.output
    assert "criteria from" in result.output
    # An explicit --config wins over the file beside the data.
    other = tmp_path / "strict.json"
    other.write_text(json.dumps({"criteria": {"trajectory_exact_match": 1.0}}), "utf-8")
    result = runner.invoke(app, ["eval", str(data), "--config", str(other), "--no-store"])
    assert result.exit_code == 1
    assert "trajectory_exact_match" in result.output


def test_no_agent_and_no_recorded_response_is_not_evaluated(tmp_path: Path) -> None:
    data = tmp_path / "prompts.jsonl"
    data.write_text(
        json.dumps({"id": "q1", "prompt": "Turn on the fan.", "reference": "The fan is on."})
        + "\n",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["eval", str(data), "-m", "response_match_score", "--no-store"])
    assert result.exit_code == 1
    assert "NOT_EVALUATED" in _status_line(result.output, "q1")
    assert "no agent given and the case has no recorded response" in result.output
    assert "Hint:" in result.output and "--agent" in result.output


def test_reports_are_written(tmp_path: Path) -> None:
    data = _rows_file(tmp_path, wrong=True)
    out, junit, rows = tmp_path / "r" / "results.json", tmp_path / "junit.xml", tmp_path / "r.csv"
    result = runner.invoke(
        app,
        ["eval", str(data), "-m", "trajectory_exact_match", "--out", str(out), "--junit",
         str(junit), "--csv", str(rows), "--no-store"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert {c["eval_id"]: c["final_eval_status"] for c in doc["cases"]} == {"lights": 1, "heat": 2}
    assert doc["cases"][0]["eval_set_file"] == str(data)
    assert doc["metrics"] == ["trajectory_exact_match"]
    assert doc["summary"]["row_count"] == 2
    root = ET.parse(junit).getroot()
    assert root.get("tests") == "2" and root.get("failures") == "1"
    lines = rows.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and "trajectory_exact_match/score" in lines[0]


def test_quiet_prints_only_the_summary(tmp_path: Path) -> None:
    data = _rows_file(tmp_path)
    result = runner.invoke(app, ["eval", str(data), "-m", "trajectory_exact_match", "-q",
                                 "--no-store"])  # fmt: skip
    assert result.exit_code == 0
    assert result.output.strip().splitlines() == [
        "Result: 2 passed, 0 failed, 0 not evaluated (2 cases)"
    ]


def test_repeated_runs_report_pass_at_k(tmp_path: Path) -> None:
    data = _rows_file(tmp_path, wrong=True)
    result = runner.invoke(
        app, ["eval", str(data), "-m", "trajectory_exact_match", "--runs", "3", "--no-store"]
    )
    assert result.exit_code == 1
    assert "(6 case runs)" in result.output
    assert "pass@3 0.50, pass^3 0.50" in result.output


def test_runs_are_stored_and_listed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    data = _rows_file(tmp_path, wrong=True)
    result = runner.invoke(app, ["eval", str(data), "-m", "trajectory_exact_match",
                                 "--store", url])  # fmt: skip
    assert result.exit_code == 1
    with Store.open(url) as store:
        (info,) = store.list_runs()
        assert info.status == "COMPLETED"
        assert (info.passed, info.failed, info.not_evaluated) == (1, 1, 0)
        assert len(store.case_results(info.id)) == 2
    assert f"run {info.id} stored" in result.output
    listing = runner.invoke(app, ["runs", "--store", url])
    assert listing.exit_code == 0
    # The id as its unique prefix (at least 8 characters), the status whole.
    assert info.id[:8] in listing.output and "COMPLETED" in listing.output


def test_empty_store_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    Store.open(url).close()
    result = runner.invoke(app, ["runs", "--store", url])
    assert result.exit_code == 0
    assert "no runs stored yet" in result.output
    # A store that does not exist is an error; listing does not create it.
    missing = runner.invoke(app, ["runs", "--store", f"sqlite:///{tmp_path / 'typo.db'}"])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    assert not (tmp_path / "typo.db").exists()


def test_ctrl_c_marks_the_run_interrupted_and_keeps_completed_cases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"interrupting_agent_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(
        "calls = []\n"
        "def agent(prompt):\n"
        "    calls.append(prompt)\n"
        "    if len(calls) == 3:\n"
        "        raise KeyboardInterrupt\n"
        "    return 'done'\n",
        encoding="utf-8",
    )
    rows = [{"id": f"case{i}", "prompt": f"p{i}", "reference": "done"} for i in range(5)]
    data = tmp_path / "prompts.json"
    data.write_text(json.dumps(rows), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    out = tmp_path / "results.json"
    result = runner.invoke(
        app,
        ["eval", str(data), "--agent", f"{module}:agent", "-m", "response_match_score",
         "--concurrency", "1", "--store", url, "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 130, result.output
    assert "interrupted: 2 of 5 case runs completed" in result.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [c["eval_id"] for c in doc["cases"]] == ["case0", "case1"]
    with Store.open(url) as store:
        (info,) = store.list_runs()
        assert info.status == "INTERRUPTED"
        assert len(store.case_results(info.id)) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "nope"], "unknown format 'nope'; valid formats are: adk"),
        (["--map", "question"], "--map 'question': expected SRC=DST"),
        (["--map", "=request"], "expected SRC=DST"),
        (["-m", "response_match_score=high"], "the threshold must be a number"),
        (["-m", "no_such_metric"], "unknown metric 'no_such_metric'; `assay metrics` lists"),
        (["--agent", "no_colon"], "expected MODULE:ATTRIBUTE"),
        (["--agent", "surely_missing_module_xyz:agent"], "cannot import module"),
        (["--runs", "0"], "runs must be at least 1"),
    ],
)
def test_usage_errors_exit_2_with_a_message(tmp_path: Path, args: list[str], message: str) -> None:
    data = _rows_file(tmp_path)
    result = runner.invoke(app, ["eval", str(data), *args, "--no-store"])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_misspelt_metric_gets_the_closest_name_not_every_name(tmp_path: Path) -> None:
    args = ["eval", str(_rows_file(tmp_path)), "-m", "respons_match_score", "--no-store"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "unknown metric 'respons_match_score' (did you mean 'response_match_score'?)" in (
        result.output
    )
    assert "`assay metrics` lists the" in result.output
    assert "tool_trajectory_avg_score" not in result.output


def test_input_errors_exit_2(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["eval", str(tmp_path / "nope.json"), "--no-store"])
    assert missing.exit_code == 2
    assert "file not found" in missing.output
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    result = runner.invoke(app, ["eval", str(broken), "--no-store"])
    assert result.exit_code == 2
    assert "not valid JSON" in result.output and "broken.json" in result.output
    twice = _rows_file(tmp_path)
    result = runner.invoke(app, ["eval", str(twice), str(twice), "--no-store"])
    assert result.exit_code == 2
    assert "distinct eval set id" in result.output


def test_missing_data_argument_is_a_usage_error() -> None:
    assert runner.invoke(app, ["eval"]).exit_code == 2
