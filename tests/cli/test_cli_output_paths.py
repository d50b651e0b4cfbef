"""Every file an `assay` command writes: missing folders are created, a folder target
takes the command's default name or is refused (exit 2, one line), never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "home_automation" / "test_config.json"
EVALSET = ROOT / "examples" / "home_automation" / "home.evalset.json"
RECORDED = ROOT / "examples" / "recorded" / "home_rows.jsonl"


def _ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    return result.output


def _refused(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.output


@pytest.mark.parametrize("name", ["eval_config.json", "test_config.json"])
def test_convert_to_adk_config_creates_the_missing_folders(tmp_path: Path, name: str) -> None:
    target = tmp_path / "does" / "not" / "exist" / name
    _ok(["convert", str(CONFIG), str(target), "--to", "adk-config"])
    assert "criteria" in json.loads(target.read_text("utf-8"))


def test_convert_to_adk_config_into_a_folder_writes_test_config_json(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "folder"
    output = _ok(["convert", str(CONFIG), f"{folder}/", "--to", "adk-config"])
    written = folder / "test_config.json"
    assert "criteria" in json.loads(written.read_text("utf-8"))
    assert str(written) in output.replace("\n", "")


def test_convert_an_eval_set_into_missing_folders(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "home.evalset.json"
    _ok(["convert", str(EVALSET), str(target), "--to", "adk"])
    assert len(json.loads(target.read_text("utf-8"))["eval_cases"]) == 14


def test_an_eval_set_target_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    output = _refused(["convert", str(EVALSET), f"{tmp_path}/", "--to", "adk"])
    assert "is a folder: give a file name in it" in output


def test_a_parent_that_is_a_file_is_refused_by_name(tmp_path: Path) -> None:
    blocker = tmp_path / "plain.txt"
    blocker.write_text("x", encoding="utf-8")
    output = _refused(["convert", str(CONFIG), str(blocker / "c.json"), "--to", "adk-config"])
    assert "is a file, not a folder" in output.replace("\n", "")


@pytest.mark.parametrize(
    ("flag", "name"),
    [("--out", "r.json"), ("--junit", "j.xml"), ("--csv", "r.csv"), ("--html", "r.html")],
)
def test_every_eval_report_creates_the_missing_folders(
    tmp_path: Path, flag: str, name: str
) -> None:
    target = tmp_path / "x" / "y" / name
    _ok(["eval", str(RECORDED), "--no-store", flag, str(target)])
    assert target.stat().st_size > 0


def test_report_html_of_a_stored_run_creates_the_missing_folders(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    _ok(["eval", str(RECORDED), "--store", store])
    target = tmp_path / "deep" / "er" / "report.html"
    _ok(["report", "latest", "--store", store, "--html", str(target)])
    assert target.read_text("utf-8").startswith("<!")
