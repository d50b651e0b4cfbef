"""How a judged item's samples split around the threshold, and the unstable flag
(`assay.metrics.sample_split`), for each family that reports sample scores."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from scripted_judge import ScriptedJudge, as_json
from scripted_judge import ascore as run
from scripted_judge import judged as metric

from assay.core.cases import EvalCase, Turn
from assay.core.results import MetricResult, Score, Status
from assay.metrics.judged import judges_in_context
from assay.metrics.sample_split import describe_split, is_unstable, mark_result, split_of

VALID = as_json(reasoning="same", verdict="valid")
INVALID = as_json(reasoning="differs", verdict="invalid")


def one_turn() -> tuple[EvalCase, list[Turn]]:
    case = EvalCase(
        id="w", reference=[Turn(user_input="Weather?", final_response="21 C and sunny.")]
    )
    return case, [Turn(user_input="Weather?", final_response="Sunny, 21 degrees.")]


async def test_samples_that_all_agree_are_split_but_stable() -> None:
    result = await run(metric("final_response_match_v2"), ScriptedJudge([VALID] * 5), *one_turn())
    only = result.per_invocation[0].details
    assert only["sample_scores"] == [1.0] * 5
    assert only["sample_split"] == {"pass": 5, "fail": 0} and only["unstable"] is False
    assert split_of(result.details) == (5, 0) and not is_unstable(result.details)
    assert describe_split(result.details) == "5 pass / 0 fail"


async def test_a_single_sample_has_no_split_and_no_new_details() -> None:
    m = metric("final_response_match_v2", {"judge_model_options": {"num_samples": 1}})
    result = await run(m, ScriptedJudge([VALID]), *one_turn())
    assert result.per_invocation[0].details == {
        "verdict": "valid",
        "agreement": 1.0,
        "samples": 1,
        "unparseable": 0,
    }
    assert split_of(result.details) is None and not is_unstable(result.details)


async def test_unparseable_samples_are_not_in_the_split() -> None:
    judge = ScriptedJudge([VALID, "garbage", INVALID, "", VALID])
    result = await run(metric("final_response_match_v2"), judge, *one_turn())
    assert result.per_invocation[0].details["sample_scores"] == [1.0, 0.0, 1.0]
    assert split_of(result.details) == (2, 1) and is_unstable(result.details)


async def test_the_run_wide_sample_count_overrides_the_metric_own() -> None:
    m = metric("final_response_match_v2", {"judge_model_options": {"num_samples": 5}})
    judge = ScriptedJudge([VALID, INVALID, VALID])
    with judges_in_context(None, num_samples=3):
        assert m.num_samples == 3
        result = await run(m, judge, *one_turn())
    assert [c.n for c in judge.calls] == [3]
    assert split_of(result.details) == (2, 1)
    assert m.num_samples == 5  # outside the run, the metric's own count again


async def test_a_case_sums_its_invocations_and_counts_the_unstable_ones() -> None:
    case = EvalCase(
        id="two",
        reference=[
            Turn(user_input="first", final_response="A"),
            Turn(user_input="second", final_response="B"),
        ],
    )
    actual = [
        Turn(user_input="first", final_response="A"),
        Turn(user_input="second", final_response="B"),
    ]

    def reply(messages: list[dict[str, str]], i: int) -> str:
        if "first" in messages[1]["content"]:
            return VALID  # 3 of 3: stable
        return VALID if i < 2 else INVALID  # 2 pass / 1 fail: unstable

    m = metric("final_response_match_v2", {"judge_model_options": {"num_samples": 3}})
    result = await run(m, ScriptedJudge(reply), case, actual)
    first, second = result.per_invocation
    assert first.details["unstable"] is False and second.details["unstable"] is True
    assert result.details["sample_split"] == {"pass": 5, "fail": 1}
    assert result.details["unstable_invocations"] == 1 and result.details["unstable"] is True


def rubric_reply(**verdicts: str) -> str:
    return json.dumps(
        {"rubrics": [{"id": k, "rationale": "why", "verdict": v} for k, v in verdicts.items()]}
    )


async def test_rubric_samples_score_the_share_of_rubrics_met() -> None:
    criterion = {
        "threshold": 0.75,
        "judge_model_options": {"num_samples": 3},
        "rubrics": [
            {"rubric_id": "r1", "rubric_content": {"text_property": "Names the city."}},
            {"rubric_id": "r2", "rubric_content": {"text_property": "Gives a temperature."}},
        ],
    }
    judge = ScriptedJudge(
        [
            rubric_reply(r1="yes", r2="yes"),
            rubric_reply(r1="yes", r2="no"),
            rubric_reply(r1="yes", r2="yes"),
        ]
    )
    m = metric("rubric_based_final_response_quality_v1", criterion)
    result = await run(m, judge, *one_turn())
    assert result.per_invocation[0].details["sample_scores"] == [1.0, 0.5, 1.0]
    assert split_of(result.details) == (2, 1) and is_unstable(result.details)


async def test_a_rating_scale_splits_on_the_threshold_not_on_disagreement() -> None:
    # response_evaluation_score rates 1..5 with threshold 4: ratings 4 and 5 disagree
    # but both pass, so the item is stable; 3 and 5 straddle the threshold.
    def rate(*values: int) -> ScriptedJudge:
        return ScriptedJudge([json.dumps({"score": v, "explanation": "x"}) for v in values])

    options = {"judge_model_options": {"num_samples": 3}}
    steady = await run(metric("response_evaluation_score", options), rate(4, 5, 5), *one_turn())
    assert steady.per_invocation[0].details["sample_scores"] == [4.0, 5.0, 5.0]
    assert split_of(steady.details) == (3, 0) and not is_unstable(steady.details)
    shaky = await run(metric("response_evaluation_score", options), rate(3, 5, 5), *one_turn())
    assert split_of(shaky.details) == (2, 1) and is_unstable(shaky.details)


async def test_databricks_yes_no_judges_report_their_split() -> None:
    yes = as_json(rationale="ok", rating="yes")
    no = as_json(rationale="wrong", rating="no")
    case = EvalCase(
        id="c",
        expected_response="Paris",
        actual=[Turn(user_input="Capital?", final_response="Paris")],
    )
    m = metric("correctness", {"judge_model_options": {"num_samples": 3}})
    result = await run(m, ScriptedJudge([yes, no, yes]), case, case.actual or [])
    assert result.per_invocation[0].details["sample_scores"] == [1.0, 0.0, 1.0]
    assert is_unstable(result.details)


def test_a_result_without_threshold_or_score_is_left_alone() -> None:
    sampled = {"sample_scores": [1.0, 0.0]}
    informational = MetricResult(
        "m", 0.5, None, None, per_invocation=[Score(1.0, None, dict(sampled))]
    )
    assert mark_result(informational).details == {}
    assert "sample_split" not in informational.per_invocation[0].details
    unscored = MetricResult(
        "m", None, 0.5, Status.NOT_EVALUATED, per_invocation=[Score(None, "no", dict(sampled))]
    )
    assert mark_result(unscored).details == {}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=0, max_size=6),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from([0.0, 0.25, 0.5, 0.8, 1.0]),
)
def test_unstable_exactly_when_some_invocation_straddles_the_threshold(
    samples: list[list[float]], threshold: float
) -> None:
    per = [Score(max(s) if s else None, None, {"sample_scores": list(s)}) for s in samples]
    result = mark_result(MetricResult("m", 0.5, threshold, Status.PASSED, per_invocation=per))
    sampled = [
        s for s, score in zip(samples, per, strict=True) if len(s) > 1 and score.value is not None
    ]
    straddles = [min(s) < threshold <= max(s) for s in sampled]
    if not sampled:
        assert split_of(result.details) is None and not is_unstable(result.details)
        return
    assert is_unstable(result.details) is any(straddles)
    assert result.details["unstable_invocations"] == sum(straddles)
    passed = sum(v >= threshold for s in sampled for v in s)
    assert split_of(result.details) == (passed, sum(len(s) for s in sampled) - passed)
