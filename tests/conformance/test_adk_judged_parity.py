"""Judged metrics: ADK's own evaluator and assay give the same scores and statuses
when their judges give the same replies.

Each test scripts judge replies per case (routed by a user message both tools put in
their prompts), runs google-adk's evaluator from its metric registry with a stand-in
model registered in ADK's `LLMRegistry`, and runs `assay.evaluate` on the same eval set
file with `--judge openai:...` pointed at the stand-in judge server on loopback. Then it
compares, case by case: the overall score, the overall status, each invocation's score
and status (from assay's ADK-shaped case result), and the per-rubric scores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from google.adk.evaluation.conversation_scenarios import ConversationScenario
from google.adk.evaluation.eval_metrics import BaseCriterion, EvalMetric
from google.adk.evaluation.eval_result import EvalCaseResult as AdkEvalCaseResult
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.evaluator import EvaluationResult
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY
from judge_parity import (
    JUDGE_MODEL,
    Marker,
    Router,
    ScriptedLlm,
    assert_same_scores,
    rubric_block,
)

from assay import evaluate, formats
from assay.core.cases import Scenario
from assay.core.results import EvalResult
from assay.interop.adk_history import adk_case_result
from assay.testing.judge_server import JudgeServer

DATA = Path(__file__).resolve().parents[1] / "data" / "parity"
TRAJECTORY = DATA / "multi_turn_trajectory.evalset.json"


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    with JudgeServer("unused") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "stand-in")
        yield server


Scenarios = Mapping[str, tuple[str, str]]


def run_adk(
    path: Path,
    name: str,
    criterion: Mapping[str, Any],
    routes: Mapping[Marker, Sequence[str]],
    scenarios: Scenarios | None = None,
    router_type: type[Router] = Router,
) -> tuple[dict[str, EvaluationResult], Router]:
    """ADK's registered evaluator on every case of `path` (conversation = actual);
    `scenarios` gives cases a (starting prompt, plan) conversation scenario."""
    adk_set = AdkEvalSet.model_validate_json(path.read_text())
    router = router_type(routes)
    ScriptedLlm.router = router
    metric = EvalMetric(metric_name=name, criterion=BaseCriterion.model_validate(criterion))
    results: dict[str, EvaluationResult] = {}
    for case in adk_set.eval_cases:
        evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric)
        conversation = list(case.conversation or [])
        scenario = None
        if scenarios and case.eval_id in scenarios:
            start, plan = scenarios[case.eval_id]
            scenario = ConversationScenario(starting_prompt=start, conversation_plan=plan)
        outcome = evaluator.evaluate_invocations(conversation, conversation, scenario)
        if asyncio.iscoroutine(outcome):
            outcome = asyncio.run(outcome)
        results[case.eval_id] = outcome
    return results, router


def run_assay(
    server: JudgeServer,
    path: Path,
    name: str,
    criterion: Mapping[str, Any],
    routes: Mapping[Marker, Sequence[str]],
    scenarios: Scenarios | None = None,
    router_type: type[Router] = Router,
) -> tuple[EvalResult, Router]:
    router = router_type(routes)
    server.set_script(router.standin)
    # The conversations are the recorded agent turns, as ADK is given them above.
    loaded = formats.load(path)
    cases = []
    for case in loaded.cases:
        update: dict[str, Any] = {"actual": case.reference}
        if scenarios and case.id in scenarios:
            start, plan = scenarios[case.id]
            update["scenario"] = Scenario(starting_prompt=start, conversation_plan=plan)
        cases.append(case.model_copy(update=update))
    recorded = loaded.model_copy(update={"cases": cases})
    # The same criterion, its judge named as assay names an OpenAI-compatible endpoint.
    ours = dict(criterion)
    options = dict(ours.get("judge_model_options", {}))
    options["judge_model"] = f"openai:{JUDGE_MODEL}"
    ours["judge_model_options"] = options
    result = evaluate(
        recorded,
        metrics={name: ours},
        judge=f"openai:{JUDGE_MODEL}",
        use_cache=False,
        concurrency=1,
    )
    assert server.errors == []
    return result, router


def assert_same(name: str, adk: Mapping[str, EvaluationResult], ours: EvalResult) -> None:
    compared = assert_same_scores(name, adk, ours)
    for case_id, expected in adk.items():
        case, overall, per = compared[case_id]
        want = expected.per_invocation_results
        # Per-rubric verdicts of each invocation, as ADK's results carry them.
        assert [_rubrics(p.get("details", {}).get("rubric_scores")) for p in per] == [
            _rubrics([r.model_dump() for r in w.rubric_scores or []]) for w in want
        ], case_id
        assert _rubrics(overall.get("details", {}).get("rubric_scores")) == _rubrics(
            [r.model_dump() for r in expected.overall_rubric_scores or []]
        ), case_id
        # ADK reads assay's eval history (ADK-shaped case results) with the verdicts.
        history = AdkEvalCaseResult.model_validate(adk_case_result(case))
        (read,) = [m for m in history.overall_eval_metric_results if m.metric_name == name]
        got_rubrics = read.details.rubric_scores or []
        assert _rubrics([r.model_dump() for r in got_rubrics]) == _rubrics(
            [r.model_dump() for r in expected.overall_rubric_scores or []]
        ), case_id
        if expected.overall_rubric_scores:
            got = case.metrics[name].details["rubric_scores"]
            assert got == {r.rubric_id: r.score for r in expected.overall_rubric_scores}, case_id


def _rubrics(entries: Sequence[Mapping[str, Any]] | None) -> dict[str, float]:
    """rubric id -> score of ADK-shaped `rubric_scores` (entries without a score left out:
    ADK lists a rubric no sample mentioned only when another sample did)."""
    return {e["rubric_id"]: e["score"] for e in entries or [] if e.get("score") is not None}


# -- rubric_based_multi_turn_trajectory_quality_v1 ---------------------------------------

TRAJ = "rubric_based_multi_turn_trajectory_quality_v1"
ROUTE = "The agent searched flights from Paris to Rome for May 3."
CONFIRM = "The agent asked the user to confirm before booking."
BOARDING = "The agent gave a boarding time consistent with the departure time."
INVENTED = "The agent did not invent flights the tool did not return."
CANCEL = "The agent cancelled booking QX7Z."


def _trajectory_criterion(num_samples: int = 5) -> dict[str, Any]:
    return {
        "threshold": 0.6,
        "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": num_samples},
        "rubrics": [{"rubric_id": "no_invented", "rubric_content": {"text_property": INVENTED}}],
    }


def _sample(*verdicts: tuple[str, str, str]) -> str:
    return "".join(rubric_block(rid, text, verdict) for rid, text, verdict in verdicts)


def _trajectory_routes() -> dict[str, list[str]]:
    booking = [
        # no_invented yes x5; route yes x5; confirm yes,no,yes,no,(garbage) -> tie -> no;
        # boarding no,no,yes,no,(garbage) -> no. Score 2/4 = 0.5 < 0.6: FAILED.
        _sample(("no_invented", INVENTED, "yes"), ("searched_right_route", ROUTE, "yes"),
                ("confirmed_before_booking", CONFIRM, "yes"), ("boarding_time", BOARDING, "no")),
        _sample(("no_invented", INVENTED, "yes"), ("searched_right_route", ROUTE, "yes"),
                ("confirmed_before_booking", CONFIRM, "no"), ("boarding_time", BOARDING, "no")),
        _sample(("no_invented", INVENTED, "yes"), ("searched_right_route", ROUTE, "yes"),
                ("confirmed_before_booking", CONFIRM, "yes"), ("boarding_time", BOARDING, "yes")),
        _sample(("no_invented", INVENTED, "yes"), ("searched_right_route", ROUTE, "yes"),
                ("confirmed_before_booking", CONFIRM, "no"), ("boarding_time", BOARDING, "no")),
        "I cannot judge this conversation.",
    ]  # fmt: skip
    single = [
        # The property text alone names the rubric in two samples (no ID line).
        _sample(("no_invented", INVENTED, "yes"), ("cancelled_right_booking", CANCEL, "yes")),
        _sample(("no_invented", INVENTED, "no"), ("cancelled_right_booking", CANCEL, "yes")),
        _sample(("", INVENTED, "yes"), ("", CANCEL, "yes")),
        _sample(("no_invented", INVENTED, "yes"), ("cancelled_right_booking", CANCEL, "no")),
        _sample(("no_invented", INVENTED, "no"), ("cancelled_right_booking", CANCEL, "yes")),
    ]
    criterion_only = [
        _sample(("no_invented", INVENTED, "yes")),
        _sample(("no_invented", INVENTED, "yes")),
        _sample(("no_invented", INVENTED, "no")),
        _sample(("no_invented", INVENTED, "yes")),
        _sample(("no_invented", INVENTED, "no")),
    ]
    return {
        "Find me a flight from Paris to Rome": booking,
        "Cancel booking QX7Z.": single,
        "Any flights to Oslo tomorrow?": criterion_only,
    }


def test_multi_turn_trajectory_matches_adk(standin: JudgeServer) -> None:
    criterion = _trajectory_criterion()
    adk, adk_router = run_adk(TRAJECTORY, TRAJ, criterion, _trajectory_routes())
    ours, our_router = run_assay(standin, TRAJECTORY, TRAJ, criterion, _trajectory_routes())
    assert_same(TRAJ, adk, ours)
    # One conversation-wide judge call per sample in both: 3 cases x 5 samples.
    assert len(adk_router.prompts) == len(our_router.prompts) == 15
    scores = {c.case_id: c.metrics[TRAJ].score for c in ours.cases}
    assert scores == {"booking": 0.5, "single_turn": 1.0, "criterion_rubrics_only": 1.0}
    booking = next(c for c in ours.cases if c.case_id == "booking")
    assert [s.value for s in booking.metrics[TRAJ].per_invocation] == [None, None, 0.5]


def test_the_judge_sees_the_whole_conversation_with_tool_calls(standin: JudgeServer) -> None:
    criterion = _trajectory_criterion(num_samples=1)
    routes = {marker: replies[:1] for marker, replies in _trajectory_routes().items()}
    _, router = run_assay(standin, TRAJECTORY, TRAJ, criterion, routes)
    (prompt,) = [p for p in router.prompts if "Paris to Rome" in p]
    for seen in (
        "[turn 1] user: Find me a flight from Paris to Rome on May 3.",
        '[turn 1] tool call: search_flights({"date": "2026-05-03"',
        '[turn 2] tool result from book_flight: {"confirmation": "QX7Z"}',
        "[turn 2] agent message (booker): Booking now.",
        "[turn 3] agent: Boarding starts 40 minutes before departure",
        "Always confirm the booking details with the user before paying.",
        f"[id: no_invented] {INVENTED}",
        f"[id: boarding_time] [type: TRAJECTORY_QUALITY] {BOARDING}",
    ):
        assert seen in prompt
    # Rubrics of another type are not this metric's.
    assert "A final-response rubric" not in prompt


# -- the judged metrics ADK judges locally, per invocation ------------------------------

# The user message of every invocation of the fixture, by case.
USER = {
    "booking": [
        "Find me a flight from Paris to Rome on May 3.",
        "Yes, book it.",
        "Thanks! What time do I board?",
    ],
    "single_turn": ["Cancel booking QX7Z."],
    "criterion_rubrics_only": ["Any flights to Oslo tomorrow?", "What about the day after?"],
}


def _valid(label: str, bracketed: bool = False) -> str:
    # ADK's prompt asks for `"is_the_agent_response_valid": [valid or invalid]`.
    value = f"[{label}]," if bracketed else f'"{label}"'
    return f'{{\n  "reasoning": "compared",\n  "is_the_agent_response_valid": {value}\n}}'


def test_final_response_match_v2_matches_adk(standin: JudgeServer) -> None:
    name = "final_response_match_v2"
    criterion = {
        "threshold": 0.6,
        "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": 3},
    }
    garbage = "The response looks fine to me."
    votes = [
        [_valid("valid"), _valid("valid"), _valid("invalid")],  # valid
        [_valid("invalid"), _valid("invalid", bracketed=True), _valid("valid")],  # invalid
        [_valid("valid"), garbage, _valid("invalid")],  # tie: invalid
        [_valid("valid")] * 3,
        [garbage] * 3,  # no verdict: NOT_EVALUATED
        [_valid("invalid"), _valid("valid"), _valid("true")],  # valid
    ]
    users = [u for case in USER.values() for u in case]
    routes = dict(zip(users, votes, strict=True))
    adk, _ = run_adk(TRAJECTORY, name, criterion, routes)
    ours, _ = run_assay(standin, TRAJECTORY, name, criterion, routes)
    assert_same(name, adk, ours)
    scores = {c.case_id: c.metrics[name].score for c in ours.cases}
    assert scores == pytest.approx(
        {"booking": 1 / 3, "single_turn": 1.0, "criterion_rubrics_only": 1.0}
    )


CONCISE = "The final response is concise."
ANSWERS = "The final response answers the user's question."
FINAL_ONLY = "A final-response rubric this metric must not use."


def _rubric_criterion(*rubrics: tuple[str, str]) -> dict[str, Any]:
    return {
        "threshold": 0.7,
        "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": 3},
        "rubrics": [
            {"rubric_id": rid, "rubric_content": {"text_property": text}} for rid, text in rubrics
        ],
    }


def test_rubric_based_final_response_quality_matches_adk(standin: JudgeServer) -> None:
    name = "rubric_based_final_response_quality_v1"
    criterion = _rubric_criterion(("concise", CONCISE), ("answers", ANSWERS))

    def three(*per_sample: tuple[str, str]) -> list[str]:
        # per_sample: (concise verdict, answers verdict) of each of 3 samples
        return [_sample(("concise", CONCISE, c), ("answers", ANSWERS, a)) for c, a in per_sample]

    routes = {
        USER["booking"][0]: three(("yes", "yes"), ("yes", "no"), ("no", "no")),
        USER["booking"][1]: three(("yes", "yes"), ("yes", "yes"), ("yes", "yes")),
        # The last invocation also has the case's FINAL_RESPONSE_QUALITY rubric.
        USER["booking"][2]: [
            _sample(("concise", CONCISE, "no"), ("answers", ANSWERS, "yes"),
                    ("final_only", FINAL_ONLY, "no")),
            _sample(("concise", CONCISE, "no"), ("answers", ANSWERS, "yes"),
                    ("final_only", FINAL_ONLY, "yes")),
            "no verdicts here",
        ],
        USER["single_turn"][0]: three(("yes", "yes"), ("no", "yes"), ("yes", "no")),
        USER["criterion_rubrics_only"][0]: three(("no", "no"), ("no", "no"), ("yes", "no")),
        USER["criterion_rubrics_only"][1]: three(("yes", "yes"), ("yes", "no"), ("yes", "yes")),
    }  # fmt: skip
    adk, _ = run_adk(TRAJECTORY, name, criterion, routes)
    ours, _ = run_assay(standin, TRAJECTORY, name, criterion, routes)
    assert_same(name, adk, ours)
    booking = next(c for c in ours.cases if c.case_id == "booking")
    # The last: concise no, answers yes, final_only tied 1-1 (a tie is no).
    assert [s.value for s in booking.metrics[name].per_invocation] == pytest.approx(
        [0.5, 1.0, 1 / 3]
    )


def test_rubric_based_tool_use_quality_matches_adk(standin: JudgeServer) -> None:
    name = "rubric_based_tool_use_quality_v1"
    right = "The agent called the tool the request needed."
    args = "The tool arguments come from the user's words."
    criterion = _rubric_criterion(("right_tool", right), ("args_from_user", args))

    def votes(*per_sample: tuple[str, str]) -> list[str]:
        return [
            _sample(("right_tool", right, r), ("args_from_user", args, a)) for r, a in per_sample
        ]

    routes = {
        USER["booking"][0]: votes(("yes", "yes"), ("yes", "yes"), ("yes", "no")),
        USER["booking"][1]: votes(("yes", "no"), ("no", "no"), ("yes", "no")),
        USER["booking"][2]: votes(("yes", "yes"), ("yes", "yes"), ("yes", "yes")),
        USER["single_turn"][0]: votes(("yes", "yes"), ("yes", "yes"), ("no", "no")),
        USER["criterion_rubrics_only"][0]: votes(("no", "yes"), ("no", "yes"), ("no", "no")),
        USER["criterion_rubrics_only"][1]: votes(("no", "no"), ("no", "no"), ("no", "no")),
    }
    adk, _ = run_adk(TRAJECTORY, name, criterion, routes)
    ours, _ = run_assay(standin, TRAJECTORY, name, criterion, routes)
    assert_same(name, adk, ours)
    statuses = {c.case_id: c.metrics[name].status for c in ours.cases}
    # booking pools 5 of 6 rubric verdicts met (0.83), the Oslo case 1 of 4 (0.25).
    assert [s.value if s else None for s in statuses.values()] == ["PASSED", "PASSED", "FAILED"]


# ADK's and assay's hallucinations prompts, told apart by their instructions.
SEGMENTER = {"adk": "segment the provided response", "assay": "split a text into sentences"}
VALIDATOR = {"adk": "classify each sentence", "assay": "check whether each sentence"}
LABELLED = {
    "AZ317 leaves at 09:10. Shall I book it?": [
        ("AZ317 leaves at 09:10.", "supported"),
        ("Shall I book it?", "not_applicable"),
    ],
    "Booked: AZ317, confirmation QX7Z.": [("Booked: AZ317, confirmation QX7Z.", "supported")],
    "Boarding starts 40 minutes before departure, at 08:30.": [
        ("Boarding starts 40 minutes before departure, at 08:30.", "unsupported")
    ],
    "Booking QX7Z is cancelled.": [("Booking QX7Z is cancelled.", "supported")],
    "There are no flights to Oslo tomorrow.": [
        ("There are no flights to Oslo tomorrow.", "supported")
    ],
    "I did not find any either.": [("I did not find any either.", "contradictory")],
}


def _hallucination_routes(tool: str) -> dict[Any, list[str]]:
    routes: dict[Any, list[str]] = {}
    for labelled in LABELLED.values():
        first = labelled[0][0]
        segments = "\n".join(f"<sentence>{s}</sentence>" for s, _ in labelled)
        blocks = "\n".join(
            f"sentence: {s}\nlabel: {label}\nrationale: checked\n"
            "supporting_excerpt: null\ncontradicting_excerpt: null"
            for s, label in labelled
        )
        routes[(SEGMENTER[tool], first)] = [segments]
        routes[(VALIDATOR[tool], first)] = [blocks]
    return routes


def test_hallucinations_v1_matches_adk(standin: JudgeServer) -> None:
    name = "hallucinations_v1"
    # ADK makes one segmenter and one validator call per response (num_samples unused);
    # assay's default is the same.
    criterion = {"threshold": 0.7, "judge_model_options": {"judge_model": JUDGE_MODEL}}
    adk, adk_router = run_adk(TRAJECTORY, name, criterion, _hallucination_routes("adk"))
    ours, our_router = run_assay(
        standin, TRAJECTORY, name, criterion, _hallucination_routes("assay")
    )
    assert_same(name, adk, ours)
    assert len(adk_router.prompts) == len(our_router.prompts) == 2 * len(LABELLED)
    scores = {c.case_id: c.metrics[name].score for c in ours.cases}
    assert scores == pytest.approx(
        {"booking": 2 / 3, "single_turn": 1.0, "criterion_rubrics_only": 0.5}
    )


def _is_valid(value: str) -> str:
    # ADK's prompt asks for `"is_valid": True or False` (Python spelling, not JSON).
    return f'{{\n  "reasoning": "compared with the plan",\n  "is_valid": {value}\n}}'


def test_per_turn_user_simulator_quality_matches_adk(standin: JudgeServer) -> None:
    name = "per_turn_user_simulator_quality_v1"
    criterion = {
        "threshold": 0.6,
        "judge_model_options": {"judge_model": JUDGE_MODEL, "num_samples": 3},
    }
    scenarios = {
        "booking": (USER["booking"][0], "Book the AZ317 flight, ask when boarding is, end."),
        "single_turn": ("Cancel my booking.", "Cancel booking QX7Z, then end."),
        "criterion_rubrics_only": (USER["criterion_rubrics_only"][0], "Ask about Oslo flights."),
    }
    stop = "</finished>"
    yes, no, garbage = _is_valid("True"), _is_valid("False"), "I am not sure."
    routes: dict[Marker, list[str]] = {
        USER["booking"][1]: [yes, yes, no],
        USER["booking"][2]: [no, no, yes],
        (USER["booking"][0], stop): [yes, yes, yes],  # the end: fine
        (USER["single_turn"][0], stop): [no, no, yes],  # should not have ended: last fails
        USER["criterion_rubrics_only"][1]: [yes, garbage, _is_valid('"valid"')],
        (USER["criterion_rubrics_only"][0], stop): [garbage] * 3,  # no verdict on the end
    }
    adk, adk_router = run_adk(TRAJECTORY, name, criterion, routes, scenarios)
    ours, our_router = run_assay(standin, TRAJECTORY, name, criterion, routes, scenarios)
    assert_same(name, adk, ours)
    assert len(adk_router.prompts) == len(our_router.prompts) == 18
    scores = {c.case_id: c.metrics[name].score for c in ours.cases}
    assert scores == pytest.approx(
        {"booking": 2 / 3, "single_turn": 0.0, "criterion_rubrics_only": 1.0}
    )
