"""ADK 2.13's efficiency metrics: assay's numbers equal google-adk's own evaluators.

Generated invocations (tool calls, model events with and without usage metadata,
timed and untimed turns) are written as an ADK eval set, scored by ADK's evaluators
(`google.adk.evaluation._efficiency_evaluators`) and by assay's metrics on the same file
as assay loads it.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation import _efficiency_evaluators as adk_eff
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet

from assay import formats
from assay.core.cases import Turn
from assay.errors import ConfigError
from assay.metrics.registry import build_metric

_USAGE_KEYS = (
    "prompt_token_count",
    "tool_use_prompt_token_count",
    "cached_content_token_count",
    "candidates_token_count",
    "thoughts_token_count",
)


def _event(rng: random.Random, i: int) -> dict[str, Any]:
    kind = rng.choice(["call", "answer", "model_no_usage", "tool_response"])
    if kind == "tool_response":
        part = {"function_response": {"id": f"c{i}", "name": "lookup", "response": {"ok": 1}}}
        return {"author": "agent", "content": {"role": "user", "parts": [part]}}
    event: dict[str, Any] = {"author": "agent", "model_version": "gemini-test"}
    if kind == "call":
        part = {"function_call": {"id": f"c{i}", "name": "lookup", "args": {"q": i}}}
        event["content"] = {"role": "model", "parts": [part]}
    else:
        event["content"] = {"role": "model", "parts": [{"text": f"step {i}"}]}
    if kind != "model_no_usage":
        # Backends omit counts they did not spend: each key present or not at random.
        event["usage_metadata"] = {
            key: rng.randint(0, 500) for key in _USAGE_KEYS if rng.random() < 0.7
        }
    return event


def _invocation(rng: random.Random, n: int) -> dict[str, Any]:
    inv: dict[str, Any] = {
        "invocation_id": f"inv-{n}",
        "user_content": {"role": "user", "parts": [{"text": f"question {n}"}]},
        "final_response": {"role": "model", "parts": [{"text": "answer"}]},
        "intermediate_data": {
            "invocation_events": [_event(rng, n * 10 + i) for i in range(rng.randint(0, 5))]
        },
    }
    timing = rng.choice(["full", "total_only", "none"])
    if timing != "none":
        inv["duration"] = round(rng.uniform(0.1, 9.0), 3)
    if timing == "full":
        inv["model_duration"] = round(rng.uniform(0.0, inv["duration"]), 3)
        inv["tool_duration"] = round(rng.uniform(0.0, inv["duration"]), 3)
    return inv


def _eval_set(seed: int, cases: int = 25) -> dict[str, Any]:
    rng = random.Random(seed)
    return {
        "eval_set_id": f"gen-{seed}",
        "eval_cases": [
            {
                "eval_id": f"case-{c}",
                "conversation": [_invocation(rng, c * 100 + i) for i in range(rng.randint(1, 4))],
            }
            for c in range(cases)
        ],
    }


_ADK = {
    "tool_call_count_v1": adk_eff._ToolCallCountV1Evaluator,
    "inference_call_count_v1": adk_eff._InferenceCallCountV1Evaluator,
    "token_usage_v1": adk_eff._TokenUsageV1Evaluator,
    "invocation_duration_v1": adk_eff._InvocationDurationV1Evaluator,
}


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("name", sorted(_ADK))
def test_efficiency_metrics_equal_adk_evaluators(tmp_path: Path, name: str, seed: int) -> None:
    raw = _eval_set(seed)
    path = tmp_path / "gen.evalset.json"
    path.write_text(json.dumps(raw))
    adk_set = AdkEvalSet.model_validate(raw)
    ours = formats.load(path)
    metric = build_metric(name)
    for adk_case, case in zip(adk_set.eval_cases, ours.cases, strict=True):
        expected = _ADK[name]().evaluate_invocations(adk_case.conversation)
        turns: list[Turn] = list(case.reference or [])
        got = metric.score_case(case, turns, [None] * len(turns))
        assert got.score == pytest.approx(expected.overall_score), case.id
        assert got.status is None  # informational, like ADK's INFORMATIONAL
        per = [r.score for r in expected.per_invocation_results]
        assert [s.value for s in got.per_invocation] == pytest.approx(per), case.id
        if name == "token_usage_v1":
            details = expected.overall_token_usage_details
            assert details is not None
            assert got.details == pytest.approx(details.model_dump()), case.id
        if name == "invocation_duration_v1":
            details = expected.overall_duration_details
            assert details is not None
            assert got.details == pytest.approx(details.model_dump()), case.id


@pytest.mark.parametrize("name", sorted(_ADK))
def test_a_threshold_is_refused_as_adk_refuses_it(name: str) -> None:
    with pytest.raises(ValueError, match="does not support a threshold"):
        _ADK[name](EvalMetric(metric_name=name, threshold=0.5))
    with pytest.raises(ConfigError, match="does not support a threshold") as info:
        build_metric(name, 0.5)
    assert repr(name) in str(info.value)


def test_adk_config_evals_report_the_efficiency_metrics(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from assay.cli import app

    examples = Path(__file__).resolve().parents[2] / "examples" / "home_automation"
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        app,
        [
            "eval",
            str(examples / "home.evalset.json"),
            "--agent",
            "examples.home_automation.agent:root_agent",
            "--no-store",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "Efficiency per invocation (informational): tool calls" in result.output
    summary = json.loads(out.read_text())["summary"]
    assert summary["tool_call_count_v1/mean"] > 0
    assert summary["invocation_duration_v1/mean"] > 0
    # A `--metric` list is the user's choice: nothing is added to it.
    result = CliRunner().invoke(
        app,
        [
            "eval",
            str(examples / "home.evalset.json"),
            "--agent",
            "examples.home_automation.agent:root_agent",
            "--metric",
            "tool_trajectory_avg_score",
            "--no-store",
        ],
    )
    assert "Efficiency" not in result.output
