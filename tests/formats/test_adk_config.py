"""The `adk-config` format: ADK `test_config.json` / `eval_config.json` files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.config import load_config, parse_config
from assay.core.cases import EvalSet
from assay.errors import InputError, UnknownFormatError
from assay.formats import adk, adk_config, adk_legacy, load
from assay.formats._common import read_structured

ADK = Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld" / "adk"
CONFIGS = sorted(
    str(p.relative_to(ADK)) for p in ADK.rglob("*.json") if p.name.endswith("config.json")
)


def test_all_real_configs_are_found() -> None:
    assert len(CONFIGS) == 6


@pytest.mark.parametrize("rel", CONFIGS)
def test_real_configs_are_detected_and_not_taken_for_eval_sets(rel: str) -> None:
    data = read_structured(ADK / rel)
    assert adk_config.detect(ADK / rel, data)
    assert not adk.detect(ADK / rel, data) and not adk_legacy.detect(ADK / rel, data)


def test_eval_sets_are_not_configs() -> None:
    for path in ADK.rglob("*.json"):
        if not path.name.endswith("config.json"):
            assert not adk_config.detect(path, read_structured(path)), path


@pytest.mark.parametrize("rel", CONFIGS)
def test_dump_config_is_read_by_google_adk_and_stable(rel: str) -> None:
    from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig

    cfg = load_config(ADK / rel)
    dumped = adk_config.dump_config(cfg)
    theirs = AdkEvalConfig.model_validate(dumped)
    assert set(theirs.criteria) == set(cfg.criteria)
    assert adk_config.dump_config(parse_config(dumped)) == dumped


def test_camel_case_options_are_written_in_snake_case() -> None:
    dumped = adk_config.dump_config(load_config(ADK / "long_horizon_harness" / "eval_config.json"))
    criterion = dumped["criteria"]["rubric_based_final_response_quality_v1"]
    assert criterion["include_intermediate_responses_in_final"] is True
    assert criterion["judge_model_options"] == {"judge_model": "gemini-3.7-flash", "num_samples": 1}
    assert [r["rubric_id"] for r in criterion["rubrics"]] == ["relevance", "helpfulness"]
    assert criterion["rubrics"][0]["rubric_content"]["text_property"].startswith("The response")
    assert "Camel" not in json.dumps(dumped) and "textProperty" not in json.dumps(dumped)


def test_mixed_casing_and_bare_thresholds() -> None:
    mixed = adk_config.dump_config(load_config(ADK / "new_hire_onboarding" / "eval_config.json"))
    assert mixed["criteria"]["tool_trajectory_avg_score"] == {
        "threshold": 1.0,
        "match_type": "IN_ORDER",
    }
    assert mixed["criteria"]["final_response_match_v2"]["judge_model_options"]["num_samples"] == 1
    bare = adk_config.dump_config(load_config(ADK / "legacy_trip_planner" / "test_config.json"))
    assert bare == {"criteria": {"response_match_score": 0.5}}
    sim = adk_config.dump_config(load_config(ADK / "samples_user_simulation" / "eval_config.json"))
    assert sim["user_simulator_config"] == {
        "type": "llm_backed",
        "model": "gemini-2.5-flash",
        "max_allowed_invocations": 8,
    }


def test_option_values_keyed_by_user_names_keep_their_keys() -> None:
    cfg = parse_config(
        {
            "criteria": {
                "tool_trajectory_avg_score": {
                    "threshold": 1.0,
                    "matchType": "EXACT",
                    "perTool": {"getWeather": {"ignoreArgs": True}},
                }
            },
            "customMetrics": {"mine": {"codeConfig": {"name": "pkg.mod.fn"}}},
        }
    )
    dumped = adk_config.dump_config(cfg)
    criterion = dumped["criteria"]["tool_trajectory_avg_score"]
    assert criterion["match_type"] == "EXACT"
    assert criterion["per_tool"] == {"getWeather": {"ignoreArgs": True}}
    assert dumped["custom_metrics"] == {"mine": {"code_config": {"name": "pkg.mod.fn"}}}


def test_write_config_round_trips(tmp_path: Path) -> None:
    cfg = load_config(ADK / "samples_rubric_criteria" / "eval_config.json")
    target = tmp_path / "test_config.json"
    adk_config.write_config(cfg, target)
    assert adk_config.dump_config(load_config(target)) == adk_config.dump_config(cfg)


def test_a_config_is_not_loaded_as_an_eval_set() -> None:
    path = ADK / "conversation_scenario" / "test_config.json"
    with pytest.raises(InputError, match="--config") as info:
        adk_config.load_data(read_structured(path), file=str(path), mapping=None)
    assert str(path) in str(info.value)
    with pytest.raises(UnknownFormatError, match="--config"):
        load(path, "adk-config")
    with pytest.raises(UnknownFormatError, match="dump_config"):
        adk_config.dump(EvalSet(id="s"))
