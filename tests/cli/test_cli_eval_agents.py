"""`assay eval` running agents: tool behaviour, run method, CES defaults, scenarios."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.testing.judge_server import JudgeServer, StandinRequest

runner = CliRunner()
BELLA_NOTTE = (
    Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld/ces/bella_notte/evaluations"
)
OFF_TOPIC = BELLA_NOTTE / "Off-the-Rails_-_Repeated_Off-Topic.json"
LARGE_PARTY = BELLA_NOTTE / "Scenario_-_Large_Party_Rejection.json"

BOTS = """
from assay.core import Step, ToolCall, ToolResponse, Turn

async def maitre(prompt, history, tools):
    if len(history) < 3:
        sm = {"status": "in_progress", **({} if history else {"filled": {}})}
        return Turn(steps=[Step(variables_update={"sm": sm})], final_response="Reservations only.")
    args = {"reason": "retry_exhausted", "session_escalated": True}
    call = ToolCall(name="end_session", args=args)
    payload, _ = await tools.execute(call, lambda: {"ended": "for real"})
    return Turn(steps=[Step(variables_update={"sm": {"status": "escalated"}}), Step(tool_call=call),
                       Step(tool_response=ToolResponse(name="end_session", response=payload))],
                final_response="Goodbye.")

async def host(prompt, tools):
    payload, _ = await tools.execute(ToolCall(name="set_party_size", args={"size": 12}),
                                     lambda: {"stored": 12})
    return Turn(steps=[Step(tool_call=ToolCall(name="set_party_size", args={"size": 12})),
                       Step(tool_response=ToolResponse(name="set_party_size", response=payload))],
                final_response="Parties of 1-8 only; write to events@bellanotte.com.")
"""


def _judge(request: StandinRequest) -> str:
    if "You play a human user" in request.messages[0]["content"]:
        return "A table for 12 people, please."
    return json.dumps({"explanation": "supported", "score": 1})


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "cli_bots.py").write_text(textwrap.dedent(BOTS), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with JudgeServer(_judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-stand-in")
        yield tmp_path


def _cases(report: Path) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(report.read_text("utf-8"))["cases"]
    return cases


def test_ces_golden_with_fake_tools_and_default_criteria(workdir: Path) -> None:
    out = workdir / "report.json"
    args = ["eval", str(OFF_TOPIC), "--agent", "cli_bots:maitre", "--tools", "fake",
            "--judge", "openai:stand-in", "--no-store", "--out", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    # end_session has no mock: under FAKE it is not run, so the case cannot pass.
    assert result.exit_code == 1, result.output
    (case,) = _cases(out)
    assert case["status"] == "NOT_EVALUATED"
    assert "tool call(s) not run (end_session)" in case["error"]
    assert json.loads(out.read_text("utf-8"))["metrics"] == [
        "parameter_correctness_score",
        "tool_invocation_score",
        "tool_ordered_invocation_score",
        "golden_expectations",
        "hallucination",
    ]
    text = out.read_text("utf-8")
    assert "was not run: tool call behaviour is FAKE" in text  # no mock, so no real call
    assert '"for real"' not in text
    mixed = runner.invoke(app, [*args[:5], "mixed", *args[6:]])
    assert mixed.exit_code == 0, mixed.output
    assert '"for real"' in out.read_text("utf-8")


def test_without_a_judge_the_judged_defaults_are_not_evaluated(workdir: Path) -> None:
    out = workdir / "report.json"
    result = runner.invoke(
        app,
        ["eval", str(OFF_TOPIC), "--agent", "cli_bots:maitre", "--no-store", "--out", str(out)],
    )
    assert result.exit_code == 1
    (case,) = _cases(out)
    assert case["status"] == "NOT_EVALUATED"
    scores = {m["metric_name"]: m for m in case["overall_eval_metric_results"]}
    assert scores["tool_invocation_score"]["eval_status"] == 1  # deterministic checks ran


def test_scenario_with_a_user_model_and_runs(workdir: Path) -> None:
    out = workdir / "report.json"
    args = ["eval", str(LARGE_PARTY), "--agent", "cli_bots:host", "--user-model",
            "openai:user", "--max-turns", "1", "--runs", "2", "--tools", "mixed",
            "-m", "scenario_expectations", "--no-store", "--out", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "pass@2 1.00, pass^2 1.00" in result.output
    assert len(_cases(out)) == 2


def test_scenario_without_a_user_model_says_how_to_give_one(workdir: Path) -> None:
    out = workdir / "report.json"
    result = runner.invoke(
        app, ["eval", str(LARGE_PARTY), "--agent", "cli_bots:host", "--no-store", "--out", str(out)]
    )
    assert result.exit_code == 1
    (case,) = _cases(out)  # one run: nothing could differ between runs
    assert case["error_type"] == "NOT_SUPPORTED" and "--user-model" in case["error"]


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--tools", "pretend", "unknown tool call behaviour 'pretend'"),
        ("--run-method", "steady", "unknown run method 'steady'; use one of stable, naive"),
        ("--runs", "0", "runs must be at least 1"),
        ("--max-turns", "0", "max_turns must be 1 or more"),
    ],
)
def test_bad_run_flags_are_usage_errors(workdir: Path, flag: str, value: str, message: str) -> None:
    args = ["eval", str(LARGE_PARTY), "--agent", "cli_bots:host", "--no-store", flag, value]
    if flag == "--max-turns":
        args += ["--user-model", "openai:user"]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
