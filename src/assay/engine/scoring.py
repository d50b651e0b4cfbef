"""Scoring one case run: every metric on its turns, isolated, into a `CaseResult`.

A metric that raises leaves its own score empty (METRIC_CALCULATION_FAILURE) and never
the others'. How the turns came about (`Inference`) decides the rest of the result:
an agent crash or timeout (RUNTIME_FAILURE) fails the case; any other error (quota,
simulated user, not supported) keeps the scores of what did happen but never lets the
case pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from assay.core.cases import EvalCase, Turn
from assay.core.error_types import ErrorType
from assay.core.results import (
    CaseResult,
    InvocationResult,
    MetricResult,
    Score,
)
from assay.core.verdict import case_status
from assay.engine.infer import Inference
from assay.metrics.base import Metric
from assay.metrics.case_memo import case_scope, close_scope, open_scope
from assay.models.cost import charged_to
from assay.redact import redact

NO_RESPONSE_REASON = "no agent given and the case has no recorded response"


def no_score_results(metrics: Sequence[Metric], reason: str) -> list[MetricResult]:
    return [m.make_result(None, [], explanation=reason) for m in metrics]


def aligned_expected(case: EvalCase, actual: Sequence[Turn]) -> list[Turn | None]:
    ref = case.reference or []
    return [ref[i] if i < len(ref) else None for i in range(len(actual))]


def _calculation_failure(metric: Metric, exc: Exception) -> MetricResult:
    return metric.make_result(
        None,
        [],
        explanation=redact(f"{ErrorType.METRIC_CALCULATION_FAILURE}: {type(exc).__name__}: {exc}"),
        error_type=ErrorType.METRIC_CALCULATION_FAILURE,
    )


def safe_score(
    metric: Metric, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
) -> MetricResult:
    try:
        return metric.score_case(case, actual, expected)
    except Exception as exc:  # a broken metric must not lose the other metrics' scores
        return _calculation_failure(metric, exc)


async def safe_ascore(
    metric: Metric, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
) -> MetricResult:
    try:
        with charged_to(metric.name):  # its model calls count against this metric
            return await metric.ascore_case(case, actual, expected)
    except Exception as exc:  # as in safe_score: a metric (user code too) may raise anything
        return _calculation_failure(metric, exc)


def score_deterministic(
    case: EvalCase, turns: Sequence[Turn], metrics: Sequence[Metric]
) -> list[MetricResult | None]:
    """The synchronous metrics' results on `turns`, None in the slot of each judged
    (async) one: the part of scoring that can run wherever the turns are."""
    expected = aligned_expected(case, turns)
    with case_scope():  # the trajectory metrics share their call-diff explanations
        return [None if m.is_async else safe_score(m, case, turns, expected) for m in metrics]


async def score_judged(
    case: EvalCase,
    turns: Sequence[Turn],
    metrics: Sequence[Metric],
    slots: Sequence[MetricResult | None],
) -> list[MetricResult]:
    """`slots` (from `score_deterministic`) completed with the judged metrics' results;
    the judged ones of one case wait on their judges together."""
    filled = list(slots)
    pending = [i for i, m in enumerate(metrics) if m.is_async]
    if pending:
        expected = aligned_expected(case, turns)
        scored = await asyncio.gather(
            *(safe_ascore(metrics[i], case, turns, expected) for i in pending)
        )
        for i, one in zip(pending, scored, strict=True):
            filled[i] = one
    return [r for r in filled if r is not None]


async def score_turns(
    case: EvalCase, turns: Sequence[Turn], metrics: Sequence[Metric]
) -> list[MetricResult]:
    """Every metric on `turns`; the judged ones of one case wait on their judges together."""
    return await score_judged(case, turns, metrics, score_deterministic(case, turns, metrics))


def score_case(
    case: EvalCase,
    actual: Sequence[Turn],
    metrics: Sequence[Metric],
    *,
    eval_set_id: str | None = None,
    run_index: int = 0,
) -> CaseResult:
    """Score already-inferred turns of one case with every (synchronous) metric."""
    expected = aligned_expected(case, actual)
    scope = open_scope()  # the trajectory metrics share their call-diff explanations
    try:
        results = [safe_score(m, case, actual, expected) for m in metrics]
    finally:
        close_scope(scope)
    return finish_case(
        case,
        actual,
        metrics,
        results,
        eval_set_id=eval_set_id,
        run_index=run_index,
        expected=expected,
    )


def finish_case(
    case: EvalCase,
    actual: Sequence[Turn],
    metrics: Sequence[Metric],
    results: Sequence[MetricResult],
    *,
    eval_set_id: str | None,
    run_index: int,
    inference: Inference | None = None,
    expected: Sequence[Turn | None] | None = None,
) -> CaseResult:
    """The case result of `results` (one per metric); `expected` is
    `aligned_expected(case, actual)` when the caller has it already."""
    by_name = {m.name: r for m, r in zip(metrics, results, strict=True)}
    if expected is None:
        expected = aligned_expected(case, actual)
    # The metrics with a score per turn (all of them, but for ones that could not score).
    n = len(actual)
    per_turn = [(name, mr.per_invocation) for name, mr in by_name.items()
                if len(mr.per_invocation) == n]  # fmt: skip
    invocations = []
    for i, turn in enumerate(actual):
        scores: dict[str, Score] = {name: per[i] for name, per in per_turn}
        ref = expected[i]
        invocations.append(
            InvocationResult(
                index=i,
                invocation_id=turn.id or (ref.id if ref is not None else None),
                actual=turn,
                expected=ref,
                scores=scores,
            )
        )
    error_type = inference.error_type if inference else None
    if error_type is None:
        # The first metric that could not score names the case's error type.
        for r in results:
            if r.error_type is not None:
                error_type = r.error_type
                break
    return CaseResult(
        case_id=case.id,
        status=case_status([r.status for r in results], error_type),
        metrics=by_name,
        invocations=invocations,
        run_index=run_index,
        latency_s=inference.latency_s if inference else None,
        failure=error_type == ErrorType.RUNTIME_FAILURE,
        error=inference.error if inference else None,
        conversation=inference.conversation if inference else None,
        traceback=inference.traceback if inference else None,
        error_type=error_type,
        eval_set_id=eval_set_id,
    )
