"""Parity with the pinned google-adk: every metric of its registry, every config field.

Enumerates ADK's own metric registry and `EvalConfig` models at test time, so the test
cannot go stale: a google-adk upgrade that adds a metric or a config field fails here
until assay accepts it.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from google.adk.evaluation import eval_config as adk_config
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY
from google.adk.evaluation.simulation._llm_audio_user_simulator import (
    LlmAudioUserSimulatorConfig,
)
from google.adk.evaluation.simulation.llm_backed_user_simulator import (
    LlmBackedUserSimulatorConfig,
)

from assay.config import EvalConfig, parse_config
from assay.errors import AssayWarning
from assay.metrics import metric_names


def _adk_metric_names() -> set[str]:
    return {m.metric_name for m in DEFAULT_METRIC_EVALUATOR_REGISTRY.get_registered_metrics()}


def test_every_adk_metric_is_an_assay_metric() -> None:
    adk = _adk_metric_names()
    assert len(adk) >= 17
    # All of them, the five ADK hands to Vertex's hosted service included (assay runs
    # those with its own judges): a google-adk upgrade adding a metric fails here.
    missing = adk - set(metric_names())
    assert missing == set(), f"google-adk metrics assay does not know: {sorted(missing)}"


def _fields(model: Any) -> set[str]:
    return set(model.model_fields)


def test_every_adk_eval_config_field_is_accepted() -> None:
    adk = _fields(adk_config.EvalConfig)
    ours = _fields(EvalConfig) - {"source"}
    assert adk - ours == set()


@pytest.mark.parametrize("model", [LlmBackedUserSimulatorConfig, LlmAudioUserSimulatorConfig])
def test_every_user_simulator_config_field_is_accepted(model: Any) -> None:
    fields = {name: _example(name) for name in _fields(model)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = parse_config(
            {"criteria": {"response_match_score": 0.8}, "user_simulator_config": fields}
        )
    assert cfg.user_simulator_config == fields
    unused = [str(w.message) for w in caught if issubclass(w.category, AssayWarning)]
    # Fields assay's simulator does not read are named in one warning, not refused.
    assert len(unused) <= 1


def _example(name: str) -> Any:
    return {"type": "llm_backed", "max_allowed_invocations": 5}.get(name, "x")


def test_live_model_config_is_accepted_with_a_warning() -> None:
    with pytest.warns(AssayWarning, match="live_model_config"):
        cfg = parse_config(
            {
                "criteria": {"response_match_score": 0.8},
                "live_model_config": {"timeout_seconds": 9},
            },
            source="eval_config.json",
        )
    assert cfg.live_model_config == {"timeout_seconds": 9}
    assert cfg.dump()["live_model_config"] == {"timeout_seconds": 9}


def test_an_adk_config_with_extra_criterion_keys_validates_in_both() -> None:
    # Seen in a public project: a key ADK's BaseCriterion does not define.
    raw = {"criteria": {"final_response_match_v2": {"threshold": 0.5, "criteria": "Semantic"}}}
    adk_config.EvalConfig.model_validate(raw)
    from assay.engine import build_metrics

    with pytest.warns(AssayWarning, match="ignoring criterion key 'criteria'"):
        metrics = build_metrics(parse_config(raw, source="test_config.json"))
    assert metrics[0].name == "final_response_match_v2" and metrics[0].threshold == 0.5
