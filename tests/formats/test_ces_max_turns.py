"""CES `scenario.maxTurns` is range checked when a file loads, as the service checks it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay import formats
from assay.cli import app
from assay.errors import InputError

runner = CliRunner()


def _evaluation(tmp_path: Path, max_turns: object, suffix: str = ".json") -> Path:
    path = tmp_path / f"booking{suffix}"
    body = {"displayName": "booking", "scenario": {"task": "Book a table", "maxTurns": max_turns}}
    path.write_text(json.dumps(body), encoding="utf-8")  # JSON is YAML too
    return path


@pytest.mark.parametrize("value", [0, -1, 2**31, 2**64, True, "5", 2.5])
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_out_of_range_max_turns_exits_2_naming_file_and_field(
    tmp_path: Path, value: object, suffix: str
) -> None:
    path = _evaluation(tmp_path, value, suffix)
    result = runner.invoke(app, ["eval", str(path), "--from", "ces", "--no-store"])
    assert result.exit_code == 2, result.output
    line = result.output.replace("\n", "")
    assert str(path) in line and "$.scenario.maxTurns" in line, line
    assert "an integer from 1 to 2147483647" in line
    assert "Traceback" not in result.output
    with pytest.raises(InputError, match="maxTurns"):
        formats.load(path, "ces")


@pytest.mark.parametrize("value", [1, 6, 2**31 - 1])
def test_max_turns_in_range_loads(tmp_path: Path, value: int) -> None:
    (case,) = formats.load(_evaluation(tmp_path, value), "ces").cases
    assert case.scenario is not None and case.scenario.max_turns == value
