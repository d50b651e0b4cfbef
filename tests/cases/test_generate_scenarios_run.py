"""Generated ADK scenario cases run and are scored with the default criteria.

`assay cases generate --scenarios` writes an ADK `conversation_scenario` case with its
rubrics at case level (where ADK keeps them). google-adk's `LocalEvalService` copies
case-level rubrics onto every invocation it plays, and each rubric metric reads those of
its type; assay does the same, so the generated set is judged, not NOT_EVALUATED.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.config import default_criteria
from assay.formats import load
from assay.testing.judge_server import JudgeServer, StandinReply, StandinRequest
from assay.testing.standin_judges import verdict_instance

REPO = Path(__file__).resolve().parents[2]
HOME = str(REPO / "examples" / "home_automation" / "definition.json")
#: the expected outcome of the generated case `switch_off_bedroom_lamp` (a rubric)
LAMP_OUTCOME = "The bedroom lamp (device_2) is off and the reply says so."


def _user_or_judge(request: StandinRequest) -> StandinReply:
    """The simulated user repeats a request; the judge meets every rubric except the
    lamp case's outcome, so the scores show the rubrics were really read."""
    if "You play a human user" in request.messages[0]["content"]:
        return StandinReply("Is the kitchen light on?")
    positive = LAMP_OUTCOME not in request.user
    schema = request.json_schema
    if schema:
        return StandinReply(json.dumps(verdict_instance(schema, positive)))
    return StandinReply("yes" if positive else "no")


def test_generated_scenarios_run_with_a_simulated_user_and_are_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from examples.home_automation.standin_generate import script as home_script

    monkeypatch.chdir(REPO)
    out = tmp_path / "scenarios.evalset.json"
    with JudgeServer(home_script) as generator:
        monkeypatch.setenv("OPENAI_BASE_URL", generator.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")
        made = CliRunner().invoke(app, ["cases", "generate", str(out), "--agent", HOME,
                                        "--model", "openai:gen", "--count", "3",
                                        "--scenarios"])  # fmt: skip
    assert made.exit_code == 0, made.output
    written = json.loads(out.read_text("utf-8"))["eval_cases"]
    assert all(c["conversation_scenario"] and c["rubrics"] for c in written)
    assert default_criteria([load(out)]) == {
        "task_completed": 1.0,
        "hallucination": 1.0,
        "rubric_based_final_response_quality_v1": 0.8,
        "rubric_based_tool_use_quality_v1": 1.0,
    }

    report = tmp_path / "report.json"
    with JudgeServer(_user_or_judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        ran = CliRunner().invoke(app, ["eval", str(out), "--agent",
                                       "examples.home_automation.agent:root_agent",
                                       "--user-model", "openai:user", "--judge", "openai:judge",
                                       "--runs", "1", "--max-turns", "2", "--no-store",
                                       "--out", str(report)])  # fmt: skip
        judged = [r.user for r in server.requests if "human user" not in r.messages[0]["content"]]
    assert ran.exit_code in (0, 1), ran.output
    assert "has no rubrics" not in ran.output
    assert any(LAMP_OUTCOME in text for text in judged)
    cases = {c["eval_id"]: c for c in json.loads(report.read_text("utf-8"))["cases"]}
    assert set(cases) == {c["eval_id"] for c in written}
    scores = {
        case_id: {m["metric_name"]: m.get("score") for m in c["overall_eval_metric_results"]}
        for case_id, c in cases.items()
    }
    lamp = scores.pop("switch_off_bedroom_lamp")
    assert lamp["rubric_based_final_response_quality_v1"] == 0.0
    assert cases["switch_off_bedroom_lamp"]["status"] == "FAILED"
    for case_id, by_metric in scores.items():
        assert by_metric["rubric_based_final_response_quality_v1"] == 1.0, case_id
        assert by_metric["rubric_based_tool_use_quality_v1"] == 1.0, case_id
        assert cases[case_id]["status"] == "PASSED", case_id


def test_scenario_rubrics_names_where_case_rubrics_are_read() -> None:
    from assay.core.cases import EvalCase, Rubric, Scenario, Turn
    from assay.metrics.judged.scenario import ScenarioRubrics

    case = EvalCase(
        id="c",
        scenario=Scenario(starting_prompt="hi", conversation_plan="ask"),
        rubrics=[Rubric(id="r", text="polite", type="FINAL_RESPONSE_QUALITY")],
    )
    reason = ScenarioRubrics().unscorable(case, [Turn(final_response="hello")])
    assert reason is not None and "rubric_based_final_response_quality_v1" in reason
