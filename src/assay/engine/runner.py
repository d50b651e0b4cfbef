"""The run pipeline: infer (drive the agent, or read recorded turns) → score → aggregate."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from assay.agents.base import Agent
from assay.engine.aggregate import build_result
from assay.engine.judging import JudgeRunOptions, judge_summary, run_judges
from assay.metrics.base import Metric
from assay.model.core import EvalCase, EvalSet, Turn
from assay.model.results import (
    CaseResult,
    EvalResult,
    InvocationResult,
    MetricResult,
    Score,
    Status,
    combine_statuses,
)

if TYPE_CHECKING:
    from assay.judges.client import JudgePool

RUNTIME_FAILURE = "RUNTIME_FAILURE"
METRIC_CALCULATION_FAILURE = "METRIC_CALCULATION_FAILURE"
NOT_SUPPORTED = "NOT_SUPPORTED"

NO_RESPONSE_REASON = "no agent given and the case has no recorded response"


@dataclass
class RunOptions:
    """How to run: repeated runs, cases at once, and a per-case timeout for agent runs."""

    runs: int = 1
    concurrency: int = 4
    timeout_s: float | None = 300.0

    def __post_init__(self) -> None:
        from assay.errors import ConfigError

        if self.runs < 1:
            raise ConfigError(f"runs must be at least 1, got {self.runs}")
        if self.concurrency < 1:
            raise ConfigError(f"concurrency must be at least 1, got {self.concurrency}")
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise ConfigError(f"timeout must be positive, got {self.timeout_s}")


class RunObserver(Protocol):
    def on_start(self, total: int) -> None: ...
    def on_case_done(self, result: CaseResult) -> None: ...
    def on_finish(self, result: EvalResult) -> None: ...


@dataclass(slots=True)
class _Job:
    evalset_id: str
    case: EvalCase
    run_index: int


@dataclass(slots=True)
class _Inference:
    turns: list[Turn] | None
    latency_s: float | None = None
    error: str | None = None
    error_type: str | None = None


def _no_score_results(metrics: Sequence[Metric], reason: str) -> dict[str, MetricResult]:
    return {m.name: m.make_result(None, [], explanation=reason) for m in metrics}


def score_case(
    case: EvalCase,
    actual: Sequence[Turn],
    metrics: Sequence[Metric],
    *,
    eval_set_id: str | None = None,
    run_index: int = 0,
) -> CaseResult:
    """Score already-inferred turns of one case with every (synchronous) metric."""
    return _finish_case(
        case,
        actual,
        metrics,
        _score_all(metrics, case, actual),
        eval_set_id=eval_set_id,
        run_index=run_index,
    )


def _aligned_expected(case: EvalCase, actual: Sequence[Turn]) -> list[Turn | None]:
    ref = case.reference or []
    return [ref[i] if i < len(ref) else None for i in range(len(actual))]


def _score_all(
    metrics: Sequence[Metric], case: EvalCase, actual: Sequence[Turn]
) -> list[MetricResult]:
    expected = _aligned_expected(case, actual)
    return [_safe_score(m, case, actual, expected) for m in metrics]


def _safe_score(
    metric: Metric, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
) -> MetricResult:
    try:
        return metric.score_case(case, actual, expected)
    except Exception as exc:  # a broken metric must not lose the other metrics' scores
        return metric.make_result(
            None, [], explanation=f"{METRIC_CALCULATION_FAILURE}: {type(exc).__name__}: {exc}"
        )


async def _safe_ascore(
    metric: Metric, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
) -> MetricResult:
    try:
        return await metric.ascore_case(case, actual, expected)
    except Exception as exc:
        return metric.make_result(
            None, [], explanation=f"{METRIC_CALCULATION_FAILURE}: {type(exc).__name__}: {exc}"
        )


def _finish_case(
    case: EvalCase,
    actual: Sequence[Turn],
    metrics: Sequence[Metric],
    results: Sequence[MetricResult],
    *,
    eval_set_id: str | None,
    run_index: int,
    inference: _Inference | None = None,
) -> CaseResult:
    by_name = {m.name: r for m, r in zip(metrics, results, strict=True)}
    expected = _aligned_expected(case, actual)  # cheap; keeps the signature simple
    invocations = []
    for i, turn in enumerate(actual):
        scores: dict[str, Score] = {}
        for name, mr in by_name.items():
            if len(mr.per_invocation) == len(actual):
                scores[name] = mr.per_invocation[i]
        invocations.append(
            InvocationResult(
                index=i,
                invocation_id=turn.id or (expected[i].id if expected[i] else None),  # type: ignore[union-attr]
                actual=turn,
                expected=expected[i],
                scores=scores,
            )
        )
    statuses = [r.status for r in results if r.status is not None]
    error_type = inference.error_type if inference else None
    if error_type is None and any(
        (r.explanation or "").startswith(METRIC_CALCULATION_FAILURE) for r in results
    ):
        error_type = METRIC_CALCULATION_FAILURE
    status = combine_statuses(statuses)
    failure = bool(inference and inference.error_type == RUNTIME_FAILURE)
    if failure:
        # The agent under test crashed or timed out: that is a failure of the case.
        status = Status.FAILED
    return CaseResult(
        case_id=case.id,
        status=status,
        metrics=by_name,
        invocations=invocations,
        run_index=run_index,
        latency_s=inference.latency_s if inference else None,
        failure=failure,
        error=inference.error if inference else None,
        error_type=error_type,
        eval_set_id=eval_set_id,
    )


async def _infer(agent: Agent, case: EvalCase, timeout_s: float | None) -> _Inference:
    turns: list[Turn] = []
    started = time.perf_counter()

    async def drive() -> None:
        session = await agent.start_session(case)
        try:
            for ref in case.user_turns():
                t0 = time.perf_counter()
                turn = await session.send(ref.user_input)
                elapsed = time.perf_counter() - t0
                updates: dict[str, Any] = {}
                if turn.latency_s is None:
                    updates["latency_s"] = elapsed
                if turn.id is None and ref.id is not None:
                    updates["id"] = ref.id
                turns.append(turn.model_copy(update=updates) if updates else turn)
        finally:
            await session.close()

    try:
        await asyncio.wait_for(drive(), timeout_s)
    except TimeoutError:
        return _Inference(
            turns,
            time.perf_counter() - started,
            f"agent timed out after {timeout_s:g}s (completed {len(turns)} turn(s))",
            RUNTIME_FAILURE,
        )
    except Exception as exc:  # the agent under test may raise anything; keep the others going
        return _Inference(
            turns,
            time.perf_counter() - started,
            f"agent raised {type(exc).__name__}: {exc}",
            RUNTIME_FAILURE,
        )
    return _Inference(turns, time.perf_counter() - started)


async def _evaluate_job(
    job: _Job, metrics: Sequence[Metric], agent: Agent | None, options: RunOptions
) -> CaseResult:
    case = job.case
    inference: _Inference | None = None
    if case.scenario is not None and case.reference is None and case.actual is None:
        reason = (
            "scenario cases need a simulated user; this version of assay replays golden "
            "and recorded conversations only"
        )
        inference = _Inference(None, error=reason, error_type=NOT_SUPPORTED)
    elif agent is not None and case.user_turns():
        inference = await _infer(agent, case, options.timeout_s)
    elif case.actual is None:
        inference = _Inference(
            None,
            error=NO_RESPONSE_REASON
            if agent is None
            else "the case has no user inputs to send to the agent",
        )
    turns = inference.turns if inference is not None else case.actual
    if turns is None or (inference is not None and inference.error_type == RUNTIME_FAILURE):
        reason = (inference.error if inference else None) or NO_RESPONSE_REASON
        results = list(_no_score_results(metrics, reason).values())
        return _finish_case(
            case,
            turns or [],
            metrics,
            results,
            eval_set_id=job.evalset_id,
            run_index=job.run_index,
            inference=inference,
        )
    expected = _aligned_expected(case, turns)
    slots: list[MetricResult | None] = [
        None if m.is_async else _safe_score(m, case, turns, expected) for m in metrics
    ]
    pending = [i for i, m in enumerate(metrics) if m.is_async]
    if pending:
        # Judged metrics of one case wait on judge calls: let them wait together.
        scored = await asyncio.gather(
            *(_safe_ascore(metrics[i], case, turns, expected) for i in pending)
        )
        for i, one in zip(pending, scored, strict=True):
            slots[i] = one
    return _finish_case(
        case,
        turns,
        metrics,
        [r for r in slots if r is not None],
        eval_set_id=job.evalset_id,
        run_index=job.run_index,
        inference=inference,
    )


def _jobs(
    evalsets: Sequence[EvalSet], runs: int, skip: set[tuple[str, str, int]]
) -> Iterator[_Job]:
    for run_index in range(runs):
        for evalset in evalsets:
            for case in evalset.cases:
                if (evalset.id, case.id, run_index) not in skip:
                    yield _Job(evalset.id, case, run_index)


def _check_unique_sets(evalsets: Sequence[EvalSet]) -> None:
    from assay.errors import InputError

    seen: set[str] = set()
    for evalset in evalsets:
        if evalset.id in seen:
            raise InputError(
                f"two eval sets share the id {evalset.id!r}; give each file a distinct eval set id"
            )
        seen.add(evalset.id)


async def arun(
    evalsets: Sequence[EvalSet],
    metrics: Sequence[Metric],
    *,
    agent: Agent | None = None,
    options: RunOptions | None = None,
    observers: Sequence[RunObserver] = (),
    skip: set[tuple[str, str, int]] | None = None,
    judges: JudgeRunOptions | JudgePool | None = None,
) -> EvalResult:
    """Evaluate every case of every eval set `options.runs` times.

    Cases run concurrently up to `options.concurrency`; each finished case is handed to
    the observers at once (store writers, progress bars). One failing case, agent or
    metric never loses the other cases' results. `skip` holds (eval_set_id, case_id,
    run_index) keys already completed (resume). `judges` sets up the LLM judges of the
    judged metrics (default model, concurrency, cache); the summary gets their
    `judge/...` counters.
    """
    options = options or RunOptions()
    _check_unique_sets(evalsets)
    async with run_judges(metrics, judges) as pool:
        started = pool.stats.snapshot() if pool is not None else None
        workers = options.concurrency
        if pool is not None and agent is None:
            # Scoring recorded data waits only on the judges, whose own adaptive limit
            # bounds the calls in flight: keep enough cases going to fill it.
            workers = max(workers, 2 * pool.concurrency)
        result = await _run_jobs(evalsets, metrics, agent, options, observers, skip, workers)
        if pool is not None:
            await pool.flush()
            result.summary.update(judge_summary(pool, started))
    for observer in observers:
        observer.on_finish(result)
    return result


async def _run_jobs(
    evalsets: Sequence[EvalSet],
    metrics: Sequence[Metric],
    agent: Agent | None,
    options: RunOptions,
    observers: Sequence[RunObserver],
    skip: set[tuple[str, str, int]] | None,
    workers: int,
) -> EvalResult:
    jobs = list(_jobs(evalsets, options.runs, skip or set()))
    for observer in observers:
        observer.on_start(len(jobs))
    results: list[CaseResult | None] = [None] * len(jobs)

    def done(i: int, result: CaseResult) -> None:
        results[i] = result
        for observer in observers:
            observer.on_case_done(result)

    needs_loop = agent is not None or any(m.is_async for m in metrics)
    if not needs_loop:
        # Recorded data and synchronous metrics: no tasks, no awaits on the hot path.
        for i, job in enumerate(jobs):
            done(i, _score_recorded(job, metrics))
    else:
        queue = iter(enumerate(jobs))

        async def worker() -> None:
            for i, job in queue:
                done(i, await _evaluate_job(job, metrics, agent, options))

        await asyncio.gather(*(worker() for _ in range(min(workers, len(jobs)) or 1)))
    final = [r for r in results if r is not None]
    result = build_result(
        final,
        metrics,
        agent_run=agent is not None,
        runs=options.runs,
        eval_set_id=evalsets[0].id if len(evalsets) == 1 else None,
    )
    return result


def _score_recorded(job: _Job, metrics: Sequence[Metric]) -> CaseResult:
    case = job.case
    if case.actual is None:
        reason = (
            "scenario cases need an agent and a simulated user"
            if case.scenario is not None
            else NO_RESPONSE_REASON
        )
        return _finish_case(
            case,
            [],
            metrics,
            list(_no_score_results(metrics, reason).values()),
            eval_set_id=job.evalset_id,
            run_index=job.run_index,
        )
    return score_case(
        case, case.actual, metrics, eval_set_id=job.evalset_id, run_index=job.run_index
    )


def run(
    evalsets: Sequence[EvalSet],
    metrics: Sequence[Metric],
    *,
    agent: Agent | None = None,
    options: RunOptions | None = None,
    observers: Sequence[RunObserver] = (),
    skip: set[tuple[str, str, int]] | None = None,
    judges: JudgeRunOptions | None = None,
) -> EvalResult:
    """Synchronous wrapper of `arun` (not for use inside a running event loop)."""
    return asyncio.run(
        arun(
            evalsets,
            metrics,
            agent=agent,
            options=options,
            observers=observers,
            skip=skip,
            judges=judges,
        )
    )
