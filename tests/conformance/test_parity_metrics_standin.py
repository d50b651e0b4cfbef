"""The five metrics ADK hands to Vertex (or judges over the whole conversation) run end to
end against the stand-in judge as documented: `python -m assay.testing.judge_server`
with no script answers each prompt with a reply the metric parses, and `assay eval`
scores every one; `assay metrics` lists them with their score ranges."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay import evaluate, formats
from assay.cli import app
from assay.testing.judge_server import JudgeServer, StandinRequest
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
    listing = CliRunner().invoke(app, ["metrics"], env={"COLUMNS": "300"})
    assert listing.exit_code == 0
    listed = {line.split()[0] for line in listing.output.splitlines() if line.startswith("  ")}
    for name, (low, high) in NEW.items():
        assert name in listed, name
        shown = CliRunner().invoke(app, ["metrics", name], env={"COLUMNS": "300"})
        assert shown.exit_code == 0, shown.output
        score_range = re.search(r"^score range\s+(\S+)", shown.output, re.M)
        assert score_range is not None, shown.output
        assert score_range.group(1) == f"{low:g}..{high:g}", name
    table = (ROOT / "docs" / "metric-list.md").read_text()
    for name in NEW:
        assert f"| `{name}` |" in table, name


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


_IDS = re.compile(r"^- \[id: ([^\]]+)\]", re.MULTILINE)


def _reply(request: StandinRequest) -> str:
    """A judge answering each of the new prompts: checks written, then met or not."""
    prompt = request.prompt
    if "You rate how coherent" in prompt:
        return json.dumps({"explanation": "clear", "score": 4})
    if "You prepare the checklist" in prompt:
        checks = [{"id": "a", "property": "First check."}, {"id": "b", "property": "Second."}]
        return json.dumps({"rubrics": checks})
    ids = _IDS.findall(prompt)
    assert ids, prompt[:200]
    entries = [
        {"id": rid, "rationale": "seen", "verdict": "no" if i == 0 else "yes",
         "turn": 1 if i == 0 else None}
        for i, rid in enumerate(ids)
    ]  # fmt: skip
    return json.dumps({"rubrics": entries})


@pytest.mark.parametrize("backend", ["openai", "gemini", "anthropic"])
def test_every_new_metric_runs_on_every_judge_backend(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "stand-in")
    monkeypatch.setenv("GEMINI_API_KEY", "stand-in")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "stand-in")
    loaded = formats.load(ROOT / "tests" / "data" / "parity" / "multi_turn_trajectory.evalset.json")
    recorded = loaded.model_copy(
        update={"cases": [c.model_copy(update={"actual": c.reference}) for c in loaded.cases]}
    )
    with JudgeServer(_reply) as server:
        base = server.openai_base_url if backend == "openai" else server.base_url
        options = {"judge_model": f"{backend}:stand-in", "base_url": base, "num_samples": 1}
        rubric = {"rubric_id": "r", "rubric_content": {"text_property": "Kept to the plan."}}
        metrics = {name: {"judge_model_options": options} for name in NEW}
        metrics["rubric_based_multi_turn_trajectory_quality_v1"]["rubrics"] = [rubric]
        result = evaluate(recorded, metrics=metrics, use_cache=False)
        requests = server.requests
    assert server.errors == []
    assert {r.dialect for r in requests} == {backend}
    assert all(r.json_schema for r in requests)  # each metric asked for its reply's shape
    # The criterion's rubric comes first and is the one not met; the fixture's cases add
    # 3, 1 and 0 rubrics of their own.
    trajectory = {"booking": 0.75, "single_turn": 0.5, "criterion_rubrics_only": 0.0}
    for case in result.cases:
        got = {name: case.metrics[name].score for name in NEW}
        assert got == {
            "rubric_based_multi_turn_trajectory_quality_v1": trajectory[case.case_id],
            "multi_turn_task_success_v1": 0.5,
            "multi_turn_trajectory_quality_v1": 0.5,
            "multi_turn_tool_use_quality_v1": 0.5,
            "response_evaluation_score": 4.0,
        }, case.case_id
        assert case.metrics["multi_turn_tool_use_quality_v1"].details["violations"] == {"a": 1}
