"""Hostile input files: every one exits 2 with a one-line message, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app

DEPTH = 10_000


def _deep_json() -> str:
    return '{"eval_set_id": "x", "eval_cases": ' + "[" * DEPTH + "]" * DEPTH + "}"


def _deep_yaml() -> str:
    return "displayName: x\ngolden:\n" + "".join("  " * i + "- \n" for i in range(3000))


@pytest.mark.parametrize(
    ("name", "text", "command"),
    [
        ("deep.json", _deep_json(), ["eval"]),
        ("deep.evalset.json", "[" * DEPTH + "]" * DEPTH, ["eval"]),
        ("deep.jsonl", "[" * DEPTH + "]" * DEPTH + "\n", ["eval", "--from", "vertex"]),
        ("deep.yaml", _deep_yaml(), ["eval", "--from", "ces"]),
        ("deep.json", _deep_json(), ["convert", "--to", "vertex"]),
    ],
)
def test_deeply_nested_files_exit_2_with_a_message(
    tmp_path: Path, name: str, text: str, command: list[str]
) -> None:
    path = tmp_path / name
    path.write_text(text)
    args = [*command, str(path)]
    if command[0] == "convert":
        args.append(str(tmp_path / "out.json"))
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "nested too deeply" in result.stderr
    assert "Traceback" not in result.output and "RecursionError" not in result.output
    assert len(result.stderr.strip().splitlines()) <= 3  # one message, wrapped at most


def test_deeply_nested_config_exits_2(tmp_path: Path) -> None:
    data = tmp_path / "cases.evalset.json"
    data.write_text('{"eval_set_id": "s", "eval_cases": []}')
    config = tmp_path / "test_config.json"
    config.write_text('{"criteria": ' + "[" * DEPTH + "]" * DEPTH + "}")
    result = CliRunner().invoke(app, ["eval", str(data), "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert "nested too deeply" in result.stderr and "Traceback" not in result.output
