"""`assay convert`, `metrics`, `formats`, `--version`, and a real `assay` subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from assay import __version__, formats
from assay.cli import app, parse_mapping, parse_metric_flags
from assay.config import load_config
from assay.errors import ConfigError

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "tests" / "data" / "realworld"
EXAMPLE = REPO / "examples" / "home_automation" / "home.evalset.json"


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"assay {__version__}"


def test_metrics_lists_every_registered_metric() -> None:
    from assay.metrics import metric_names

    result = runner.invoke(app, ["metrics"], env={"COLUMNS": "250"})
    assert result.exit_code == 0
    for name in metric_names():
        assert name in result.output
    assert "informational" in result.output


def test_formats_lists_every_format() -> None:
    result = runner.invoke(app, ["formats"])
    assert result.exit_code == 0
    for name in formats.FORMAT_MODULES:
        assert f" {name} " in result.output


def test_convert_eval_set_round_trip(tmp_path: Path) -> None:
    rows = REPO / "examples" / "recorded" / "home_rows.jsonl"
    target = tmp_path / "out.evalset.json"
    result = runner.invoke(app, ["convert", str(rows), str(target), "--to", "adk"])
    assert result.exit_code == 0, result.output
    assert "(4 cases, adk)" in result.output
    back = formats.load(target)
    assert [c.id for c in back.cases] == [c.id for c in formats.load(rows).cases]
    assert formats.detect_format(json.loads(target.read_text(encoding="utf-8"))) == "adk"


def test_convert_with_column_mapping(tmp_path: Path) -> None:
    source = tmp_path / "qa.jsonl"
    source.write_text(
        json.dumps({"id": "q1", "question": "Turn on the fan", "golden": "The fan is on"}) + "\n",
        encoding="utf-8",
    )
    target = tmp_path / "qa.evalset.json"
    result = runner.invoke(
        app,
        ["convert", str(source), str(target), "--from", "vertex", "--to", "adk",
         "--map", "question=prompt,golden=reference"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (case,) = formats.load(target).cases
    assert case.user_turns()[0].user_input.text == "Turn on the fan"


def test_convert_config_to_adk_config(tmp_path: Path) -> None:
    source = SHARED / "adk" / "new_hire_onboarding" / "eval_config.json"
    target = tmp_path / "test_config.json"
    result = runner.invoke(app, ["convert", str(source), str(target), "--to", "adk-config"])
    assert result.exit_code == 0, result.output
    criteria = load_config(target).criteria
    assert set(criteria) == set(load_config(source).criteria)
    judged = criteria["final_response_match_v2"]
    assert isinstance(judged, dict)
    assert judged["judge_model_options"] == {"judge_model": "gemini-3-flash-preview",
                                             "num_samples": 1}  # fmt: skip
    # Written in snake_case, as ADK writes it.
    assert "judgeModelOptions" not in target.read_text(encoding="utf-8")


def test_convert_errors_exit_2(tmp_path: Path) -> None:
    unknown = runner.invoke(app, ["convert", str(EXAMPLE), str(tmp_path / "x"), "--to", "xml"])
    assert unknown.exit_code == 2
    assert "unknown format 'xml'" in unknown.output
    wrong = runner.invoke(
        app, ["convert", str(EXAMPLE), str(tmp_path / "x"), "--from", "adk-config", "--to", "adk"]
    )
    assert wrong.exit_code == 2
    assert "--to adk-config" in wrong.output
    missing = runner.invoke(app, ["convert", str(tmp_path / "no.json"), "o.json", "--to", "adk"])
    assert missing.exit_code == 2 and "file not found" in missing.output


def test_flag_parsers() -> None:
    assert parse_mapping(None) is None
    assert parse_mapping(["a=b", " c = d ,e=f"]) == {"a": "b", "c": "d", "e": "f"}
    assert parse_metric_flags(["x", "y=0.5"]) == {"x": None, "y": 0.5}
    for bad in (["a"], ["a="], ["=b"]):
        try:
            parse_mapping(bad)
        except ConfigError as exc:
            assert "expected SRC=DST" in str(exc)
        else:
            raise AssertionError(f"{bad} was accepted")


def test_real_assay_subprocess(tmp_path: Path) -> None:
    exe = shutil.which("assay")
    base = [exe] if exe else [sys.executable, "-m", "assay.cli"]
    rows = REPO / "examples" / "recorded" / "home_rows.jsonl"
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [*base, "eval", str(rows), "-m", "trajectory_in_order_match", "--out", str(out),
         "--no-store"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "Result: 3 passed, 1 failed, 0 not evaluated (4 cases)" in proc.stdout
    statuses = {c["eval_id"]: c["status"] for c in json.loads(out.read_text("utf-8"))["cases"]}
    assert statuses["wrong_device"] == "FAILED" and statuses["living_room_23"] == "PASSED"
    bad = subprocess.run(
        [*base, "eval", str(rows), "-m", "nope", "--no-store"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert bad.returncode == 2
    assert "unknown metric 'nope'" in bad.stderr and "Traceback" not in bad.stderr
