"""CES judges with a scripted judge: semantic similarity 0..4, hallucination 1/0/-1."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_judge import ScriptedJudge, as_json, by_prompt, judged
from scripted_judge import score as run

from assay import formats
from assay.core.cases import EvalCase, Step, ToolCall, ToolResponse, Turn
from assay.core.results import Status
from assay.judges.types import JudgeCallError

REALWORLD = Path(__file__).resolve().parents[3] / "tests" / "data" / "realworld"
BELLA = REALWORLD / "ces" / "bella_notte" / "evaluations"


def similarity(score: int, why: str = "because") -> str:
    return as_json(explanation=why, score=score)


def single(response: str = "Your table for four is booked.") -> tuple[EvalCase, list[Turn]]:
    turn = Turn(user_input="Book a table for four", final_response=response)
    case = EvalCase(id="c", actual=[turn], expected_response="A table for 4 is reserved.")
    return case, [turn]


# -- semantic similarity ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "label", "outcome", "status"),
    [
        (4, "fully consistent", "PASS", Status.PASSED),
        (3, "mostly consistent", "PASS", Status.PASSED),
        (2, "partially consistent (minor omissions)", "FAIL", Status.FAILED),
        (1, "largely inconsistent (major omissions)", "FAIL", Status.FAILED),
        (0, "completely inconsistent / contradictory", "FAIL", Status.FAILED),
    ],
)
def test_semantic_similarity_labels_and_default_threshold(
    score: int, label: str, outcome: str, status: Status
) -> None:
    metric = judged("semantic_similarity")
    case, actual = single()
    judge = ScriptedJudge([similarity(score, "compared")])
    result = run(metric, judge, case, actual)
    turn = result.per_invocation[0]
    assert turn.value == float(score)
    assert turn.details["label"] == label
    assert turn.details["outcome"] == outcome
    assert turn.explanation == "compared"
    assert (result.score, result.status) == (float(score), status)
    call = judge.calls[0]
    assert "<expected_response>\nA table for 4 is reserved.\n</expected_response>" in call.user
    assert "<agent_response>\nYour table for four is booked.\n</agent_response>" in call.user
    assert "<user_input>\nBook a table for four\n</user_input>" in call.user
    assert call.settings["json_schema"]["properties"]["score"]["enum"] == [4, 3, 2, 1, 0]


def test_semantic_similarity_threshold_option_sets_the_outcome() -> None:
    metric = judged("semantic_similarity", {"semanticSimilaritySuccessThreshold": 4})
    case, actual = single()
    result = run(metric, ScriptedJudge([similarity(3)]), case, actual)
    assert result.per_invocation[0].details["outcome"] == "FAIL"
    assert result.status is Status.FAILED
    lenient = judged("semantic_similarity", {"semanticSimilaritySuccessThreshold": 1})
    relaxed = run(lenient, ScriptedJudge([similarity(1)]), case, actual)
    assert relaxed.per_invocation[0].details["outcome"] == "PASS"
    assert relaxed.status is Status.PASSED


@pytest.mark.parametrize(
    ("replies", "value", "agreement", "unparseable"),
    [
        ([similarity(4), similarity(3), similarity(3)], 3.0, 2 / 3, 0),
        ([similarity(4), similarity(3)], 3.0, 0.5, 0),  # tie: the lower score
        ([similarity(4), "4", similarity(7)], 4.0, 1.0, 1),  # bare integer ok, 7 out of range
        (["no idea", similarity(9)], None, None, 2),
    ],
)
def test_semantic_similarity_votes(
    replies: list[str], value: float | None, agreement: float | None, unparseable: int
) -> None:
    metric = judged("semantic_similarity", {"judge_model_options": {"num_samples": len(replies)}})
    case, actual = single()
    result = run(metric, ScriptedJudge(replies), case, actual)
    turn = result.per_invocation[0]
    assert turn.value == value
    assert turn.details["agreement"] == (None if agreement is None else pytest.approx(agreement))
    assert turn.details["unparseable"] == unparseable
    assert result.details["agreement"] == turn.details["agreement"]
    if value is None:
        assert result.status is Status.NOT_EVALUATED
        assert "could be parsed" in (turn.explanation or "")


def test_semantic_similarity_on_a_real_ces_golden_conversation() -> None:
    evalset = formats.load(BELLA / "Event_Prefill_-_Party_Size_Skipped.json")
    case = evalset.cases[0]
    assert case.reference is not None and len(case.reference) == 2
    actual = [
        Turn(user_input=case.reference[0].user_input, final_response="Welcome to Bella Notte!"),
        Turn(
            user_input=case.reference[1].user_input,
            final_response="Lovely! How many guests will be joining?",
        ),
    ]
    judge = ScriptedJudge(
        by_prompt(
            {
                "Welcome to Bella Notte": [similarity(4, "A welcome.")],
                "How many guests": [similarity(1, "Asks for party size, not the date.")],
            }
        )
    )
    result = run(judged("semantic_similarity"), judge, case, actual)
    assert [s.value for s in result.per_invocation] == [4.0, 1.0]
    assert [s.details["outcome"] for s in result.per_invocation] == ["PASS", "FAIL"]
    assert result.score == 2.5 and result.status is Status.FAILED
    users = {c.user for c in judge.calls}
    welcome = next(u for u in users if "Welcome to Bella Notte" in u)
    # the expectation's expected agent response, and the event the user sent
    assert "<expected_response>\nwelcome\n</expected_response>" in welcome
    assert "[event: welcome]" in welcome
    assert '"party_size": 4' in welcome
    date = next(u for u in users if "How many guests" in u)
    assert "<expected_response>\ndate\n</expected_response>" in date
    assert "I'd like to make a reservation" in date


def test_turns_without_an_expected_response_are_not_judged() -> None:
    reference = [Turn(user_input="hi"), Turn(user_input="price?", final_response="It is $5.")]
    case = EvalCase(id="c", reference=reference)
    actual = [
        Turn(user_input="hi", final_response="Hello"),
        Turn(user_input="price?", final_response="$5"),
    ]
    judge = ScriptedJudge([similarity(4)])
    result = run(judged("semantic_similarity"), judge, case, actual)
    assert len(judge.calls) == 1
    assert result.per_invocation[0].value is None
    assert result.per_invocation[0].explanation == "no expected response for this turn"
    assert (result.score, result.status) == (4.0, Status.PASSED)


def test_semantic_similarity_judge_error_is_kept() -> None:
    case, actual = single()
    boom = JudgeCallError("connection refused", retryable=True)
    result = run(judged("semantic_similarity"), ScriptedJudge([boom]), case, actual)
    assert result.score is None and result.status is Status.NOT_EVALUATED
    assert "connection refused" in (result.per_invocation[0].explanation or "")


# -- hallucination ---------------------------------------------------------------------------


def halluc(score: int, why: str = "checked") -> str:
    return as_json(explanation=why, score=score)


def conversation() -> tuple[EvalCase, list[Turn]]:
    turns = [
        Turn(user_input="Hi there", final_response="Hello! How can I help?"),
        Turn(
            user_input="Is there a table at 7pm?",
            steps=[
                Step(tool_call=ToolCall(name="check_availability", args={"time": "19:00"})),
                Step(
                    tool_response=ToolResponse(
                        name="check_availability", response={"available": True, "tables": 2}
                    )
                ),
            ],
            final_response="Yes, two tables are free at 7pm.",
        ),
        Turn(user_input="Great, price?", final_response="Dinner costs $45 per person."),
    ]
    return EvalCase(id="h", actual=turns), turns


def scripted_hallucination() -> ScriptedJudge:
    return ScriptedJudge(
        by_prompt(
            {
                # routed on the response judged: earlier turns appear in later prompts
                "<agent_response>\nHello!": [halluc(-1, "Only a greeting.")],
                "<agent_response>\nYes, two": [halluc(1, "Tool said 2 tables.")],
                "<agent_response>\nDinner": [halluc(0, "No source for the price.")],
            }
        )
    )


def test_hallucination_scores_and_minus_one_is_left_out_of_the_average() -> None:
    metric = judged("hallucination")
    case, actual = conversation()
    judge = scripted_hallucination()
    result = run(metric, judge, case, actual)
    greeting, availability, price = result.per_invocation
    assert greeting.value is None
    assert greeting.details["ces_score"] == -1
    assert greeting.details["label"] == "no claim to assess"
    assert "no claim to assess (-1)" in (greeting.explanation or "")
    assert (availability.value, availability.details["label"]) == (1.0, "justified")
    assert (price.value, price.details["label"]) == (0.0, "not justified")
    assert price.explanation == "No source for the price."
    assert result.score == 0.5  # (1 + 0) / 2: the -1 turn does not count
    assert result.status is Status.FAILED
    assert result.details["no_claim_turns"] == 1
    assert metric.row_columns(greeting)["hallucination/ces_score"] == -1


def test_hallucination_prompt_shows_history_and_tool_results() -> None:
    case, actual = conversation()
    judge = scripted_hallucination()
    run(judged("hallucination"), judge, case, actual)
    assert len(judge.calls) == 3
    third = next(c for c in judge.calls if "$45" in c.user)
    assert "Hello! How can I help?" in third.user  # earlier turn
    assert "Yes, two tables are free at 7pm." in third.user
    assert "Great, price?" in third.user
    assert "[turn 2] tool result from check_availability" in third.user  # earlier tool result
    second = next(c for c in judge.calls if "<agent_response>\nYes, two" in c.user)
    assert "check_availability" in second.user and '"tables": 2' in second.user
    assert second.settings["json_schema"]["properties"]["score"]["enum"] == [1, 0, -1]


def test_hallucination_all_minus_one_has_no_score_with_the_reason() -> None:
    turn = Turn(user_input="hi", final_response="Hi! What can I do for you?")
    case = EvalCase(id="g", actual=[turn])
    result = run(judged("hallucination"), ScriptedJudge([halluc(-1)]), case, [turn])
    assert result.score is None and result.status is Status.NOT_EVALUATED
    assert result.explanation == "no turn had a claim to assess (1 of 1 turns scored -1)"


@pytest.mark.parametrize(
    ("replies", "ces_score"),
    [
        ([halluc(1), halluc(0)], 0),
        ([halluc(0), halluc(-1)], 0),
        ([halluc(1), halluc(-1)], -1),
        ([halluc(1), halluc(1), halluc(0)], 1),
        ([halluc(1), "garbage", halluc(5)], 1),
    ],
)
def test_hallucination_vote_ties(replies: list[str], ces_score: int) -> None:
    metric = judged("hallucination", {"judge_model_options": {"num_samples": len(replies)}})
    turn = Turn(user_input="q", final_response="It opens at 9.")
    result = run(metric, ScriptedJudge(replies), EvalCase(id="t", actual=[turn]), [turn])
    assert result.per_invocation[0].details["ces_score"] == ces_score


def test_hallucination_disabled_is_computed_but_never_gates() -> None:
    case, actual = conversation()
    metric = judged("hallucination", {"hallucinationMetricBehavior": "DISABLED"})
    result = run(metric, scripted_hallucination(), case, actual)
    assert result.score == 0.5
    assert result.status is None
    golden = judged("hallucination", {"goldenHallucinationMetricBehavior": "DISABLED"})
    assert run(golden, scripted_hallucination(), case, actual).status is None
    scenario_only = judged("hallucination", {"scenarioHallucinationMetricBehavior": "DISABLED"})
    assert run(scenario_only, scripted_hallucination(), case, actual).status is Status.FAILED


def test_hallucination_turn_without_response_is_not_sent() -> None:
    turn = Turn(user_input="q")
    silent = ScriptedJudge([])
    result = run(judged("hallucination"), silent, EvalCase(id="n", actual=[turn]), [turn])
    assert silent.calls == []
    assert result.per_invocation[0].explanation == "no agent response in this turn"
