"""Folders as input: every eval file under a folder, of every format; configs are not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay import formats
from assay.api import evaluate
from assay.cli import app
from assay.errors import AssayWarning, InputError
from assay.formats.folders import expand_inputs

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "data" / "realworld"
FILES = {
    "home.evalset.json": REPO / "examples" / "home_automation" / "home.evalset.json",
    "legacy/simple_test.test.json": REAL / "adk" / "home_automation" / "simple_test.test.json",
    "ces/large_party.json": REAL / "ces" / "bella_notte" / "evaluations"
    / "Scenario_-_Large_Party_Rejection.json",
    "ces/goldens.yaml": REAL / "ces" / "scrapi_yaml" / "golden_eval_example.yaml",
    "rows/smoke.json": REAL / "vertex" / "smoke-dataset.json",
    "rows/recorded.jsonl": REPO / "examples" / "recorded" / "home_rows.jsonl",
}  # fmt: skip
NOT_EVAL = {
    "test_config.json": '{"criteria": {"response_match_score": 0.5}}',
    "rows/eval_config.json": '{"criteria": {"response_match_score": 0.5}}',
    "legacy/initial.session.json": '{"state": {}}',
    "README.md": "# evals",
    "agent.py": "x = 1",
    ".hidden/skip.evalset.json": "{}",
}


@pytest.fixture
def evals(tmp_path: Path) -> Path:
    root = tmp_path / "evals"
    for name, source in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, root / name)
    for name, text in NOT_EVAL.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_a_folder_expands_to_every_eval_file_and_no_config(evals: Path) -> None:
    found = expand_inputs([evals])
    assert sorted(str(p.relative_to(evals)) for p in found) == sorted(FILES)


def test_a_data_file_of_no_known_format_is_left_out_with_a_warning(evals: Path) -> None:
    (evals / "notes.json").write_text('{"hello": "world"}', encoding="utf-8")
    with pytest.warns(AssayWarning, match=r"notes\.json: left out of the folder's eval files"):
        found = expand_inputs([evals])
    assert evals / "notes.json" not in found


def test_files_and_folders_mix_in_order(evals: Path) -> None:
    extra = REPO / "examples" / "checks" / "replies.jsonl"
    found = expand_inputs([extra, evals / "ces"])
    assert found == [extra, evals / "ces" / "goldens.yaml", evals / "ces" / "large_party.json"]


def test_a_folder_without_eval_files_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "test_config.json").write_text('{"criteria": {}}', encoding="utf-8")
    with pytest.raises(InputError, match="holds no eval file"):
        expand_inputs([tmp_path])


def test_assay_eval_takes_a_folder_and_its_config(evals: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["eval", str(evals / "rows"), "--no-store", "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(out.read_text("utf-8"))
    # rows/eval_config.json is the folder's config (ADK adds its informational
    # efficiency metrics to any config's criteria), not an eval set
    assert report["metrics"][0] == "response_match_score"
    assert "tool_trajectory_avg_score" not in report["metrics"]
    assert {c["eval_set_id"] for c in report["cases"]} == {"smoke", "recorded"}


def test_assay_eval_of_the_whole_tree_loads_every_format(evals: Path) -> None:
    result = runner.invoke(app, ["eval", str(evals), "--no-store", "--quiet"])
    assert result.exit_code in (0, 1), result.output
    total = sum(len(formats.load(source).cases) for source in FILES.values())
    assert f"({total} cases)" in result.output


def test_an_empty_folder_exits_2_naming_it(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", str(tmp_path), "--no-store"])
    assert result.exit_code == 2
    assert "holds no eval file" in result.output and str(tmp_path) in result.output


def test_evaluate_takes_a_folder(evals: Path) -> None:
    result = evaluate(evals / "rows", metrics=["response_match_score"])
    assert {c.eval_set_id for c in result.cases} == {"smoke", "recorded"}
