"""CES scenario metrics and per_turn_user_simulator_quality_v1, with a scripted judge."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from scripted_judge import ScriptedJudge, as_json, by_prompt

from assay import formats
from assay.core.cases import (
    EvalCase,
    Scenario,
    Step,
    ToolCall,
    ToolResponse,
    Turn,
    UserGoalBehavior,
    UserInput,
)
from assay.core.results import MetricResult, Status
from assay.metrics.judged.base import NO_JUDGE_MESSAGE, JudgedMetric
from assay.metrics.registry import build_metric, metric_names

REALWORLD = Path(__file__).resolve().parents[3] / "tests" / "data" / "realworld"
LARGE_PARTY = (
    REALWORLD / "ces" / "bella_notte" / "evaluations" / "Scenario_-_Large_Party_Rejection.json"
)
NAMES = [
    "scenario_rubrics",
    "scenario_expectations",
    "all_expectations_satisfied",
    "user_goal_satisfaction",
    "task_completed",
    "per_turn_user_simulator_quality_v1",
]


def _run(name: str, judge: ScriptedJudge | None, case: EvalCase, turns: list[Turn],
         criterion: Any = None) -> MetricResult:  # fmt: skip
    metric = build_metric(name, criterion)
    assert isinstance(metric, JudgedMetric)
    metric.attach_judge(judge)
    return asyncio.run(metric.ascore_case(case, turns, [None] * len(turns)))


def _large_party() -> tuple[EvalCase, list[Turn]]:
    """The real CES scenario, and a conversation where the agent rejects the booking."""
    case = formats.load(LARGE_PARTY).cases[0]
    turns = [
        Turn(
            user_input=UserInput(text="Hi, I want to book dinner for 12."),
            steps=[
                Step(tool_call=ToolCall(id="c1", name="set_party_size", args={"size": 12, "x": 1})),
                Step(
                    tool_response=ToolResponse(
                        id="c1", name="set_party_size", response={"error": "max 8"}
                    )
                ),
            ],
            final_response="Sorry, we book parties of 1-8 only. Please write to"
            " Events@BellaNotte.com for larger groups.",
        ),
        Turn(user_input=UserInput(text="OK, thanks."), final_response="You're welcome!"),
    ]
    return case, turns


def test_every_scenario_metric_is_registered() -> None:
    assert set(NAMES) <= set(metric_names())


@pytest.mark.parametrize("name", NAMES)
def test_non_scenario_cases_are_not_evaluated_with_a_reason(name: str) -> None:
    turn = Turn(user_input="hi", final_response="hello")
    silent = ScriptedJudge([])
    result = _run(name, silent, EvalCase(id="golden", actual=[turn]), [turn])
    assert silent.calls == [] and result.score is None
    assert result.status is Status.NOT_EVALUATED
    assert "no scenario" in (result.explanation or "") and "'golden'" in (result.explanation or "")


@pytest.mark.parametrize("name", ["user_goal_satisfaction", "task_completed", "scenario_rubrics"])
def test_judge_only_metrics_need_a_judge(name: str) -> None:
    case, turns = _large_party()
    result = _run(name, None, case, turns)
    assert result.score is None and result.explanation == NO_JUDGE_MESSAGE


def test_expectations_of_the_real_ces_scenario_without_a_judge() -> None:
    case, turns = _large_party()
    result = _run("scenario_expectations", None, case, turns)
    # the tool call matches (subset of args, 12 == 12.0); the email is said verbatim
    assert result.score == 1.0 and result.status is Status.PASSED
    outcomes = result.details["expectation_outcomes"]
    assert [o["outcome"] for o in outcomes] == ["PASS", "PASS"]
    observed = outcomes[0]["observedToolCall"]
    assert observed["toolCall"]["args"] == {"size": 12, "x": 1}
    assert observed["toolResponse"]["response"] == {"error": "max 8"}
    assert outcomes[1]["turn"] == 1
    assert _run("all_expectations_satisfied", None, case, turns).score == 1.0
    # exact argument matching, asked for explicitly, rejects the extra argument
    exact = _run("all_expectations_satisfied", None, case, turns, {"arg_match": "exact"})
    assert exact.score == 0.0 and exact.status is Status.FAILED
    assert "never with arguments matching" in (exact.explanation or "")


def test_agent_response_expectation_is_judged_when_not_verbatim() -> None:
    case, turns = _large_party()
    turns[0] = turns[0].model_copy(update={"final_response": "Contact our events team by mail."})
    judge = ScriptedJudge([as_json(explanation="no address given", verdict="no", turn=0)])
    result = _run("scenario_expectations", judge, case, turns)
    assert result.score == 0.5 and result.status is Status.FAILED
    assert "events@bellanotte.com" in judge.calls[0].user
    assert "[turn 1] Contact our events team by mail." in judge.calls[0].user
    assert result.details["expectation_outcomes"][1]["outcome"] == "FAIL"
    # without a judge that expectation stays undecided: no score, never a 0
    undecided = _run("scenario_expectations", None, case, turns)
    assert undecided.score is None and undecided.status is Status.NOT_EVALUATED
    assert _run("all_expectations_satisfied", None, case, turns).score is None
    # a missing tool call fails all_expectations_satisfied even without a judge
    no_call = [t.model_copy(update={"steps": []}) for t in turns]
    failed = _run("all_expectations_satisfied", None, case, no_call)
    assert failed.score == 0.0 and "set_party_size was never called" in (failed.explanation or "")


def test_scenario_rubrics_score_each_rubric_with_its_explanation() -> None:
    case, turns = _large_party()
    reply = as_json(rubrics=[
        {"id": "rubric-1", "rationale": "says 1-8 in turn 1", "verdict": "yes"},
        {"id": "rubric-2", "rationale": "gives the email", "verdict": "yes"},
        {"id": "rubric-3", "rationale": "asked for a date", "verdict": "no"},
    ])  # fmt: skip
    judge = ScriptedJudge([reply])
    result = _run("scenario_rubrics", judge, case, turns)
    assert result.score == pytest.approx(2 / 3) and result.status is Status.FAILED
    outcomes = result.details["rubric_outcomes"]
    assert [(o["id"], o["score"]) for o in outcomes] == [
        ("rubric-1", 1.0), ("rubric-2", 1.0), ("rubric-3", 0.0)
    ]  # fmt: skip
    assert outcomes[2]["scoreExplanation"] == "asked for a date"
    assert outcomes[0]["rubric"].startswith("The agent must inform the user")
    prompt = judge.calls[0].user
    assert "set_party_size" in prompt and "Try to make a dinner reservation" in prompt
    assert "USER_GOAL_REJECTED" not in judge.calls[0].text  # the judge is not told the answer


def _goal(score: int, rejected: bool) -> str:
    return as_json(explanation=f"goal {score}", score=score, rejected=rejected)


@pytest.mark.parametrize(
    ("behavior", "reply", "score", "status"),
    [
        (UserGoalBehavior.USER_GOAL_SATISFIED, _goal(1, False), 1.0, Status.PASSED),
        (UserGoalBehavior.USER_GOAL_SATISFIED, _goal(0, True), 0.0, Status.FAILED),
        (UserGoalBehavior.USER_GOAL_REJECTED, _goal(0, True), 0.0, Status.PASSED),
        (UserGoalBehavior.USER_GOAL_REJECTED, _goal(0, False), 0.0, Status.FAILED),
        (UserGoalBehavior.USER_GOAL_IGNORED, _goal(0, False), 0.0, None),
        (UserGoalBehavior.USER_GOAL_SATISFIED, _goal(-1, False), None, Status.NOT_EVALUATED),
    ],
)
def test_user_goal_satisfaction_follows_user_goal_behavior(
    behavior: UserGoalBehavior, reply: str, score: float | None, status: Status | None
) -> None:
    case, turns = _large_party()
    assert case.scenario is not None
    case.scenario.user_goal_behavior = behavior
    result = _run("user_goal_satisfaction", ScriptedJudge([reply]), case, turns)
    assert result.score == score and result.status is status
    assert result.details["user_goal_behavior"] == behavior.value
    if score is None:
        assert result.details["ces_score"] == -1 and "unspecified" in (result.explanation or "")


def test_user_goal_votes_tie_to_not_satisfied() -> None:
    case, turns = _large_party()
    judge = ScriptedJudge([_goal(1, False), _goal(0, True), "garbage"])
    result = _run("user_goal_satisfaction", judge, case, turns,
                  {"judge_model_options": {"num_samples": 3}})  # fmt: skip
    assert result.score == 0.0 and result.details["unparseable"] == 1


def _task_judge(goal: str, hallucination: int = 1) -> ScriptedJudge:
    return ScriptedJudge(by_prompt({
        "satisfied the user's goal": [goal],
        "for hallucination": lambda i: as_json(explanation="ok", score=hallucination),
    }))  # fmt: skip


def test_task_completed_composite() -> None:
    case, turns = _large_party()  # USER_GOAL_REJECTED in the real file
    done = _run("task_completed", _task_judge(_goal(0, True)), case, turns)
    assert done.score == 1.0 and done.status is Status.PASSED
    assert done.details["parts"] == {
        "all_expectations_satisfied": True, "no_hallucination": True, "user_goal": True
    }  # fmt: skip
    assert done.details["label"] == "task completed"
    # the agent did the booking instead of rejecting it: not completed
    booked = _run("task_completed", _task_judge(_goal(1, False)), case, turns)
    assert booked.score == 0.0 and booked.details["parts"]["user_goal"] is False
    # a hallucinated turn fails it
    made_up = _run("task_completed", _task_judge(_goal(0, True), hallucination=0), case, turns)
    assert made_up.score == 0.0 and made_up.details["hallucinated_turns"] == [1, 2]
    # ... unless the scenario hallucination behaviour is DISABLED
    disabled = _run("task_completed", _task_judge(_goal(0, True), hallucination=0), case, turns,
                    {"scenarioHallucinationMetricBehavior": "DISABLED"})  # fmt: skip
    assert disabled.score == 1.0 and "no_hallucination" not in disabled.details["parts"]


def test_task_completed_with_the_goal_ignored_and_an_unmet_expectation() -> None:
    case, turns = _large_party()
    assert case.scenario is not None
    case.scenario.user_goal_behavior = UserGoalBehavior.USER_GOAL_IGNORED
    judge = _task_judge("unused")
    result = _run(
        "task_completed", judge, case, [t.model_copy(update={"steps": []}) for t in turns]
    )
    assert result.score == 0.0 and "user_goal" not in result.details["parts"]
    assert not any("satisfied the user's goal" in c.text for c in judge.calls)
    assert "expectation 1 not met" in (result.explanation or "")


def test_task_completed_undecided_goal_has_no_score() -> None:
    case, turns = _large_party()
    judge = _task_judge("not json at all")
    result = _run("task_completed", judge, case, turns)
    assert result.score is None and result.status is Status.NOT_EVALUATED
    assert "could not decide: user_goal" in (result.explanation or "")


def _simulated() -> tuple[EvalCase, list[Turn]]:
    scenario = Scenario(starting_prompt="Hi", conversation_plan="Book a table for 2, then stop.")
    turns = [
        Turn(user_input=UserInput(event="conversation_start"), final_response="Welcome!"),
        Turn(user_input=UserInput(text=" Hi "), final_response="How many people?"),
        Turn(user_input=UserInput(text="Two"), final_response="Booked for 2."),
    ]
    return EvalCase(id="sim", scenario=scenario, actual=turns), turns


def test_user_simulator_quality_first_turn_plan_and_ending() -> None:
    case, turns = _simulated()
    judge = ScriptedJudge(by_prompt({
        "</finished>\n</generated_user_message>": [as_json(reasoning="plan done", verdict="valid")],
        "Two\n</generated_user_message>": [as_json(reasoning="answers", verdict="valid")],
    }))  # fmt: skip
    result = _run("per_turn_user_simulator_quality_v1", judge, case, turns,
                  {"judge_model_options": {"num_samples": 1}})  # fmt: skip
    assert result.score == 1.0 and result.status is Status.PASSED
    per = result.per_invocation
    assert per[0].value is None and "opening" in (per[0].explanation or "")
    assert per[1].value == 1.0 and "equals the starting prompt" in (per[1].explanation or "")
    assert len(judge.calls) == 2  # the first message needs no judge
    assert "Book a table for 2" in judge.calls[0].user
    assert result.details["turns"] == 2 and result.details["ending"] == "valid"


def test_user_simulator_quality_failures() -> None:
    case, turns = _simulated()
    turns[1] = turns[1].model_copy(update={"user_input": UserInput(text="Hello")})
    judge = ScriptedJudge(by_prompt({
        "</finished>\n</generated_user_message>": [as_json(reasoning="open", verdict="invalid")],
        "Two\n</generated_user_message>": [as_json(reasoning="fine", verdict="valid")],
    }))  # fmt: skip
    options = {"judge_model_options": {"num_samples": 1}, "stop_signal": "</finished>"}
    result = _run("per_turn_user_simulator_quality_v1", judge, case, turns, options)
    # first differs from the starting prompt; the last fails because it should not end there
    assert result.score == 0.0 and result.status is Status.FAILED
    assert "should not have ended" in (result.per_invocation[2].explanation or "")


def test_user_simulator_quality_uses_the_stop_signal_option() -> None:
    case, turns = _simulated()
    judge = ScriptedJudge(lambda messages, i: as_json(reasoning="ok", verdict="valid"))
    _run("per_turn_user_simulator_quality_v1", judge, case, turns,
         {"stopSignal": "<done/>", "judge_model_options": {"num_samples": 1}})  # fmt: skip
    assert any("<done/>\n</generated_user_message>" in c.user for c in judge.calls)
    assert all("</finished>" not in c.text for c in judge.calls)
