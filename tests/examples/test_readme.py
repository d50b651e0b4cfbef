"""The README stays true: its metrics and formats tables, tour commands and snippets."""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import FORMAT_DESCRIPTIONS, app
from assay.formats import FORMAT_MODULES
from assay.metrics import metric_names

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def _table_names(heading: str) -> set[str]:
    section = README.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE))


def test_every_registered_metric_is_in_the_metrics_table() -> None:
    documented = _table_names("Metrics")
    missing = set(metric_names()) - documented
    assert not missing, f"README metrics table lacks: {sorted(missing)}"
    unknown = documented - set(metric_names())
    assert not unknown, f"README lists metrics that are not registered: {sorted(unknown)}"


def test_every_format_is_documented() -> None:
    assert _table_names("Formats") == set(FORMAT_MODULES)
    assert set(FORMAT_DESCRIPTIONS) == set(FORMAT_MODULES)


def _tour_commands() -> list[str]:
    commands = []
    for block in _blocks("bash"):
        for command in block.replace("\\\n", " ").splitlines():
            command = command.strip()
            if command.startswith("assay "):
                commands.append(command)
    return commands


@pytest.fixture
def in_example_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_tour_commands_run(in_example_copy: Path) -> None:
    commands = _tour_commands()
    assert len(commands) >= 4
    runner = CliRunner()
    for command in commands:
        result = runner.invoke(app, shlex.split(command)[1:])
        # 0 or 1 (cases failed on purpose); never a usage error or a crash.
        assert result.exit_code in (0, 1), f"{command}\n{result.output}"
    assert (in_example_copy / "results.json").is_file()
    assert (in_example_copy / "junit.xml").is_file()
    assert (in_example_copy / "home_rows.evalset.json").is_file()
    assert (in_example_copy / "home.ces.json").is_file()


def test_python_snippets_run(in_example_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(os.fspath(in_example_copy))
    namespace: dict[str, object] = {}
    for block in _blocks("python"):
        exec(compile(block, "README.md", "exec"), namespace)
    assert "result" in namespace and "res" in namespace
