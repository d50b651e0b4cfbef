"""The scenario example (examples/scenarios) runs offline end to end through the engine."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from examples.scenarios.agent import agent
from examples.scenarios.standin import script

from assay import formats
from assay.agents.callable import CallableAgent
from assay.agents.tools import ToolBehavior
from assay.config import default_criteria
from assay.core.results import EvalResult, Status
from assay.engine import RunOptions, arun, build_metrics
from assay.engine.judging import JudgeRunOptions
from assay.simulation import SimulatorOptions
from assay.testing.judge_server import JudgeServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "large_party.json"


def _run(server: JudgeServer, behavior: ToolBehavior) -> EvalResult:
    evalset = formats.load(EXAMPLE)
    metrics = build_metrics(names=default_criteria([evalset]))
    options = RunOptions(
        runs=2,
        tool_behavior=behavior,
        simulator=SimulatorOptions(model="openai:guest", base_url=server.openai_base_url),
    )
    return asyncio.run(
        arun([evalset], metrics, agent=CallableAgent(agent), options=options,
             judges=JudgeRunOptions(model="openai:judge"))
    )  # fmt: skip


def test_the_scenario_example_passes_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    with JudgeServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        result = _run(server, ToolBehavior.FAKE)
        assert server.errors == []
    assert [c.status for c in result.cases] == [Status.PASSED, Status.PASSED]
    case = result.cases[0]
    assert set(case.metrics) == {
        "task_completed", "scenario_expectations", "scenario_rubrics", "hallucination"
    }  # fmt: skip
    assert [i.actual.user_input.text for i in case.invocations if i.actual] == [
        "Hi! I'd like to book dinner for 12 people this Friday at 8pm."
    ]
    observed = case.metrics["scenario_expectations"].details["expectation_outcomes"][0]
    # FAKE: the scenario's mock answered the tool call, not the real tool
    assert observed["observedToolCall"]["toolResponse"]["response"]["mocked"] is True
    assert case.metrics["task_completed"].details["parts"]["user_goal"] is True


def test_with_real_tools_the_real_tool_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    with JudgeServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        result = _run(server, ToolBehavior.REAL)
    case = result.cases[0]
    observed = case.metrics["scenario_expectations"].details["expectation_outcomes"][0]
    assert observed["observedToolCall"]["toolResponse"]["response"] == {
        "allowed": False, "max_online": 8
    }  # fmt: skip
    assert case.status is Status.PASSED
