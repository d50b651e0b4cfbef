"""The five metrics ADK hands to Vertex (or judges over the whole conversation) run end to
end against the stand-in judge as documented: `python -m assay.testing.judge_server`
with no script answers each prompt with a reply the metric parses, and `assay eval`
scores every one; `assay metrics` lists them with their score ranges."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.testing.standin_schema import instance_of

ROOT = Path(__file__).resolve().parents[2]
HOME = ROOT / "examples" / "home_automation"
NEW = {
    "rubric_based_multi_turn_trajectory_quality_v1": (0.0, 1.0),
    "multi_turn_task_success_v1": (0.0, 1.0),
    "multi_turn_trajectory_quality_v1": (0.0, 1.0),
    "multi_turn_tool_use_quality_v1": (0.0, 1.0),
    "response_evaluation_score": (1.0, 5.0),
}


@pytest.fixture
def standin() -> Iterator[str]:
    """`python -m assay.testing.judge_server` on a free loopback port; its base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay.testing.judge_server", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on " in line, line
        yield line.split("listening on ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_every_new_metric_scores_against_the_default_standin(
    tmp_path: Path, standin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{standin}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "stand-in")
    criteria: dict[str, object] = {name: {"threshold": low} for name, (low, _) in NEW.items()}
    criteria["rubric_based_multi_turn_trajectory_quality_v1"] = {
        "threshold": 0.5,
        "rubrics": [
            {"rubric_id": "asked", "rubric_content": {"text_property": "Did what was asked."}},
            {"rubric_id": "tools", "rubric_content": {"text_property": "Used the tools."}},
        ],
    }
    config = tmp_path / "test_config.json"
    config.write_text(json.dumps({"criteria": criteria}))
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            str(HOME / "home.evalset.json"),
            "--agent",
            "examples.home_automation.agent:root_agent",
            "--config",
            str(config),
            "--judge",
            "openai:stand-in",
            "--no-store",
            "--out",
            str(out),
        ],
        env={**os.environ},
    )
    assert result.exit_code in (0, 1), result.output
    cases = json.loads(out.read_text())["cases"]
    assert cases
    for case in cases:
        overall = {m["metric_name"]: m for m in case["overall_eval_metric_results"]}
        for name, (low, high) in NEW.items():
            score = overall[name]["score"]
            assert score is not None, (case["eval_id"], name, case.get("explanations"))
            assert low <= score <= high
            # The stand-in's schema instance: every rubric met, the top... first rating.
            assert overall[name]["eval_status"] == 1, (case["eval_id"], name)


def test_assay_metrics_lists_them_with_their_ranges() -> None:
    result = CliRunner().invoke(app, ["metrics"], env={"COLUMNS": "300"})
    assert result.exit_code == 0
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in result.output.splitlines()]
    ranges = {row[0]: row[2] for row in rows if len(row) > 2 and row[0]}
    for name, (low, high) in NEW.items():
        assert ranges[name] == f"{low:g}..{high:g}", name
    readme = (ROOT / "README.md").read_text()
    for name in NEW:
        assert f"| `{name}` |" in readme, name


def test_schema_instances_cover_each_rubric_id_once() -> None:
    schema = {
        "type": "object",
        "properties": {
            "rubrics": {
                "type": "array",
                "minItems": 3,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "enum": ["a", "b", "c"]},
                        "verdict": {"type": "string", "enum": ["yes", "no"]},
                        "turn": {"type": ["integer", "null"]},
                    },
                },
            }
        },
    }
    got = instance_of(schema)
    assert [r["id"] for r in got["rubrics"]] == ["a", "b", "c"]
    assert {r["verdict"] for r in got["rubrics"]} == {"yes"}
    assert all(isinstance(r["turn"], int) for r in got["rubrics"])
