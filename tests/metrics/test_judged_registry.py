"""LLM-judged metrics: registered with their real options; no judge → NOT_EVALUATED."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from assay.config import load_config
from assay.core.cases import EvalCase, Rubric, RubricType, Turn
from assay.core.results import Score, Status
from assay.engine import score_case
from assay.errors import ConfigError
from assay.metrics.judged import (
    JUDGED_METRIC_NAMES,
    NO_JUDGE_MESSAGE,
    Correctness,
    JudgedMetric,
    RubricBasedFinalResponseQualityV1,
)
from assay.metrics.registry import build_metric, get_metric_class, metric_names

REALWORLD = Path(__file__).resolve().parents[2] / "tests" / "data" / "realworld"
ADK_CONFIGS = sorted((REALWORLD / "adk").glob("*/*config.json"))


def test_every_spec_judged_name_is_registered_and_needs_a_judge() -> None:
    assert len(JUDGED_METRIC_NAMES) == 22
    registered = set(metric_names())
    for name in JUDGED_METRIC_NAMES:
        assert name in registered
        cls = get_metric_class(name)
        assert issubclass(cls, JudgedMetric)
        assert "judge" in cls.needs
        assert not cls.informational


def test_realworld_configs_are_found() -> None:
    assert len(ADK_CONFIGS) >= 6


@pytest.mark.parametrize("path", ADK_CONFIGS, ids=lambda p: p.parent.name)
def test_every_realworld_adk_config_builds(path: Path) -> None:
    config = load_config(path)
    for name, criterion in config.criteria.items():
        metric = build_metric(name, criterion)
        threshold = criterion if isinstance(criterion, float) else criterion.get("threshold")
        assert metric.threshold == threshold


def test_real_rubric_config_options_are_read_in_snake_case() -> None:
    config = load_config(REALWORLD / "adk" / "samples_rubric_criteria" / "eval_config.json")
    name = "rubric_based_final_response_quality_v1"
    metric = build_metric(name, config.criteria[name])
    assert isinstance(metric, RubricBasedFinalResponseQualityV1)
    assert metric.judge_model == "gemini-2.5-flash"
    assert metric.num_samples == 5
    rubrics = metric.effective_rubrics(EvalCase(id="c"), None)
    assert [r.id for r in rubrics] == ["reports_device_state", "concise"]
    assert rubrics[1].text == "The response is concise and free of filler."


def test_real_camel_case_config_options_are_read() -> None:
    config = load_config(REALWORLD / "adk" / "long_horizon_harness" / "eval_config.json")
    name = "rubric_based_final_response_quality_v1"
    metric = build_metric(name, config.criteria[name])
    assert isinstance(metric, RubricBasedFinalResponseQualityV1)
    assert metric.judge_model == "gemini-3.7-flash"
    assert metric.num_samples == 1
    options = metric.options.model_dump()
    assert options["include_intermediate_responses_in_final"] is True
    assert [r["rubric_id"] for r in options["rubrics"]] == ["relevance", "helpfulness"]


def test_other_adk_options() -> None:
    config = load_config(REALWORLD / "adk" / "samples_user_simulation" / "eval_config.json")
    hallucinations = build_metric("hallucinations_v1", config.criteria["hallucinations_v1"])
    assert hallucinations.options.model_dump()["evaluate_intermediate_nl_responses"] is True
    simulator = build_metric("per_turn_user_simulator_quality_v1", {"stopSignal": "<done/>"})
    assert simulator.options.model_dump()["stop_signal"] == "<done/>"
    assert (
        build_metric("per_turn_user_simulator_quality_v1").options.model_dump()["stop_signal"]
        == "</finished>"
    )


@pytest.mark.parametrize(
    ("name", "samples"),
    [
        ("final_response_match_v2", 5),
        ("safety_v1", 5),
        ("correctness", 1),
        ("semantic_similarity", 1),
    ],
)
def test_default_samples_and_judge_options(name: str, samples: int) -> None:
    metric = build_metric(name)
    assert isinstance(metric, JudgedMetric)
    assert metric.num_samples == samples
    assert metric.judge_model is None
    tuned = build_metric(
        name, {"judge_model_options": {"judgeModel": "openai:gpt-4o-mini", "temperature": 0.2}}
    )
    assert isinstance(tuned, JudgedMetric)
    assert tuned.judge_model == "openai:gpt-4o-mini"
    assert tuned.judge_options.temperature == 0.2


@pytest.mark.parametrize(
    ("criterion", "message"),
    [
        (
            {
                "rubrics": [
                    {"rubric_id": "r1", "rubric_content": {"text_property": "a"}},
                    {"rubricId": "r1", "rubricContent": {"textProperty": "b"}},
                ]
            },
            "duplicate rubric_id 'r1'",
        ),
        ({"judge_model_options": {"num_samples": 0}}, "num_samples"),
        ({"judge_model_options": {"judge": "x"}}, "judge"),
        ({"rubric": []}, "rubric"),
    ],
)
def test_bad_options_are_config_errors(criterion: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="rubric_based_final_response_quality_v1") as info:
        build_metric("rubric_based_final_response_quality_v1", criterion)
    assert message in str(info.value)


def test_case_and_invocation_rubrics_are_merged_by_type_and_must_be_unique() -> None:
    metric = build_metric(
        "rubric_based_final_response_quality_v1",
        {"rubrics": [{"rubric_id": "crit", "rubric_content": {"text_property": "c"}}]},
    )
    assert isinstance(metric, RubricBasedFinalResponseQualityV1)
    final, tool = RubricType.FINAL_RESPONSE_QUALITY, RubricType.TOOL_USE_QUALITY
    case = EvalCase(id="c", rubrics=[Rubric(id="case", text="x", type=final)])
    turn = Turn(
        rubrics=[Rubric(id="inv", text="y", type=final), Rubric(id="t", text="z", type=tool)]
    )
    assert [r.id for r in metric.effective_rubrics(case, turn)] == ["crit", "case", "inv"]
    clash = EvalCase(id="c", rubrics=[Rubric(id="crit", text="again", type=final)])
    with pytest.raises(ConfigError, match="rubric id 'crit' is defined twice"):
        metric.effective_rubrics(clash, None)


def _case() -> tuple[EvalCase, list[Turn]]:
    case = EvalCase(id="c", reference=[Turn(final_response="four")], expected_response="four")
    return case, [Turn(user_input="2+2?", final_response="four")]


@pytest.mark.parametrize("name", JUDGED_METRIC_NAMES)
def test_without_a_judge_every_judged_metric_is_not_evaluated(name: str) -> None:
    metric = build_metric(name)
    case, actual = _case()
    for result in (
        metric.score_case(case, actual, [None]),
        asyncio.run(metric.ascore_case(case, actual, [None])),
    ):
        assert result.score is None
        assert result.explanation == NO_JUDGE_MESSAGE
        assert [s.explanation for s in result.per_invocation] == [NO_JUDGE_MESSAGE]
        assert result.status is Status.NOT_EVALUATED


def test_deterministic_metrics_still_run_next_to_an_unjudged_one() -> None:
    case, actual = _case()
    metrics = [build_metric("response_match_score"), build_metric("final_response_match_v2")]
    result = score_case(case, actual, metrics)
    assert result.metrics["response_match_score"].status is Status.PASSED
    assert result.metrics["final_response_match_v2"].explanation == NO_JUDGE_MESSAGE
    assert result.status is Status.NOT_EVALUATED


class _FakeJudge:
    async def generate(
        self,
        messages: Sequence[Mapping[str, Any]],
        n: int,
        settings: Mapping[str, Any],
        **_: Any,
    ) -> list[str]:
        return ["yes"] * n


class _EchoCorrectness(Correctness):
    """A judged metric whose hook uses the attached judge (the plug-in point)."""

    name: ClassVar[str] = "correctness"

    async def judge_invocation(
        self, judge: Any, actual: Turn, expected: Turn | None, case: EvalCase
    ) -> Score:
        replies = await judge.generate([{"role": "user", "content": "?"}], self.num_samples, {})
        return Score(1.0 if replies[0] == "yes" else 0.0, "judge said yes")


def test_an_attached_judge_is_used_through_the_hooks() -> None:
    metric = _EchoCorrectness()
    metric.attach_judge(_FakeJudge())
    case, actual = _case()
    result = asyncio.run(metric.ascore_case(case, actual * 2, [None, None]))
    assert (result.score, result.status) == (1.0, Status.PASSED)
    assert metric.score_case(case, actual, [None]).score == 1.0  # sync path outside a loop
    metric.attach_judge(None)
    assert metric.score_case(case, actual, [None]).explanation == NO_JUDGE_MESSAGE


def test_databricks_answer_judge_columns() -> None:
    correctness = build_metric("correctness")
    yes = correctness.row_columns(Score(1.0, "matches the facts"))
    assert yes["response/llm_judged/correctness/rating"] == "yes"
    assert yes["response/llm_judged/correctness/rationale"] == "matches the facts"
    assert yes["response/llm_judged/correctness/error_message"] is None
    missing = correctness.row_columns(Score(None, NO_JUDGE_MESSAGE))
    assert missing["response/llm_judged/correctness/rating"] is None
    assert missing["response/llm_judged/correctness/error_message"] == NO_JUDGE_MESSAGE
    summary = correctness.summary_columns([1.0, 0.0, 1.0, 1.0])
    assert summary["response/llm_judged/correctness/rating/percentage"] == 0.75
    safety = build_metric("safety").summary_columns([1.0, 0.0])
    assert safety["response/llm_judged/safety/rating/average"] == 0.5
    sufficiency = build_metric("context_sufficiency").row_columns(Score(0.0, "misses the date"))
    assert sufficiency["retrieval/llm_judged/context_sufficiency/rating"] == "no"


def test_chunk_relevance_columns() -> None:
    metric = build_metric("chunk_relevance")
    score = Score(
        0.5,
        details={
            "ratings": ["yes", "no"],
            "rationales": ["on topic", "off"],
            "error_messages": [None, None],
        },
    )
    row = metric.row_columns(score)
    assert row["retrieval/llm_judged/chunk_relevance/precision"] == 0.5
    assert row["retrieval/llm_judged/chunk_relevance/ratings"] == ["yes", "no"]
    assert row["retrieval/llm_judged/chunk_relevance/rationales"] == ["on topic", "off"]
    summary = metric.summary_columns([0.5, 1.0])
    assert summary["retrieval/llm_judged/chunk_relevance/precision/average"] == 0.75


def test_ces_semantic_similarity_threshold() -> None:
    assert build_metric("semantic_similarity").threshold == 3.0
    assert (
        build_metric("semantic_similarity", {"semanticSimilaritySuccessThreshold": 4}).threshold
        == 4.0
    )
    assert build_metric("semantic_similarity", 2).threshold == 2.0
    with pytest.raises(ConfigError, match="disagree"):
        build_metric(
            "semantic_similarity", {"threshold": 2, "semantic_similarity_success_threshold": 4}
        )
    with pytest.raises(ConfigError, match="semantic_similarity"):
        build_metric("semantic_similarity", {"semanticSimilaritySuccessThreshold": 5})


def test_ces_hallucination_behavior_disabled_never_gates() -> None:
    case, actual = _case()
    enabled = build_metric("hallucination").score_case(case, actual, [None])
    assert enabled.status is Status.NOT_EVALUATED
    disabled = build_metric("hallucination", {"hallucinationMetricBehavior": "disabled"})
    assert disabled.score_case(case, actual, [None]).status is None
    golden_only = build_metric("hallucination", {"goldenHallucinationMetricBehavior": "DISABLED"})
    assert golden_only.score_case(case, actual, [None]).status is None
    with pytest.raises(ConfigError, match="hallucination"):
        build_metric("hallucination", {"hallucinationMetricBehavior": "SOMETIMES"})
