"""Custom judges from the user's instructions: ANSWER and RETRIEVAL, Python and config."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from scripted_judge import ScriptedJudge, as_json, by_prompt

from assay.api import evaluate, resolve_metrics
from assay.config import load_config
from assay.core.cases import Chunk, EvalCase, Retrieval, Step, Turn
from assay.core.results import MetricResult, Status
from assay.engine import score_case
from assay.engine.aggregate import case_rows, summarize
from assay.errors import ConfigError
from assay.metrics.base import is_custom_judge_criterion
from assay.metrics.judged.custom_judge import (
    CustomJudge,
    custom_judge_factories,
    custom_judge_from_criterion,
)
from assay.metrics.registry import build_metric, metric_names


def yes(why: str = "ok") -> str:
    return as_json(rationale=why, rating="yes")


def no(why: str = "not ok") -> str:
    return as_json(rationale=why, rating="no")


def run(judge_metric: CustomJudge, judge: ScriptedJudge, case: EvalCase) -> MetricResult:
    judge_metric.attach_judge(judge)
    actual = case.actual or []
    return asyncio.run(judge_metric.ascore_case(case, actual, [None] * len(actual)))


def row(
    response: str | None = "Sure! Our store opens at 9am.",
    chunks: Sequence[str] = (),
    **case_fields: Any,
) -> EvalCase:
    steps = (
        [
            Step(
                retrieval=Retrieval(
                    chunks=[Chunk(doc_uri=f"d{i}", content=c) for i, c in enumerate(chunks)]
                )
            )
        ]
        if chunks
        else []
    )
    turn = Turn(user_input="When do you open?", steps=steps, final_response=response)
    return EvalCase(id="row", actual=[turn], **case_fields)


# -- ANSWER ----------------------------------------------------------------------------------


def test_answer_judge_verdicts_and_output_names() -> None:
    polite = CustomJudge("polite", "The response is polite and friendly.")
    assert polite.name == "polite" and polite.threshold == 1.0
    judge = ScriptedJudge([yes("Friendly tone.")])
    result = run(polite, judge, row())
    assert (result.score, result.status) == (1.0, Status.PASSED)
    call = judge.calls[0]
    assert "<criterion>\nThe response is polite and friendly.\n</criterion>" in call.system
    assert "<request>\nWhen do you open?\n</request>" in call.user
    assert "<response>\nSure! Our store opens at 9am.\n</response>" in call.user
    assert "<expected_response>" not in call.user  # absent inputs are not shown
    assert call.settings["json_schema"]["required"] == ["rationale", "rating"]
    cols = polite.row_columns(result.per_invocation[0])
    assert cols["response/llm_judged/polite/rating"] == "yes"
    assert cols["response/llm_judged/polite/rationale"] == "Friendly tone."
    assert cols["response/llm_judged/polite/error_message"] is None
    assert polite.summary_columns([1.0, 0.0, 0.0, 1.0]) == {
        "polite/mean": 0.5,
        "polite/std": pytest.approx(0.57735, rel=1e-4),
        "response/llm_judged/polite/rating/percentage": 0.5,
    }

    failed = run(CustomJudge("polite", "Be polite."), ScriptedJudge([no("Rude.")]), row())
    assert (failed.score, failed.status) == (0.0, Status.FAILED)


def test_answer_judge_sees_every_input_the_row_has() -> None:
    case = row(
        chunks=["Opening hours: 9am-5pm."],
        expected_response="We open at 9.",
        guidelines={"tone": ["Be brief."]},
    )
    judge = ScriptedJudge([yes()])
    run(CustomJudge("hours", "The response states the opening time."), judge, case)
    user = judge.calls[0].user
    assert "<expected_response>\nWe open at 9.\n</expected_response>" in user
    assert "Opening hours: 9am-5pm." in user
    assert "<guidelines>\n- [tone] Be brief.\n</guidelines>" in user


def test_placeholders_in_instructions_are_filled_and_not_repeated() -> None:
    instructions = 'Reply yes if "{response}" answers {request}. Keep JSON like {"a": 1} as is.'
    judge = ScriptedJudge([yes()])
    run(CustomJudge("answers", instructions), judge, row())
    call = judge.calls[0]
    assert '"Sure! Our store opens at 9am." answers When do you open?' in call.system
    assert '{"a": 1}' in call.system
    assert "<response>" not in call.user and "<request>" not in call.user


def test_a_placeholder_the_row_lacks_means_no_score_without_a_call() -> None:
    silent = ScriptedJudge([])
    result = run(CustomJudge("match", "Same as {expected_response}?"), silent, row())
    assert silent.calls == []
    assert result.score is None and result.status is Status.NOT_EVALUATED
    assert "{expected_response}" in (result.explanation or "")


def test_answer_votes_ties_and_judge_errors() -> None:
    three = CustomJudge("concise", "Concise?", judge_model_options={"num_samples": 3})
    result = run(three, ScriptedJudge([yes(), no(), "???"]), row())
    score = result.per_invocation[0]
    assert score.value == 0.0  # 1 yes vs 1 no after dropping the unparseable one: no
    assert (score.details["agreement"], score.details["unparseable"]) == (0.5, 1)
    failing = run(CustomJudge("concise", "Concise?"), ScriptedJudge([TimeoutError("60 s")]), row())
    cols = three.row_columns(failing.per_invocation[0])
    assert failing.score is None
    assert "judge call failed: 60 s" in cols["response/llm_judged/concise/error_message"]
    silent = ScriptedJudge([])
    assert run(CustomJudge("concise", "Concise?"), silent, row(response=None)).score is None
    assert silent.calls == []


# -- RETRIEVAL ---------------------------------------------------------------------------------


def test_retrieval_judge_rates_each_chunk_with_precision_and_names() -> None:
    fresh = CustomJudge(
        "fresh_docs", "The chunk is about store hours, not holidays.", assessment_type="retrieval"
    )
    assert fresh.assessment_type == "RETRIEVAL" and fresh.threshold is None
    case = row(chunks=["Hours: 9-5 daily", "Holiday closures 2019", "Open at 9am"])
    judge = ScriptedJudge(
        by_prompt(
            {
                "Hours: 9-5": [yes("Hours.")],
                "Holiday closures": [no("Holidays.")],
                "Open at 9am": [yes("Opening time.")],
            }
        )
    )
    result = run(fresh, judge, case)
    assert len(judge.calls) == 3
    for call in judge.calls:
        assert "<request>\nWhen do you open?\n</request>" in call.user
        assert "<chunk>\n" in call.user
        assert "<response>" not in call.user  # a retrieval judge sees the chunk, not the answer
        assert "not holidays" in call.system
    assert result.score == pytest.approx(2 / 3)
    assert result.status is Status.PASSED  # reported, not gating without a threshold
    cols = fresh.row_columns(result.per_invocation[0])
    prefix = "retrieval/llm_judged/fresh_docs"
    assert cols[f"{prefix}/ratings"] == ["yes", "no", "yes"]
    assert cols[f"{prefix}/rationales"] == ["Hours.", "Holidays.", "Opening time."]
    assert cols[f"{prefix}/error_messages"] == [None, None, None]
    assert cols[f"{prefix}/precision"] == pytest.approx(2 / 3)
    assert fresh.summary_columns([0.5, 1.0])[f"{prefix}/precision/average"] == 0.75

    gated = CustomJudge("fresh_docs", "Store hours?", "RETRIEVAL", threshold=0.8)
    judge_again = ScriptedJudge([yes(), no(), yes()])
    assert run(gated, judge_again, case).status is Status.FAILED


def test_retrieval_placeholder_is_the_chunk() -> None:
    judge = ScriptedJudge([yes()])
    metric = CustomJudge("mentions_hours", "Does '{retrieved_context}' give hours?", "RETRIEVAL")
    run(metric, judge, row(chunks=["Hours: 9-5 daily"]))
    assert "'(source: d0)\nHours: 9-5 daily' give hours?" in judge.calls[0].system
    assert "<chunk>" not in judge.calls[0].user


def test_retrieval_judge_without_chunks_has_no_score() -> None:
    result = run(CustomJudge("r", "Relevant?", "RETRIEVAL"), ScriptedJudge([]), row())
    assert result.score is None and result.explanation == "no retrieved context to judge"


# -- through the engine --------------------------------------------------------------------------


def test_custom_judges_next_to_builtin_metrics_in_rows_and_summary() -> None:
    answer = CustomJudge("polite", "Polite?")
    retrieval = CustomJudge("on_topic", "On topic?", "RETRIEVAL")
    judge = ScriptedJudge(
        by_prompt({"<criterion>\nPolite?": [yes()], "<criterion>\nOn topic?": [yes(), no()]})
    )
    metrics = [answer, retrieval, build_metric("response_match_score")]
    for metric in (answer, retrieval):
        metric.attach_judge(judge)
    case = row(chunks=["Hours", "Parking"])
    case = case.model_copy(update={"reference": [Turn(final_response="We open at 9am.")]})
    result = score_case(case, case.actual or [], metrics)
    (out,) = case_rows(result, metrics, agent_run=False)
    assert out["response/llm_judged/polite/rating"] == "yes"
    assert out["retrieval/llm_judged/on_topic/precision"] == 0.5
    assert out["response_match_score/score"] is not None
    summary, _ = summarize([result], metrics, agent_run=False, runs=1)
    assert summary["response/llm_judged/polite/rating/percentage"] == 1.0
    assert summary["retrieval/llm_judged/on_topic/precision/average"] == 0.5


def test_the_python_api_accepts_custom_judge_objects() -> None:
    judge_metric = CustomJudge("polite", "Polite?")
    metrics = resolve_metrics([judge_metric, "response_match_score"], None)
    assert metrics[0] is judge_metric
    assert [m.name for m in metrics] == ["polite", "response_match_score"]


def test_evaluate_scores_mlflow_rows_with_a_custom_judge() -> None:
    polite = CustomJudge("polite", "Polite?")
    # a judge attached by the caller is kept by the run; routed on the response text
    polite.attach_judge(
        ScriptedJudge(lambda messages, _: yes() if "please" in messages[1]["content"] else no())
    )
    rows = [
        {"request": "Can I come in?", "response": "Yes, please do."},
        {"request": "Can I come in?", "response": "Go away."},
    ]
    result = evaluate(rows, metrics=[polite], format="mlflow")
    assert [r["response/llm_judged/polite/rating"] for r in result.rows] == ["yes", "no"]
    assert result.summary["response/llm_judged/polite/rating/percentage"] == 0.5
    assert (result.summary["passed"], result.summary["failed"]) == (1, 1)


# -- names and options ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("safety", "x"), {}, "built-in metric"),
        (("a/b", "x"), {}, "letters, digits"),
        (("ok", "   "), {}, "instructions must not be empty"),
        (("ok", "x", "CHUNKS"), {}, "assessment_type"),
        (("ok", "Is {response} backed by it?", "RETRIEVAL"), {}, "cannot use {response}"),
        (("ok", "x"), {"judge_model_options": {"num_samples": 0}}, "num_samples"),
    ],
)
def test_bad_custom_judges_are_config_errors(
    args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        CustomJudge(*args, **kwargs)


def test_each_custom_judge_has_its_own_name() -> None:
    first, second = CustomJudge("first", "a"), CustomJudge("second", "b")
    assert (first.name, second.name) == ("first", "second")
    assert isinstance(first, CustomJudge) and type(first) is not type(second)
    assert "first" not in metric_names()  # nothing is registered globally


# -- config form ---------------------------------------------------------------------------------

CRITERIA: dict[str, Any] = {
    "response_match_score": 0.8,
    "polite": {
        "custom_judge": {"instructions": "Polite?", "assessment_type": "ANSWER"},
        "threshold": 1.0,
        "judge_model_options": {"num_samples": 3, "judge_model": "openai:gpt-4o-mini"},
    },
    "on_topic": {
        "customJudge": {"instructions": "About hours?", "assessmentType": "RETRIEVAL"},
        "threshold": 0.5,
    },
}


def test_config_criteria_declare_custom_judges(tmp_path: Path) -> None:
    path = tmp_path / "test_config.json"
    path.write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    config = load_config(path)
    factories = custom_judge_factories(config.criteria, where=str(path))
    assert sorted(factories) == ["on_topic", "polite"]
    polite = build_metric("polite", config.criteria["polite"], custom=factories)
    assert isinstance(polite, CustomJudge)
    assert (polite.assessment_type, polite.threshold, polite.num_samples) == ("ANSWER", 1.0, 3)
    assert polite.judge_model == "openai:gpt-4o-mini"
    on_topic = build_metric("on_topic", config.criteria["on_topic"], custom=factories)
    assert isinstance(on_topic, CustomJudge)
    assert (on_topic.assessment_type, on_topic.threshold) == ("RETRIEVAL", 0.5)
    assert factories["polite"]() is not factories["polite"]()  # a fresh metric per build
    assert not is_custom_judge_criterion(CRITERIA["response_match_score"])


@pytest.mark.parametrize(
    ("criterion", "message"),
    [
        (
            {"custom_judge": {"assessment_type": "ANSWER"}},
            "criteria.tone: custom_judge.instructions: Field required. Expected"
            " {custom_judge: {instructions: str, assessment_type: ANSWER | RETRIEVAL}",
        ),
        ({"custom_judge": {"instructions": "x", "type": "ANSWER"}}, "custom_judge.type"),
        (
            {"custom_judge": {"instructions": "x", "assessment_type": "BOTH"}},
            "criteria.tone: custom_judge.assessment_type: Input should be 'ANSWER' or 'RETRIEVAL'",
        ),
        (
            {"custom_judge": {"instructions": "x"}, "judgeModelOptions": {"numSamples": 0}},
            "criteria.tone: judgeModelOptions.numSamples",  # as the user wrote it
        ),
        ({"custom_judge": {"instructions": "x"}, "threshold": True}, "tone.threshold"),
        ({"custom_judge": {"instructions": "x"}, "rubrics": []}, "rubrics"),
    ],
)
def test_bad_custom_judge_criteria_name_the_path(criterion: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=r"test_config\.json") as info:
        custom_judge_factories({"tone": criterion}, where="test_config.json")
    assert message in str(info.value)


def test_a_custom_judge_may_not_take_a_reserved_name() -> None:
    with pytest.raises(ConfigError, match=r"criteria\.safety"):
        custom_judge_factories({"safety": {"custom_judge": {"instructions": "x"}}})
    with pytest.raises(ConfigError, match=r"criteria\.mine"):
        custom_judge_factories({"mine": {"custom_judge": {"instructions": "x"}}}, reserved=["mine"])


def test_custom_judge_from_criterion_builds_one() -> None:
    metric = custom_judge_from_criterion(
        "brief", {"custom_judge": {"instructions": "Brief?", "description": "short answers"}}
    )
    assert metric.name == "brief" and metric.description == "short answers"
    assert metric.instructions == "Brief?"


def test_a_threshold_outside_the_yes_no_range_is_refused() -> None:
    # 4 reads like a 1-5 rating scale: no yes/no score could ever reach it.
    with pytest.raises(ConfigError, match=r"threshold 4 of metric 'polite' .* 0\.\.1"):
        custom_judge_from_criterion(
            "polite", {"threshold": 4, "custom_judge": {"instructions": "Is {response} polite?"}}
        )
    judge = custom_judge_from_criterion(
        "polite", {"threshold": 0.5, "custom_judge": {"instructions": "Is {response} polite?"}}
    )
    assert judge.threshold == 0.5 and judge.score_range == (0.0, 1.0)
