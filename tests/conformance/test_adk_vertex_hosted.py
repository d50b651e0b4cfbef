"""The metrics ADK hands to Vertex's hosted service: assay's numbers and statuses equal
what google-adk reports from the same verdicts.

ADK's own evaluators (from its metric registry) run with Vertex's `evals.evaluate`
answered by a stand-in that returns the scripted verdicts the way Vertex shapes them
(`summary_metrics[0].mean_score`, `rubric_verdicts`); assay runs the same eval set with
its judge (the stand-in judge server on loopback) writing the same checklist and giving
the same verdicts. Compared: overall score and status, every invocation's score and
status, per-rubric scores, and that everything ADK sends Vertex about the conversation
(each message, tool call and tool result, the instructions) reaches assay's judge.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.adk.evaluation import vertex_ai_eval_facade as facade
from google.adk.evaluation.eval_metrics import BaseCriterion, EvalMetric
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.evaluator import EvaluationResult
from google.adk.evaluation.metric_evaluator_registry import DEFAULT_METRIC_EVALUATOR_REGISTRY
from judge_parity import assert_same_scores

from assay import evaluate, formats
from assay.core.results import EvalResult
from assay.testing.judge_server import JudgeServer, StandinRequest

DATA = Path(__file__).resolve().parents[1] / "data" / "parity"
EVALSET = DATA / "multi_turn_trajectory.evalset.json"
MODEL = "openai:assay-parity-judge"
MULTI_TURN = (
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
)

# Per case (routed by its first user message): the checks and their verdicts.
Verdicts = list[tuple[str, str, bool]]
CHECKS: dict[str, Verdicts] = {
    "Find me a flight from Paris to Rome": [
        ("searched_route", "The agent searched Paris to Rome flights for May 3.", True),
        ("booked_az317", "The agent booked flight AZ317 after the user agreed.", True),
        ("boarding_time", "The boarding time follows from the departure time.", False),
    ],
    "Cancel booking QX7Z.": [("cancelled", "The agent cancelled booking QX7Z.", True)],
    "Any flights to Oslo tomorrow?": [
        ("searched_oslo", "The agent searched flights to Oslo for tomorrow.", True),
        ("searched_day_after", "The agent searched again for the day after.", False),
    ],
}
RATINGS = {
    "AZ317 leaves at 09:10. Shall I book it?": 5,
    "Booked: AZ317, confirmation QX7Z.": 4,
    "Boarding starts 40 minutes before departure, at 08:30.": 3,
    "Booking QX7Z is cancelled.": 5,
    "There are no flights to Oslo tomorrow.": 4,
    "I did not find any either.": 2,
}


def _route(text: str) -> Verdicts:
    return next(v for marker, v in CHECKS.items() if marker in text)


class _VertexStandin:
    """Vertex's `evals.evaluate`, answering from the scripted verdicts and ratings."""

    def __init__(self) -> None:
        self.datasets: list[Any] = []

    def answer(self, dataset: Any) -> Any:
        self.datasets.append(dataset)
        if dataset.eval_cases:  # multi-turn: one case of agent data
            turns = dataset.eval_cases[0].agent_data.turns
            verdicts = _route(json.dumps([t.model_dump(mode="json") for t in turns]))
            mean = sum(ok for *_, ok in verdicts) / len(verdicts)
            rubric_verdicts = [
                SimpleNamespace(
                    evaluated_rubric=SimpleNamespace(
                        rubric_id=rid,
                        content=SimpleNamespace(property=SimpleNamespace(description=text)),
                    ),
                    reasoning=f"checked {rid}",
                    verdict=ok,
                )
                for rid, text, ok in verdicts
            ]
            result = SimpleNamespace(
                rubric_verdicts=rubric_verdicts, explanation=None, error_message=None
            )
        else:  # single turn: one row of prompt / reference / response
            mean = RATINGS[dataset.eval_dataset_df.iloc[0]["response"]]
            result = SimpleNamespace(rubric_verdicts=[], explanation=None, error_message=None)
        candidate = SimpleNamespace(metric_results={"m": result})
        return SimpleNamespace(
            summary_metrics=[SimpleNamespace(mean_score=float(mean))],
            eval_case_results=[SimpleNamespace(response_candidate_results=[candidate])],
        )


def _judge(request: StandinRequest) -> str:
    """assay's judge: the same checklist, the same verdicts, the same ratings."""
    prompt = request.prompt
    if "You rate how coherent" in prompt:
        rating = next(r for text, r in RATINGS.items() if f"<agent_reply>\n{text}" in prompt)
        return json.dumps({"explanation": "rated", "score": rating})
    verdicts = _route(prompt)
    if "You prepare the checklist" in prompt:
        return json.dumps({"rubrics": [{"id": rid, "property": t} for rid, t, _ in verdicts]})
    entries = [
        {"id": rid, "rationale": f"checked {rid}", "verdict": "yes" if ok else "no",
         "turn": None if ok else 1}
        for rid, _, ok in verdicts
    ]  # fmt: skip
    return json.dumps({"rubrics": entries})


@pytest.fixture
def vertex(monkeypatch: pytest.MonkeyPatch) -> _VertexStandin:
    standin = _VertexStandin()
    monkeypatch.setenv("GOOGLE_API_KEY", "stand-in")  # ADK builds its client from it
    monkeypatch.setattr(
        facade._VertexAiEvalFacade,
        "_perform_eval",
        lambda _self, dataset, metrics: standin.answer(dataset),
    )
    return standin


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[JudgeServer]:
    with JudgeServer(_judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "stand-in")
        yield server


def _adk(name: str, threshold: float) -> dict[str, EvaluationResult]:
    metric = EvalMetric(metric_name=name, criterion=BaseCriterion(threshold=threshold))
    results: dict[str, EvaluationResult] = {}
    for case in AdkEvalSet.model_validate_json(EVALSET.read_text()).eval_cases:
        conversation = list(case.conversation or [])
        evaluator = DEFAULT_METRIC_EVALUATOR_REGISTRY.get_evaluator(metric)
        outcome = evaluator.evaluate_invocations(conversation, conversation)
        if asyncio.iscoroutine(outcome):
            outcome = asyncio.run(outcome)
        results[case.eval_id] = outcome
    return results


def _assay(name: str, criterion: Mapping[str, Any]) -> EvalResult:
    loaded = formats.load(EVALSET)
    recorded = loaded.model_copy(
        update={"cases": [c.model_copy(update={"actual": c.reference}) for c in loaded.cases]}
    )
    return evaluate(recorded, metrics={name: dict(criterion)}, judge=MODEL, use_cache=False)


@pytest.mark.parametrize("name", MULTI_TURN)
def test_multi_turn_hosted_metrics_match_adk(
    name: str, vertex: _VertexStandin, judge: JudgeServer
) -> None:
    adk = _adk(name, 0.6)
    ours = _assay(name, {"threshold": 0.6})
    assert judge.errors == []
    assert_same_scores(name, adk, ours)
    scores = {c.case_id: c.metrics[name].score for c in ours.cases}
    assert scores == pytest.approx(
        {"booking": 2 / 3, "single_turn": 1.0, "criterion_rubrics_only": 0.5}
    )
    for case in ours.cases:
        got = {r["property"]: r["score"] for r in case.metrics[name].details["rubrics"]}
        (rubrics,) = [adk[case.case_id].overall_rubric_scores]
        assert got == {r.rubric_id: r.score for r in rubrics or []}, case.case_id
    booking = next(c for c in ours.cases if c.case_id == "booking")
    assert booking.metrics[name].details["violations"] == {"boarding_time": 1}
    # One checklist call and one verdict call per case (num_samples defaults to 1).
    assert len(judge.requests) == 2 * len(ours.cases)


def test_assay_judge_sees_what_adk_sends_vertex(vertex: _VertexStandin, judge: JudgeServer) -> None:
    _adk("multi_turn_tool_use_quality_v1", 0.5)
    _assay("multi_turn_tool_use_quality_v1", {"threshold": 0.5})
    (sent,) = [d for d in vertex.datasets if "Paris to Rome" in str(d.eval_cases[0].agent_data)]
    data = sent.eval_cases[0].agent_data
    (prompt,) = [
        r.prompt
        for r in judge.requests
        if "Paris to Rome" in r.prompt and "You prepare the checklist" in r.prompt
    ]
    for agent in data.agents.values():
        assert agent.instruction in prompt
    for index, turn in enumerate(data.turns, 1):
        for event in turn.events:
            for part in event.content.parts:
                if part.text:
                    assert part.text in prompt
                if part.function_call:
                    args = json.dumps(part.function_call.args, sort_keys=True)
                    assert f"[turn {index}] tool call: {part.function_call.name}({args})" in prompt
                if part.function_response:
                    body = json.dumps(part.function_response.response, sort_keys=True)
                    line = f"[turn {index}] tool result from {part.function_response.name}: {body}"
                    assert line in prompt


def test_response_evaluation_score_matches_adk(vertex: _VertexStandin, judge: JudgeServer) -> None:
    name = "response_evaluation_score"
    adk = _adk(name, 4.0)
    ours = _assay(name, {"threshold": 4.0})
    assert_same_scores(name, adk, ours)
    scores = {c.case_id: c.metrics[name].score for c in ours.cases}
    assert scores == pytest.approx(
        {"booking": 4.0, "single_turn": 5.0, "criterion_rubrics_only": 3.0}
    )
    assert [c.metrics[name].status.value for c in ours.cases if c.metrics[name].status] == [
        "PASSED",
        "PASSED",
        "FAILED",
    ]
