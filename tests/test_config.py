"""Evaluation configs: ADK `test_config.json` / `eval_config.json` (SPEC §2.3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.config import (
    DEFAULT_CRITERIA,
    EvalConfig,
    find_config_beside,
    load_config,
    parse_config,
)
from assay.errors import ConfigError

ADK = Path(__file__).resolve().parents[1] / "tests" / "data" / "realworld" / "adk"
REAL_CONFIGS = sorted(
    str(p.relative_to(ADK))
    for p in ADK.rglob("*.json")
    if p.name in ("test_config.json", "eval_config.json")
)


def test_real_configs_are_present() -> None:
    assert len(REAL_CONFIGS) == 6


@pytest.mark.parametrize("rel", REAL_CONFIGS)
def test_every_real_config_parses_with_its_criteria(rel: str) -> None:
    path = ADK / rel
    raw = json.loads(path.read_text(encoding="utf-8"))
    cfg = load_config(path)
    assert cfg.source == str(path)
    # Criteria are kept as written (no defaults merged in), values raw.
    assert cfg.criteria == raw["criteria"]
    assert set(cfg.criteria) == set(raw["criteria"])


def test_bare_float_criterion() -> None:
    cfg = load_config(ADK / "legacy_trip_planner" / "test_config.json")
    assert cfg.criteria == {"response_match_score": 0.5}
    assert cfg.user_simulator_config is None and cfg.custom_metrics is None


def test_object_criterion_and_user_simulator_config() -> None:
    cfg = load_config(ADK / "conversation_scenario" / "test_config.json")
    assert cfg.criteria == {"hallucinations_v1": {"threshold": 0.8}}
    assert cfg.user_simulator_config == {
        "model": "gemini-2.5-flash",
        "max_allowed_invocations": 10,
    }


def test_camel_case_options_stay_raw_inside_criteria() -> None:
    cfg = load_config(ADK / "long_horizon_harness" / "eval_config.json")
    criterion = cfg.criteria["rubric_based_final_response_quality_v1"]
    assert isinstance(criterion, dict)
    # The metric, not the config, interprets option names: no key is renamed here.
    assert criterion["judgeModelOptions"] == {"judgeModel": "gemini-3.7-flash", "numSamples": 1}
    assert criterion["includeIntermediateResponsesInFinal"] is True
    assert criterion["rubrics"][0]["rubricId"] == "relevance"


def test_mixed_case_styles_in_one_file() -> None:
    cfg = load_config(ADK / "new_hire_onboarding" / "eval_config.json")
    assert cfg.criteria["tool_trajectory_avg_score"] == {"threshold": 1.0, "match_type": "IN_ORDER"}
    v2 = cfg.criteria["final_response_match_v2"]
    assert isinstance(v2, dict) and v2["judgeModelOptions"]["judgeModel"] == (
        "gemini-3-flash-preview"
    )


def test_camel_case_top_level_keys() -> None:
    cfg = parse_config(
        {
            "criteria": {"my_metric": 0.5},
            "userSimulatorConfig": {"type": "llm_backed", "maxAllowedInvocations": 3},
            "customMetrics": {
                "my_metric": {
                    "codeConfig": {"name": "pkg.mod.fn"},
                    "metricInfo": {"metricName": "my_metric"},
                }
            },
        }
    )
    assert cfg.user_simulator_config == {"type": "llm_backed", "maxAllowedInvocations": 3}
    assert cfg.custom_metrics is not None
    custom = cfg.custom_metrics["my_metric"]
    assert custom.code_config.name == "pkg.mod.fn"
    assert custom.metric_info == {"metricName": "my_metric"}
    # Written back in ADK's snake_case, without the source path.
    assert cfg.dump() == {
        "criteria": {"my_metric": 0.5},
        "user_simulator_config": {"type": "llm_backed", "maxAllowedInvocations": 3},
        "custom_metrics": {
            "my_metric": {
                "code_config": {"name": "pkg.mod.fn"},
                "metric_info": {"metricName": "my_metric"},
            }
        },
    }


def test_snake_case_custom_metrics() -> None:
    cfg = parse_config(
        {"criteria": {"m": 1.0}, "custom_metrics": {"m": {"code_config": {"name": "a.b.c"}}}}
    )
    assert cfg.custom_metrics is not None
    assert cfg.custom_metrics["m"].code_config.name == "a.b.c"


def test_integer_threshold_is_a_number() -> None:
    cfg = parse_config({"criteria": {"response_match_score": 1}})
    assert cfg.criteria == {"response_match_score": 1.0}


def test_defaults_without_a_file() -> None:
    assert DEFAULT_CRITERIA == {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
    cfg = EvalConfig()
    assert cfg.criteria == DEFAULT_CRITERIA
    assert cfg.user_simulator_config is None and cfg.custom_metrics is None
    # Each default config gets its own dict: changing one never changes the defaults.
    cfg.criteria["response_match_score"] = 0.1
    assert EvalConfig().criteria["response_match_score"] == 0.8
    assert DEFAULT_CRITERIA["response_match_score"] == 0.8


# ----------------------------------------------------------------------------- errors


def _write(tmp_path: Path, text: str, name: str = "test_config.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_not_json_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, '{\n  "criteria": {\n    "response_match_score": 0.8,\n  }\n}\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message
    assert "not valid JSON" in message
    assert "line 4" in message


def test_not_an_object_names_file(tmp_path: Path) -> None:
    path = _write(tmp_path, '[{"criteria": {}}]')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value)
    assert "expected a JSON object" in str(info.value)
    assert "got list" in str(info.value)


@pytest.mark.parametrize("value", ["true", "false"])
def test_boolean_criterion_is_rejected(tmp_path: Path, value: str) -> None:
    path = _write(tmp_path, f'{{"criteria": {{"response_match_score": {value}}}}}')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message
    assert "criteria.response_match_score" in message
    assert "boolean" in message


@pytest.mark.parametrize(
    ("criterion", "got"),
    [([0.5], "list"), (None, "null")],
)
def test_criterion_of_wrong_type_is_rejected(criterion: Any, got: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"criteria": {"m": criterion}}, source="cfg.json")
    message = str(info.value)
    assert message.startswith("cfg.json: criteria.m:")
    assert f"got {got}" in message


def test_criteria_not_an_object_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"cfg\.json: invalid eval config: criteria"):
        parse_config({"criteria": ["response_match_score"]}, source="cfg.json")


def test_unknown_top_level_key_names_file_and_key(tmp_path: Path) -> None:
    path = _write(tmp_path, '{"criteria": {"response_match_score": 0.8}, "critera": {}}')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message
    assert "critera" in message
    assert "Extra inputs are not permitted" in message
    assert "criteria" in message  # the expected shape is shown


def test_custom_metric_without_code_config_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"custom_metrics\.m"):
        parse_config({"criteria": {"m": 1.0}, "custom_metrics": {"m": {}}}, source="c.json")


def test_missing_config_file_names_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "test_config.json"
    with pytest.raises(ConfigError) as info:
        load_config(missing)
    assert str(missing) in str(info.value)


def test_parse_config_without_source_still_says_config() -> None:
    with pytest.raises(ConfigError, match=r"^config: "):
        parse_config("criteria")


# ----------------------------------------------------------------------------- discovery


def test_find_config_beside_real_files() -> None:
    legacy = ADK / "legacy_trip_planner" / "trip_inquiry.test.json"
    assert find_config_beside(legacy) == ADK / "legacy_trip_planner" / "test_config.json"
    harness = ADK / "long_horizon_harness" / "plot_artifact_journey.evalset.json"
    assert find_config_beside(harness) == ADK / "long_horizon_harness" / "eval_config.json"
    lonely = ADK / "crypto_payroll" / "crypto_payroll_eval_set.evalset.json"
    assert find_config_beside(lonely) is None


def test_find_config_beside_prefers_test_config(tmp_path: Path) -> None:
    data = _write(tmp_path, "[]", "cases.test.json")
    assert find_config_beside(data) is None
    eval_cfg = _write(tmp_path, "{}", "eval_config.json")
    assert find_config_beside(data) == eval_cfg
    test_cfg = _write(tmp_path, "{}", "test_config.json")
    assert find_config_beside(data) == test_cfg


def test_find_config_beside_ignores_folders_named_like_configs(tmp_path: Path) -> None:
    (tmp_path / "test_config.json").mkdir()
    data = _write(tmp_path, "[]", "cases.test.json")
    assert find_config_beside(data) is None
