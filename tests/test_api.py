"""The notebook API: `assay.evaluate` and Vertex-style `EvalTask`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import assay
from assay import formats
from assay.core.results import EvalResult, Status
from assay.errors import AssayError, ConfigError, InputError
from assay.metrics import build_metric
from assay.metrics.efficiency import EFFICIENCY_METRICS

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "home_automation" / "home.evalset.json"


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_name": name, "tool_input": args}


ROWS = [
    {
        "prompt": "Turn off device_2.",
        "predicted_trajectory": [_call("set_device_info", device_id="device_2", status="OFF")],
        "reference_trajectory": [_call("set_device_info", device_id="device_2", status="OFF")],
        "response": "device_2 is off",
        "reference": "device_2 is off",
    },
    {
        "prompt": "Set the bedroom to 22.",
        "predicted_trajectory": [_call("get_temperature", location="Bedroom")],
        "reference_trajectory": [_call("set_temperature", location="Bedroom", temperature=22)],
        "response": "It is 19 degrees",
        "reference": "The bedroom is now at 22 degrees",
    },
]


def test_public_exports() -> None:
    assert assay.__version__
    assert assay.evaluate is assay.api.evaluate
    from assay.metrics.custom import CustomMetric

    assert assay.CustomMetric is CustomMetric
    with pytest.raises(AttributeError):
        _ = assay.no_such_name  # type: ignore[attr-defined]


def test_evaluate_row_dicts_with_metric_names() -> None:
    result = assay.evaluate(ROWS, metrics=["trajectory_exact_match", "trajectory_recall"])
    assert isinstance(result, EvalResult)
    assert [c.status for c in result.cases] == [Status.PASSED, Status.FAILED]
    assert result.summary["row_count"] == 2
    assert result.summary["trajectory_exact_match/mean"] == 0.5
    assert [r["trajectory_recall/score"] for r in result.rows] == [1.0, 0.0]
    assert result.run_id is None  # nothing stored unless asked


def test_evaluate_dataframe_default_metrics() -> None:
    result = assay.evaluate(pd.DataFrame(ROWS))
    # The ADK defaults apply: tool_trajectory_avg_score 1.0, response_match_score 0.8.
    assert result.metrics == ["tool_trajectory_avg_score", "response_match_score"]
    assert result.cases[0].status is Status.PASSED
    assert result.cases[1].metrics["response_match_score"].threshold == 0.8


def test_evaluate_with_config_dict_and_metric_objects() -> None:
    config = {"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "ignore_args": True}}}
    result = assay.evaluate(ROWS, config=config)
    # As google-adk does for an eval config: its criteria, then the efficiency metrics.
    assert result.metrics == ["tool_trajectory_avg_score", *EFFICIENCY_METRICS]
    metric = build_metric("trajectory_single_tool_use", {"tool_name": "get_temperature"})
    result = assay.evaluate(ROWS, metrics=[metric, "trajectory_precision"])
    assert result.metrics == ["trajectory_single_tool_use", "trajectory_precision"]
    assert [c.metrics["trajectory_single_tool_use"].score for c in result.cases] == [0.0, 1.0]
    by_dict = assay.evaluate(ROWS, metrics={"response_match_score": 0.1})
    assert by_dict.cases[1].metrics["response_match_score"].threshold == 0.1


def test_custom_metric_vertex_style() -> None:
    def word_count(row: dict[str, Any]) -> dict[str, Any]:
        return {"word_count": len(row["response"].split())}

    metric = assay.CustomMetric(name="word_count", metric_function=word_count)
    result = assay.evaluate(ROWS, metrics=["trajectory_exact_match", metric])
    assert [r["word_count/score"] for r in result.rows] == [3, 4]


def test_evaluate_eval_set_path_and_agent_callable() -> None:
    from examples.home_automation.agent import root_agent

    evalset = formats.load(EXAMPLE)
    by_object = assay.evaluate(evalset, agent=root_agent, metrics=["tool_trajectory_avg_score"])
    by_path = assay.evaluate(str(EXAMPLE), agent="examples.home_automation.agent:root_agent")
    failing = {c.case_id for c in by_path.cases if c.status is not Status.PASSED}
    assert "two_devices_off" in failing
    # The path found test_config.json beside the eval set (three criteria, then ADK's
    # informational efficiency metrics, which every eval of an ADK config reports).
    assert by_path.metrics == [
        "tool_trajectory_avg_score",
        "response_match_score",
        "trajectory_recall",
        *EFFICIENCY_METRICS,
    ]
    assert by_object.metrics == ["tool_trajectory_avg_score"]
    assert "latency_in_seconds" in by_object.rows[0]


def test_evaluate_inside_a_running_event_loop() -> None:
    async def notebook_cell() -> EvalResult:
        return assay.evaluate(ROWS, metrics=["trajectory_exact_match"])

    result = asyncio.run(notebook_cell())
    assert [c.status for c in result.cases] == [Status.PASSED, Status.FAILED]


async def test_aevaluate_awaits() -> None:
    result = await assay.aevaluate(ROWS, metrics=["trajectory_exact_match"])
    assert len(result.cases) == 2


def test_evaluate_with_store(tmp_path: Path) -> None:
    from assay.store import Store

    url = f"sqlite:///{tmp_path / 'a.db'}"
    result = assay.evaluate(ROWS, metrics=["trajectory_exact_match"], store=url, run_name="nb")
    assert result.run_id is not None
    with Store.open(url) as store:
        info = store.get_run(result.run_id)
        assert info.status == "COMPLETED" and info.name == "nb"
        assert (info.passed, info.failed) == (1, 1)


def test_eval_task_vertex_style_with_column_mapping() -> None:
    renamed = [
        {
            "question": r["prompt"],
            "answer": r["response"],
            "golden": r["reference"],
            "predicted_trajectory": r["predicted_trajectory"],
            "reference_trajectory": r["reference_trajectory"],
        }
        for r in ROWS
    ]
    task = assay.EvalTask(
        dataset=pd.DataFrame(renamed),
        metrics=["trajectory_exact_match", "response_match_score"],
        metric_column_mapping={"prompt": "question", "response": "answer", "reference": "golden"},
    )
    result = task.evaluate()
    assert isinstance(result, assay.EvalTaskResult) and isinstance(result, EvalResult)
    assert result.summary_metrics["row_count"] == 2
    assert result.summary_metrics is result.summary
    table = result.metrics_table
    assert isinstance(table, pd.DataFrame)
    assert list(table["trajectory_exact_match/score"]) == [1.0, 0.0]
    assert table["prompt"][0] == "Turn off device_2."


def test_eval_task_runs_a_runnable() -> None:
    prompts = [{"prompt": "Turn off device_2.", "reference": "device_2 is off"}]

    def runnable(prompt: str) -> dict[str, Any]:
        return {
            "response": "device_2 is off",
            "predicted_trajectory": [_call("set_device_info", device_id="device_2")],
        }

    result = assay.EvalTask(prompts, metrics=["response_match_score"]).evaluate(runnable=runnable)
    assert result.cases[0].status is Status.PASSED
    assert result.metrics_table["failure"][0] == 0


def test_bad_inputs_raise_assay_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot evaluate a dataset of type int"):
        assay.evaluate(42)
    with pytest.raises(InputError, match="empty"):
        assay.evaluate([])
    with pytest.raises(ConfigError, match="unknown metric 'nope'"):
        assay.evaluate(ROWS, metrics=["nope"])
    with pytest.raises(ConfigError, match="metrics is empty"):
        assay.evaluate(ROWS, metrics=[])
    with pytest.raises(ConfigError, match=r"cannot use 3\.5 as a metric"):
        assay.evaluate(ROWS, metrics=[3.5])
    with pytest.raises(ConfigError, match="requested twice"):
        assay.evaluate(ROWS, metrics=["trajectory_recall", build_metric("trajectory_recall")])
    with pytest.raises(ConfigError, match="config must be"):
        assay.evaluate(ROWS, config=7)
    with pytest.raises(AssayError):
        assay.evaluate(ROWS, format="nope")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"criteria": ["response_match_score"]}), encoding="utf-8")
    with pytest.raises(ConfigError):
        assay.evaluate(ROWS, config=bad)


def test_evaluate_run_options_reach_the_engine() -> None:
    from assay.agents.tools import ToolHook
    from assay.core import EvalCase, EvalSet, Step, ToolCall, ToolResponse, Turn
    from assay.core.cases import Expectation

    mock = ToolResponse(name="lookup", response={"mocked": True})
    reference = [
        Turn(user_input=q, expectations=[Expectation(mock_tool_response=mock)]) for q in "ab"
    ]
    evalset = EvalSet(id="s", cases=[EvalCase(id="c", reference=reference)])
    seen: list[int] = []

    async def agent(prompt: str, history: list[Turn], tools: ToolHook) -> Turn:
        seen.append(len(history))
        call = ToolCall(name="lookup", args={})
        payload, _ = await tools.execute(call, lambda: {"real": True})
        step = Step(tool_response=ToolResponse(name="lookup", response=payload))
        return Turn(steps=[Step(tool_call=call), step], final_response=prompt)

    result = assay.evaluate(
        evalset, ["tool_call_count"], agent, tool_behavior="fake", run_method="naive"
    )
    (case,) = result.cases
    assert seen == [0, 1]
    assert [i.actual.tool_responses()[0].response for i in case.invocations if i.actual] == [
        {"mocked": True},
        {"mocked": True},
    ]
    assert "runs" not in result.summary  # runs=None: a golden runs once


def test_evaluate_simulator_options() -> None:
    from assay.api import simulator_options
    from assay.core.cases import Persona
    from assay.simulation import SimulatorOptions

    shy = Persona(id="SHY", personality="Answers in few words.")
    built = simulator_options(user_model="openai:u", personas=[shy])
    assert built is not None and built.model == "openai:u" and built.personas == {"SHY": shy}
    given = SimulatorOptions(model="openai:u", max_turns=3)
    merged = simulator_options(simulator=given, personas={"SHY": shy})
    assert merged is not None and merged.max_turns == 3 and merged is not given
    assert simulator_options() is None
    with pytest.raises(ConfigError, match="disagree"):
        simulator_options(user_model="openai:a", simulator=given)


def test_ces_goldens_default_to_the_ces_checks() -> None:
    from assay.api import resolve_metrics

    path = (
        Path(__file__).resolve().parents[1]
        / "tests"
        / "data"
        / "realworld/ces/bella_notte/evaluations/Event_Prefill_-_Party_Size_Skipped.json"
    )
    metrics = resolve_metrics(None, None, [formats.load(path)])
    assert [m.name for m in metrics] == ["semantic_similarity", "hallucination"]
    assert metrics[0].threshold == 3
