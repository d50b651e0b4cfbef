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
from google.adk.evaluation.eval_metrics import BaseCriterion, EvalMetric
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.evaluator import EvaluationResult
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY
from judge_parity import JUDGE_MODEL, Router, ScriptedLlm, rubric_block

from assay import evaluate, formats
from assay.model.results import CaseResult, EvalResult
from assay.report.json_report import case_to_adk
from assay.testing.judge_server import JudgeServer

DATA = Path(__file__).resolve().parents[1] / "data" / "parity"
TRAJECTORY = DATA / "multi_turn_trajectory.evalset.json"


@pytest.fixture
def standin(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    with JudgeServer("unused") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "stand-in")
        yield server


def run_adk(
    path: Path, name: str, criterion: Mapping[str, Any], routes: Mapping[str, Sequence[str]]
) -> tuple[dict[str, EvaluationResult], Router]:
    """ADK's registered evaluator on every case of `path` (conversation = actual)."""
    adk_set = AdkEvalSet.model_validate_json(path.read_text())
    router = Router(routes)
    ScriptedLlm.router = router
    metric = EvalMetric(metric_name=name, criterion=BaseCriterion.model_validate(criterion))
    results: dict[str, EvaluationResult] = {}
    for case in adk_set.eval_cases:
        evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric)
        conversation = list(case.conversation or [])
        outcome = evaluator.evaluate_invocations(conversation, conversation)
        if asyncio.iscoroutine(outcome):
            outcome = asyncio.run(outcome)
        results[case.eval_id] = outcome
    return results, router


def run_assay(
    server: JudgeServer,
    path: Path,
    name: str,
    criterion: Mapping[str, Any],
    routes: Mapping[str, Sequence[str]],
) -> tuple[EvalResult, Router]:
    router = Router(routes)
    server.set_script(router.standin)
    # The conversations are the recorded agent turns, as ADK is given them above.
    loaded = formats.load(path)
    recorded = loaded.model_copy(
        update={"cases": [c.model_copy(update={"actual": c.reference}) for c in loaded.cases]}
    )
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
    cases: dict[str, CaseResult] = {c.case_id: c for c in ours.cases}
    assert set(cases) == set(adk)
    for case_id, expected in adk.items():
        doc = case_to_adk(cases[case_id])
        (overall,) = [m for m in doc["overall_eval_metric_results"] if m["metric_name"] == name]
        assert overall["score"] == pytest.approx(expected.overall_score), case_id
        assert overall["eval_status"] == expected.overall_eval_status.value, case_id
        per = [
            next(r for r in inv["eval_metric_results"] if r["metric_name"] == name)
            for inv in doc["eval_metric_result_per_invocation"]
        ]
        want = expected.per_invocation_results
        assert [p["score"] for p in per] == pytest.approx([w.score for w in want]), case_id
        assert [p["eval_status"] for p in per] == [w.eval_status.value for w in want], case_id
        if expected.overall_rubric_scores:
            got = cases[case_id].metrics[name].details["rubric_scores"]
            assert got == {r.rubric_id: r.score for r in expected.overall_rubric_scores}, case_id


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
        f"[id: boarding_time] {BOARDING}",
    ):
        assert seen in prompt
    # Rubrics of another type are not this metric's.
    assert "A final-response rubric" not in prompt
