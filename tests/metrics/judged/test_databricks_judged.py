"""Databricks judges with a scripted judge: verdicts, votes, output names, prompts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from scripted_judge import ScriptedJudge, as_json, by_prompt, judged
from scripted_judge import score as run

from assay import formats
from assay.core.cases import Chunk, EvalCase, Retrieval, Step, Turn
from assay.core.results import Status
from assay.engine import score_case
from assay.engine.aggregate import case_rows, summarize
from assay.judges.types import JudgeCallError
from assay.metrics.judged.yes_no import YES_NO_SCHEMA

REALWORLD = Path(__file__).resolve().parents[3] / "tests" / "data" / "realworld"


def yes(why: str = "fine") -> str:
    return as_json(rationale=why, rating="yes")


def no(why: str = "wrong") -> str:
    return as_json(rationale=why, rating="no")


def retrieval(*contents: str | None) -> Step:
    return Step(
        retrieval=Retrieval(
            chunks=[Chunk(doc_uri=f"doc{i}", content=c) for i, c in enumerate(contents, 1)]
        )
    )


def row(
    response: str | None = "Paris is the capital of France.",
    *,
    request: str = "What is the capital of France?",
    chunks: Sequence[str | None] = (),
    **case_fields: Any,
) -> tuple[EvalCase, list[Turn]]:
    steps = [retrieval(*chunks)] if chunks else []
    turn = Turn(user_input=request, steps=steps, final_response=response)
    return EvalCase(id="r1", actual=[turn], **case_fields), [turn]


# -- answer judges ------------------------------------------------------------------------------


def test_correctness_yes_and_no_with_exact_output_names() -> None:
    metric = judged("correctness")
    case, actual = row(expected_response="Paris.")
    judge = ScriptedJudge([yes("Matches the reference.")])
    result = run(metric, judge, case, actual)
    assert (result.score, result.status) == (1.0, Status.PASSED)
    call = judge.calls[0]
    assert "<request>\nWhat is the capital of France?\n</request>" in call.user
    assert "<response>\nParis is the capital of France.\n</response>" in call.user
    assert "given as a reference answer" in call.user and "Paris." in call.user
    assert call.settings["json_schema"] == YES_NO_SCHEMA
    cols = metric.row_columns(result.per_invocation[0])
    assert cols["response/llm_judged/correctness/rating"] == "yes"
    assert cols["response/llm_judged/correctness/rationale"] == "Matches the reference."
    assert cols["response/llm_judged/correctness/error_message"] is None

    failed = run(judged("correctness"), ScriptedJudge([no("Says Lyon.")]), case, actual)
    assert (failed.score, failed.status) == (0.0, Status.FAILED)
    assert failed.per_invocation[0].explanation == "Says Lyon."


def test_correctness_uses_expected_facts_from_a_real_mlflow_file() -> None:
    evalset = formats.load(REALWORLD / "mlflow" / "eval_set.jsonl", None, {"question": "request"})
    by_id = {c.id: c for c in evalset.cases}
    case = by_id["q03"]
    assert case.reference is not None
    actual = [case.reference[0].model_copy(update={"final_response": "A CNN-LSTM hybrid is used."})]
    judge = ScriptedJudge([yes("Both facts present.")])
    assert run(judged("correctness"), judge, case, actual).score == 1.0
    user = judge.calls[0].user
    assert "given as a list of facts" in user
    assert "- convolutional\n- LSTM" in user
    assert "Which architecture is used for battery state of health estimation?" in user

    # q15 has no expected facts and no expected response: no judge call, no score
    empty = by_id["q15"]
    assert empty.reference is not None
    silent = ScriptedJudge([])
    turn = empty.reference[0].model_copy(update={"final_response": "I don't know."})
    result = run(judged("correctness"), silent, empty, [turn])
    assert result.score is None and result.status is Status.NOT_EVALUATED
    assert "no expected_response or expected_facts" in (result.explanation or "")
    assert silent.calls == []


def test_multi_turn_correctness_reads_each_reference_turn() -> None:
    reference = [
        Turn(user_input="hi", final_response="Hello!"),
        Turn(user_input="2+2?", final_response="4"),
    ]
    case = EvalCase(id="c", reference=reference, expected_response="ignored for multi-turn")
    actual = [
        Turn(user_input="hi", final_response="Hey"),
        Turn(user_input="2+2?", final_response="5"),
    ]
    judge = ScriptedJudge(by_prompt({"Hey": [yes()], "<response>\n5": [no("4 expected")]}))
    result = run(judged("correctness"), judge, case, actual)
    assert [s.value for s in result.per_invocation] == [1.0, 0.0]
    assert result.score == 0.5 and result.status is Status.FAILED
    seen = sorted(c.user for c in judge.calls)
    assert any("<expected>\n4\n</expected>" in u for u in seen)
    assert all("ignored for multi-turn" not in u for u in seen)


@pytest.mark.parametrize(
    ("replies", "value", "agreement", "unparseable"),
    [
        ([yes(), yes(), no()], 1.0, 2 / 3, 0),
        ([yes(), no(), "I think so?"], 0.0, 0.5, 1),  # tie after dropping the garbage: no
        ([no(), "yes"], 0.0, 0.5, 0),  # a bare yes counts
        (['```json\n{"rating": "Yes", "rationale": "ok"}\n```', "{}", "[]"], 1.0, 1.0, 2),
    ],
)
def test_votes_ties_and_unparseable_samples(
    replies: list[str], value: float, agreement: float, unparseable: int
) -> None:
    metric = judged("relevance_to_query", {"judge_model_options": {"num_samples": len(replies)}})
    case, actual = row()
    judge = ScriptedJudge(replies)
    result = run(metric, judge, case, actual)
    score = result.per_invocation[0]
    assert score.value == value
    assert score.details["agreement"] == pytest.approx(agreement)
    assert score.details["samples"] == len(replies)
    assert score.details["unparseable"] == unparseable
    assert result.details["agreement"] == pytest.approx(agreement)
    assert judge.calls[0].n == len(replies)


def test_no_parseable_sample_means_no_score_with_the_reason() -> None:
    metric = judged("safety", {"judge_model_options": {"num_samples": 2}})
    case, actual = row()
    result = run(metric, ScriptedJudge(["maybe", '{"rating": "perhaps"}']), case, actual)
    assert result.score is None and result.status is Status.NOT_EVALUATED
    cols = metric.row_columns(result.per_invocation[0])
    assert cols["response/llm_judged/safety/rating"] is None
    assert "2 of 2 samples unparseable" in cols["response/llm_judged/safety/error_message"]


def test_a_judge_error_leaves_no_score_and_keeps_the_error_text() -> None:
    metric = judged("safety")
    case, actual = row()
    boom = JudgeCallError("HTTP 503 from judge: overloaded", retryable=True, status=503)
    result = run(metric, ScriptedJudge([boom]), case, actual)
    assert result.score is None and result.status is Status.NOT_EVALUATED
    cols = metric.row_columns(result.per_invocation[0])
    assert "HTTP 503 from judge: overloaded" in cols["response/llm_judged/safety/error_message"]
    assert cols["response/llm_judged/safety/rationale"] is None


def test_temperature_goes_to_the_judge_settings() -> None:
    metric = judged("safety", {"judgeModelOptions": {"temperature": 0.3}})
    case, actual = row()
    judge = ScriptedJudge([yes()])
    run(metric, judge, case, actual)
    assert judge.calls[0].settings["temperature"] == 0.3


def test_rows_and_summary_carry_databricks_names_through_the_engine() -> None:
    metrics = [judged("correctness"), judged("safety"), judged("context_sufficiency")]
    judge = ScriptedJudge(
        by_prompt(
            {
                "harmful or toxic": [yes("Harmless.")],
                "enough information": [no("The context lacks the population figure.")],
                "factual correctness": [yes("Right.")],
            }
        )
    )
    for metric in metrics:
        metric.attach_judge(judge)
    case, actual = row(chunks=["Paris is in France."], expected_response="Paris.")
    result = score_case(case, actual, metrics)
    (out,) = case_rows(result, metrics, agent_run=False)
    assert out["response/llm_judged/correctness/rating"] == "yes"
    assert out["response/llm_judged/safety/rating"] == "yes"
    assert out["retrieval/llm_judged/context_sufficiency/rating"] == "no"
    assert (
        out["retrieval/llm_judged/context_sufficiency/rationale"]
        == "The context lacks the population figure."
    )
    summary, _ = summarize([result], metrics, agent_run=False, runs=1)
    assert summary["response/llm_judged/correctness/rating/percentage"] == 1.0
    assert summary["response/llm_judged/safety/rating/average"] == 1.0
    assert summary["retrieval/llm_judged/context_sufficiency/rating/percentage"] == 0.0
    assert result.status is Status.FAILED


def test_missing_inputs_are_reported_without_calling_the_judge() -> None:
    silent = ScriptedJudge([])
    no_response_case, no_response = row(response=None)
    assert "no response" in (
        run(judged("relevance_to_query"), silent, no_response_case, no_response).explanation or ""
    )
    case, actual = row()
    assert "no retrieved context" in (
        run(judged("groundedness"), silent, case, actual).explanation or ""
    )
    assert "no retrieved context" in (
        run(judged("context_sufficiency"), silent, case, actual).explanation or ""
    )
    assert "no guidelines" in (
        run(judged("guideline_adherence"), silent, case, actual).explanation or ""
    )
    assert silent.calls == []


def test_groundedness_and_context_sufficiency_prompts_render_the_chunks() -> None:
    case, actual = row(
        chunks=["Paris is the capital.", "Lyon is a city."], expected_facts=["Paris"]
    )
    judge = ScriptedJudge([yes(), no("Missing: nothing about Paris being the capital.")])
    assert run(judged("groundedness"), judge, case, actual).score == 1.0
    grounded = judge.calls[0].user
    assert "[chunk 1] (source: doc1)\nParis is the capital." in grounded
    assert "[chunk 2] (source: doc2)\nLyon is a city." in grounded
    result = run(judged("context_sufficiency"), judge, case, actual)
    assert result.score == 0.0
    sufficiency = judge.calls[1]
    assert "<expected>\n- Paris\n</expected>" in sufficiency.user
    assert "<response>" not in sufficiency.user  # judges the retriever, not the answer
    assert "name the missing information" in sufficiency.system


# -- guideline adherence -------------------------------------------------------------------------


def test_guideline_list_is_judged_in_one_call() -> None:
    case, actual = row(guidelines=["Answer in English.", "Be brief."])
    judge = ScriptedJudge([yes("Both followed.")])
    result = run(judged("guideline_adherence"), judge, case, actual)
    assert result.score == 1.0
    assert "<guidelines>\n- Answer in English.\n- Be brief.\n</guidelines>" in judge.calls[0].user


def test_named_guidelines_are_judged_per_name_and_reported_per_name() -> None:
    metric = judged("guideline_adherence", {"global_guidelines": ["Never mention competitors."]})
    guidelines = {"tone": ["Be polite."], "scope": ["Only talk about geography."]}
    case, actual = row(guidelines=guidelines)
    judge = ScriptedJudge(
        by_prompt(
            {
                "Never mention competitors": [yes("No competitor named.")],
                "Be polite": [yes("Polite.")],
                "Only talk about geography": [no("Talks about football.")],
            }
        )
    )
    result = run(metric, judge, case, actual)
    assert len(judge.calls) == 3
    assert result.score == 0.0
    score = result.per_invocation[0]
    assert score.explanation == "scope: Talks about football."
    cols = metric.row_columns(score)
    prefix = "response/llm_judged/guideline_adherence"
    assert cols[f"{prefix}/rating"] == "no"
    assert cols[f"{prefix}/tone/rating"] == "yes"
    assert cols[f"{prefix}/scope/rating"] == "no"
    assert cols[f"{prefix}/scope/rationale"] == "Talks about football."
    assert cols[f"{prefix}/scope/error_message"] is None


def test_a_broken_named_guideline_decides_even_if_another_group_failed() -> None:
    case, actual = row(guidelines={"tone": ["Be polite."], "scope": ["Geography only."]})
    judge = ScriptedJudge(
        by_prompt({"Be polite": [JudgeCallError("timeout", retryable=True)], "Geography": [no()]})
    )
    assert run(judged("guideline_adherence"), judge, case, actual).score == 0.0
    undecided = ScriptedJudge(
        by_prompt({"Be polite": [JudgeCallError("timeout", retryable=True)], "Geography": [yes()]})
    )
    result = run(judged("guideline_adherence"), undecided, case, actual)
    assert result.score is None
    assert "tone: judge call failed: timeout" in (result.per_invocation[0].explanation or "")


# -- chunk relevance -------------------------------------------------------------------------------


def _by_chunk(verdicts: dict[str, str | BaseException]) -> ScriptedJudge:
    return ScriptedJudge(by_prompt({marker: [reply] for marker, reply in verdicts.items()}))


def test_chunk_relevance_rates_each_chunk_and_computes_precision() -> None:
    metric = judged("chunk_relevance")
    case, actual = row(chunks=["Paris facts", "Banana bread recipe", "France capital", "Weather"])
    judge = _by_chunk(
        {
            "Paris facts": yes("About Paris."),
            "Banana bread": no("Recipe."),
            "France capital": yes("Capital."),
            "Weather": no("Off topic."),
        }
    )
    result = run(metric, judge, case, actual)
    assert len(judge.calls) == 4
    assert all("What is the capital of France?" in c.user for c in judge.calls)
    assert result.score == 0.5
    cols = metric.row_columns(result.per_invocation[0])
    prefix = "retrieval/llm_judged/chunk_relevance"
    assert cols[f"{prefix}/ratings"] == ["yes", "no", "yes", "no"]
    assert cols[f"{prefix}/rationales"] == ["About Paris.", "Recipe.", "Capital.", "Off topic."]
    assert cols[f"{prefix}/error_messages"] == [None, None, None, None]
    assert cols[f"{prefix}/precision"] == 0.5
    assert result.status is Status.PASSED  # reported, not gating by default
    summary = metric.summary_columns([0.5, 1.0])
    assert summary[f"{prefix}/precision/average"] == 0.75


def test_chunk_relevance_without_every_chunk_judged_has_no_precision() -> None:
    metric = judged("chunk_relevance")
    case, actual = row(chunks=["Paris facts", None, "Weather"])
    judge = _by_chunk(
        {"Paris facts": yes(), "Weather": JudgeCallError("HTTP 429", retryable=True, status=429)}
    )
    result = run(metric, judge, case, actual)
    assert len(judge.calls) == 2  # the empty chunk is not sent
    assert result.score is None and result.status is Status.NOT_EVALUATED
    score = result.per_invocation[0]
    assert score.details["ratings"] == ["yes", None, None]
    errors = score.details["error_messages"]
    assert errors[0] is None
    assert "no content" in errors[1] and "HTTP 429" in errors[2]
    assert "2 of 3 retrieved chunks could not be judged" in (score.explanation or "")


def test_chunk_relevance_needs_retrieved_context() -> None:
    case, actual = row()
    result = run(judged("chunk_relevance"), ScriptedJudge([]), case, actual)
    assert result.score is None
    assert result.explanation == "no retrieved context to judge"


def test_every_reply_shape_the_prompts_ask_for_is_parsed() -> None:
    """The JSON object each prompt shows the judge parses into a verdict."""
    case, actual = row(chunks=["Paris facts"], expected_response="Paris", guidelines=["Be kind."])
    names = [
        "correctness",
        "relevance_to_query",
        "groundedness",
        "safety",
        "context_sufficiency",
        "guideline_adherence",
        "chunk_relevance",
    ]
    for name in names:
        judge = ScriptedJudge([json.dumps({"rationale": "because", "rating": "yes"})])
        assert run(judged(name), judge, case, actual).score == 1.0, name
        assert '"rating": "<yes or no>"' in judge.calls[0].system, name
