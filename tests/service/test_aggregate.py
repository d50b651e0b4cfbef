"""aggregatedMetrics: sums by app version and turn, kept current as results arrive."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.core.cases import Step, ToolCall, ToolResponse, Turn
from assay.core.results import CaseResult, InvocationResult, MetricResult, Score, Status
from assay.service.aggregate import Aggregator
from assay.store import Store
from assay.store.eval_results import SERVICE_KEY, EvaluationResults


def _turn(latency: float, tool_latency: float) -> Turn:
    return Turn(
        steps=[
            Step(tool_call=ToolCall(name="lookup", args={})),
            Step(tool_response=ToolResponse(name="lookup", response={}, latency_s=tool_latency)),
        ],
        final_response="ok",
        latency_s=latency,
    )


def _case(
    index: int, *, passed: bool, similarity: list[float | None], hallucination: list[float]
) -> CaseResult:
    turns = [_turn(0.1 * (i + 1), 0.01 * (i + 1)) for i in range(len(similarity))]
    tool_calls = [
        Score(
            1.0 if passed else 0.5,
            None,
            {"tool_calls": [{"tool": "lookup", "outcome": "PASS" if passed else "FAIL"}]},
        )
        for _ in turns
    ]
    metrics = {
        "parameter_correctness_score": MetricResult(
            "parameter_correctness_score",
            1.0 if passed else 0.5,
            1.0,
            Status.PASSED if passed else Status.FAILED,
            per_invocation=tool_calls,
        ),
        "semantic_similarity": MetricResult(
            "semantic_similarity",
            None,
            3.0,
            None,
            per_invocation=[Score(v) for v in similarity],
        ),
        "hallucination": MetricResult(
            "hallucination", None, 1.0, None, per_invocation=[Score(v) for v in hallucination]
        ),
    }
    return CaseResult(
        case_id="ev1",
        status=Status.PASSED if passed else Status.FAILED,
        metrics=metrics,
        invocations=[InvocationResult(i, None, t, None) for i, t in enumerate(turns)],
        run_index=index,
        eval_set_id="evaluations",
    )


def _run(store: Store, version: str | None) -> str:
    config: dict[str, Any] = {SERVICE_KEY: {"appVersion": version} if version else {}}
    return store.start_run(
        eval_set_ids=["evaluations"], metrics=[], config=config, agent="a", runs=1, app="shop"
    )


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with Store.open(f"sqlite:///{tmp_path / 'agg.db'}") as opened:
        yield opened


def _aggregator(store: Store, recheck_s: float = 0.0) -> Aggregator:
    return Aggregator(
        EvaluationResults(store.engine, store.url), store.get_run, recheck_s=recheck_s
    )


def test_metrics_by_version_and_turn(store: Store) -> None:
    v1, draft = _run(store, "v1"), _run(store, None)
    store.add_case_results(
        v1,
        [
            _case(0, passed=True, similarity=[4, 2], hallucination=[1, -1]),
            _case(1, passed=False, similarity=[3, None], hallucination=[0, 1]),
        ],
    )
    store.add_case_results(draft, [_case(0, passed=True, similarity=[1], hallucination=[1])])
    rendered = _aggregator(store).metrics("shop", "ev1").render()["metricsByAppVersion"]
    assert [v["appVersionId"] for v in rendered] == ["draft", "v1"]
    v1_metrics = rendered[1]
    assert (v1_metrics["passCount"], v1_metrics["failCount"]) == (1, 1)
    assert v1_metrics["toolMetrics"] == [{"tool": "lookup", "passCount": 2, "failCount": 2}]
    assert v1_metrics["semanticSimilarityMetrics"] == [{"score": 3.0}]  # (4 + 2 + 3) / 3
    # -1 (no claim to assess) is left out: (1 + 0 + 1) / 3
    assert v1_metrics["hallucinationMetrics"] == [{"score": round(2 / 3, 6)}]
    assert v1_metrics["turnLatencyMetrics"] == [{"averageLatency": "0.150s"}]
    assert v1_metrics["toolCallLatencyMetrics"] == [{"tool": "lookup", "averageLatency": "0.015s"}]
    first, second = v1_metrics["metricsByTurn"]
    assert first["turnIndex"] == 0 and first["semanticSimilarityMetrics"] == [{"score": 3.5}]
    assert second["semanticSimilarityMetrics"] == [{"score": 2.0}]
    assert second["turnLatencyMetrics"] == [{"averageLatency": "0.200s"}]


def test_incremental_updates_match_a_recount(store: Store) -> None:
    aggregator = _aggregator(store)
    run = _run(store, "v1")
    assert aggregator.metrics("shop", "ev1").render() == {"metricsByAppVersion": []}
    for index in range(5):
        store.add_case_results(
            run, [_case(index, passed=index % 2 == 0, similarity=[index], hallucination=[1])]
        )
        cached = aggregator.metrics("shop", "ev1")
        assert cached.render() == _aggregator(store).metrics("shop", "ev1").render()
        assert cached.last_completed is not None and cached.last_completed.run_index == index
    versions = aggregator.metrics("shop", "ev1").render()["metricsByAppVersion"]
    assert (versions[0]["passCount"], versions[0]["failCount"]) == (3, 2)


def test_deleting_a_run_triggers_a_recount(store: Store) -> None:
    aggregator = _aggregator(store)
    keep, drop = _run(store, "v1"), _run(store, "v2")
    store.add_case_results(keep, [_case(0, passed=True, similarity=[4], hallucination=[1])])
    store.add_case_results(drop, [_case(0, passed=False, similarity=[0], hallucination=[0])])
    assert len(aggregator.metrics("shop", "ev1").render()["metricsByAppVersion"]) == 2
    store.delete_run(drop)
    (only,) = aggregator.metrics("shop", "ev1").render()["metricsByAppVersion"]
    assert only["appVersionId"] == "v1" and only["passCount"] == 1
    assert aggregator.metrics("other-app", "ev1").render() == {"metricsByAppVersion": []}


def test_error_results_are_not_counted(store: Store) -> None:
    run = _run(store, "v1")
    broken = _case(0, passed=False, similarity=[4], hallucination=[1])
    broken.error, broken.error_type, broken.failure = "agent raised", "RUNTIME_FAILURE", True
    store.add_case_results(run, [broken])
    metrics = _aggregator(store).metrics("shop", "ev1")
    assert metrics.versions == {} and metrics.last_completed is None


def test_cached_entries_are_rechecked_or_told_of_local_writes(store: Store) -> None:
    aggregator = _aggregator(store, recheck_s=3600)
    run = _run(store, "v1")
    store.add_case_results(run, [_case(0, passed=True, similarity=[4], hallucination=[1])])
    assert aggregator.metrics("shop", "ev1").versions["v1"].passed == 1
    store.add_case_results(run, [_case(1, passed=True, similarity=[4], hallucination=[1])])
    # Trusted until rechecked: another process's write is not seen yet...
    assert aggregator.metrics("shop", "ev1").versions["v1"].passed == 1
    # ...but a write this process announces is, at once and incrementally.
    aggregator.touched("shop", ["ev1"])
    metrics = aggregator.metrics("shop", "ev1")
    assert metrics.versions["v1"].passed == 2 and metrics.run_ids == {run}


def test_renders_are_made_once_per_entry_and_follow_new_results(store: Store) -> None:
    """`rendered()` / `last_result()` are kept with a cached entry (requests reuse them)
    and a refresh after new results renders afresh, never the old answer."""
    aggregator = _aggregator(store)
    run = _run(store, "v1")
    store.add_case_results(run, [_case(0, passed=True, similarity=[4], hallucination=[1])])
    first = aggregator.metrics("shop", "ev1")
    assert first.rendered() is first.rendered()
    assert first.rendered() == first.render()
    last = first.last_result("shop", aggregator.run)
    assert last is not None and last is first.last_result("shop", aggregator.run)
    assert last["displayName"].endswith("#1")
    store.add_case_results(run, [_case(1, passed=False, similarity=[1], hallucination=[0])])
    second = aggregator.metrics("shop", "ev1")
    (version,) = second.rendered()["metricsByAppVersion"]
    assert (version["passCount"], version["failCount"]) == (1, 1)
    newest = second.last_result("shop", aggregator.run)
    assert newest is not None and newest["displayName"].endswith("#2")
    # The earlier entry's renders were not changed in place.
    assert first.rendered()["metricsByAppVersion"][0]["failCount"] == 0
    assert last["displayName"].endswith("#1")
