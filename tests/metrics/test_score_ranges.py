"""Every registered metric declares its score range; thresholds outside it are refused
(exit 2 naming the metric and the range) from test_config.json, --metric and
assay.evaluate alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from assay.api import evaluate
from assay.cli import app
from assay.errors import ConfigError
from assay.metrics.registry import build_metric, get_metric_class, metric_names

runner = CliRunner()
ROWS = Path(__file__).resolve().parents[2] / "examples" / "recorded" / "home_rows.jsonl"
SCORED = [n for n in metric_names() if not get_metric_class(n).informational]


# The options a metric cannot be built without (the threshold is what is tested).
REQUIRED: dict[str, dict[str, object]] = {
    "contains": {"value": "x"},
    "starts_with": {"value": "x"},
    "contains_all": {"values": ["x"]},
    "contains_any": {"values": ["x"]},
    "json_schema": {"schema": {"type": "object"}},
    "regex_match": {"pattern": "x"},
    "max_cost": {"usd": 0.1},
    "max_latency": {"seconds": 1},
    "max_tokens": {"tokens": 100},
    "trajectory_single_tool_use": {"tool_name": "x"},
}


def _build(name: str, threshold: float) -> float | None:
    return build_metric(name, {**REQUIRED.get(name, {}), "threshold": threshold}).threshold


@pytest.mark.parametrize("name", metric_names())
def test_every_metric_declares_its_score_range(name: str) -> None:
    declared = get_metric_class(name).score_range
    assert declared is not None, f"metric {name!r} declares no score_range"
    low, high = declared
    assert low < high


@pytest.mark.parametrize("name", SCORED)
def test_a_threshold_above_the_range_is_refused_naming_metric_and_range(name: str) -> None:
    low, high = get_metric_class(name).score_range or (0.0, 0.0)
    with pytest.raises(ConfigError) as caught:
        _build(name, high + 1)
    message = str(caught.value)
    assert repr(name) in message and f"{low:g}..{high:g}" in message, message
    with pytest.raises(ConfigError, match="outside its score range"):
        _build(name, low - 1)
    # the bounds themselves are thresholds
    assert _build(name, high) == high
    assert _build(name, low) == low


def test_metric_flag_threshold_out_of_range_exits_2() -> None:
    result = runner.invoke(app, ["eval", str(ROWS), "--no-store", "-m", "response_match_score=5"])
    assert result.exit_code == 2, result.output
    assert "'response_match_score' is outside its score range 0..1" in result.output
    assert "Traceback" not in result.output


def test_config_threshold_out_of_range_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "test_config.json"
    config.write_text(json.dumps({"criteria": {"semantic_similarity": 5}}), encoding="utf-8")
    result = runner.invoke(app, ["eval", str(ROWS), "--no-store", "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert "'semantic_similarity' is outside its score range 0..4" in result.output


def test_evaluate_refuses_an_out_of_range_threshold() -> None:
    with pytest.raises(ConfigError, match=r"'trajectory_exact_match' is outside .* 0\.\.1"):
        evaluate(str(ROWS), metrics={"trajectory_exact_match": 5})
    with pytest.raises(ConfigError, match="outside its score range"):
        evaluate(str(ROWS), metrics={"response_match_score": {"threshold": 80}})
