"""The run pipeline: plan the case runs, infer (agent or recorded turns), score, aggregate.

Each case run goes one of four ways:

- a scenario and an agent: a simulated user talks to the agent (`scenario_run`);
- turns to replay (golden or recorded user inputs) and an agent: golden replay with
  the run method and tool behaviour of the options (`replay`);
- recorded turns and no agent: they are scored as they are;
- otherwise: nothing to score, and the case says why.

`RunOptions.runs` None runs every case as often as CES does by default: once per golden
or recorded case, five times per simulated scenario (`runs_for`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Protocol

from assay.agents.base import Agent, app_details_of
from assay.core.cases import EvalCase, EvalSet
from assay.core.results import CaseResult, EvalResult
from assay.engine.aggregate import build_result
from assay.engine.case_run import (
    CaseJob,
    CaseRunContext,
    Inferred,
    RemoteCaseRuns,
    evaluate_case_run,
    finish,
    lost_case_run,
    nothing_recorded,
    simulated,
)
from assay.engine.executors import Executor, LocalExecutor, StagedWork
from assay.engine.judging import (
    JudgeRunOptions,
    judge_summary,
    run_judges,
    run_registry,
    unstable_summary,
)
from assay.engine.options import RunOptions
from assay.engine.replay import RunMethod
from assay.engine.scenario_run import simulates, user_simulator
from assay.engine.scoring import (
    NO_RESPONSE_REASON,
    finish_case,
    no_score_results,
    score_case,
)
from assay.errors import InputError
from assay.metrics.base import Metric
from assay.models.registry import ModelRegistry, registry_in_context

if TYPE_CHECKING:
    from assay.judges.client import JudgePool

SCENARIO_RUNS = 5
"""CES's default run count of a scenario evaluation (goldens run once)."""

__all__ = [
    "NO_RESPONSE_REASON",
    "RunMethod",
    "RunObserver",
    "RunOptions",
    "arun",
    "count_case_runs",
    "run",
    "runs_for",
    "score_case",
    "score_recorded",
]


class RunObserver(Protocol):
    def on_start(self, total: int) -> None: ...

    def on_case_done(self, result: CaseResult) -> Awaitable[None] | None:
        """A case run completed. An observer that stores it may return an awaitable,
        done once the result is durable: the engine awaits it before the slot that
        finished the case takes new work (so a kill loses only the case runs in flight)."""
        ...

    def on_finish(self, result: EvalResult) -> None: ...


def runs_for(case: EvalCase, options: RunOptions, *, agent_given: bool) -> int:
    """How many times `case` runs: `options.runs`, else the CES default for its kind."""
    if options.runs is not None:
        return options.runs
    if simulated(case, agent_given) and simulates(options.simulator):
        return SCENARIO_RUNS
    return 1


def _jobs(
    evalsets: Sequence[EvalSet],
    options: RunOptions,
    agent_given: bool,
    skip: set[tuple[str, str, int]],
) -> Iterator[CaseJob]:
    counts = {
        (e.id, c.id): runs_for(c, options, agent_given=agent_given)
        for e in evalsets
        for c in e.cases
    }
    # Run 0 of every case first, so an interrupted run has covered the most cases.
    for run_index in range(max(counts.values(), default=0)):
        for evalset in evalsets:
            for case in evalset.cases:
                if run_index < counts[(evalset.id, case.id)] and (
                    (evalset.id, case.id, run_index) not in skip
                ):
                    yield CaseJob(evalset.id, case, run_index)


def count_case_runs(evalsets: Sequence[EvalSet], options: RunOptions, *, agent_given: bool) -> int:
    """The number of case runs a whole run of `evalsets` makes."""
    return sum(runs_for(c, options, agent_given=agent_given) for e in evalsets for c in e.cases)


def _score_recorded(job: CaseJob, metrics: Sequence[Metric]) -> CaseResult:
    return score_recorded(job.case, metrics, eval_set_id=job.evalset_id, run_index=job.run_index)


def score_recorded(
    case: EvalCase, metrics: Sequence[Metric], *, eval_set_id: str | None, run_index: int = 0
) -> CaseResult:
    """Score a case's recorded turns (no agent); a case without any says why."""
    if case.actual is None:
        inference = nothing_recorded(case)
        return finish_case(
            case,
            [],
            metrics,
            no_score_results(metrics, inference.error or NO_RESPONSE_REASON),
            eval_set_id=eval_set_id,
            run_index=run_index,
            inference=inference,
        )
    return score_case(case, case.actual, metrics, eval_set_id=eval_set_id, run_index=run_index)


def _check_unique_sets(evalsets: Sequence[EvalSet]) -> None:
    seen: set[str] = set()
    for evalset in evalsets:
        if evalset.id in seen:
            raise InputError(
                f"two eval sets share the id {evalset.id!r}; give each file a distinct eval set id"
            )
        seen.add(evalset.id)


@asynccontextmanager
async def _in_context(registry: ModelRegistry) -> AsyncIterator[ModelRegistry]:
    # The run's tasks copy this context when they start: agents find the registry there.
    with registry_in_context(registry):
        yield registry


async def arun(
    evalsets: Sequence[EvalSet],
    metrics: Sequence[Metric],
    *,
    agent: Agent | None = None,
    options: RunOptions | None = None,
    observers: Sequence[RunObserver] = (),
    skip: set[tuple[str, str, int]] | None = None,
    judges: JudgeRunOptions | JudgePool | None = None,
    previous: Sequence[CaseResult] = (),
    executor: Executor | None = None,
) -> EvalResult:
    """Evaluate every case of every eval set (`runs_for` times each).

    Cases run concurrently up to `options.concurrency`; each finished case is handed to
    the observers at once (store writers, progress bars). One failing case, agent or
    metric never loses the other cases' results. Resuming: `skip` holds
    (eval_set_id, case_id, run_index) keys already completed, `previous` their results,
    which join the returned result and its summary (observers do not see them again).
    `judges` sets up the LLM judges of the judged metrics (default model, concurrency,
    cache); the summary gets their `judge/...` counters. `executor` runs the case runs
    (default: `LocalExecutor`, asyncio tasks on this loop).
    """
    options = options or RunOptions()
    _check_unique_sets(evalsets)
    jobs = list(_jobs(evalsets, options, agent is not None, skip or set()))
    needs_simulator = agent is not None and any(simulated(j.case, True) for j in jobs)
    # One registry of model pacing per run: the judges, the simulated user and the
    # agents (which find it in the context) share each endpoint's limiter and retries.
    registry = run_registry(judges, options.concurrency)
    async with (
        _in_context(registry),
        run_judges(metrics, judges, registry) as pool,
        user_simulator(options.simulator, needs_simulator) as simulator,
    ):
        started = pool.stats.snapshot() if pool is not None else None
        cost_started = pool.meter.snapshot() if pool is not None else None
        workers = options.concurrency
        if pool is not None and agent is None:
            # Scoring recorded data waits only on the judges, whose own adaptive limit
            # bounds the calls in flight: keep enough cases going to fill it.
            workers = max(workers, 2 * pool.concurrency)
            if pool.batch:  # the cases' judge calls wait for one batch together
                workers = max(workers, min(len(jobs), BATCHED_CASES_IN_FLIGHT))
        ctx = CaseRunContext(
            metrics,
            agent,
            options,
            simulator,
            app_details_of(agent) if agent is not None else None,
        )
        done = await _run_jobs(jobs, ctx, observers, workers, executor or LocalExecutor())
        result = build_result(
            [*previous, *done],
            metrics,
            agent_run=agent is not None,
            eval_set_id=evalsets[0].id if len(evalsets) == 1 else None,
        )
        if pool is not None:
            await pool.flush()
            result.summary.update(judge_summary(pool, started, cost_started))
            result.summary.update(unstable_summary(result.cases))
    for observer in observers:
        observer.on_finish(result)
    return result


async def _run_jobs(
    jobs: Sequence[CaseJob],
    ctx: CaseRunContext,
    observers: Sequence[RunObserver],
    workers: int,
    executor: Executor,
) -> list[CaseResult]:
    for observer in observers:
        observer.on_start(len(jobs))
    results: list[CaseResult | None] = [None] * len(jobs)

    def done(i: int, result: CaseResult) -> Awaitable[None] | None:
        results[i] = result
        durable = [d for o in observers if (d := o.on_case_done(result)) is not None]
        if not durable:
            return None
        return durable[0] if len(durable) == 1 else _all_of(durable)

    local = isinstance(executor, LocalExecutor)
    if local and ctx.agent is None and not any(m.is_async for m in ctx.metrics):
        # Recorded data and synchronous metrics: no tasks, no awaits on the hot path.
        for i, job in enumerate(jobs):
            stored = done(i, _score_recorded(job, ctx.metrics))
            if stored is not None:
                await stored
    elif local:
        await executor.run(jobs, lambda job: evaluate_case_run(job, ctx), done, workers=workers)
    else:
        await executor.run(jobs, _staged(ctx, len(jobs), workers), done, workers=workers)
    return [r for r in results if r is not None]


async def _all_of(awaitables: Sequence[Awaitable[None]]) -> None:
    for awaitable in awaitables:
        await awaitable


def _staged(
    ctx: CaseRunContext, jobs: int, workers: int
) -> StagedWork[CaseJob, Inferred, CaseResult]:
    """The case runs as an executor of other processes runs them: agent and
    deterministic scores where it likes, judges here (the run's pool: its cache and
    rate limits). Recorded data travels in batches, about four per worker, so a worker
    is never idle while the last big batch runs (at most 1,000 rows per batch)."""

    async def finish_here(job: CaseJob, inferred: Inferred) -> CaseResult:
        return await finish(job, ctx, inferred)

    remote = RemoteCaseRuns(ctx.metrics, ctx.agent, ctx.options, ctx.app_details)
    batch = 1 if ctx.agent is not None else max(1, min(1000, -(-jobs // (4 * workers))))
    return StagedWork(
        remote=remote,
        finish=finish_here,
        failed=lambda job, message: lost_case_run(job, ctx.metrics, message),
        batch=batch,
    )


#: cases scored at once when judge calls go in batches (`--judge-batch`): each batch
#: holds the judge calls of up to this many cases
BATCHED_CASES_IN_FLIGHT = 5_000


def run(
    evalsets: Sequence[EvalSet],
    metrics: Sequence[Metric],
    *,
    agent: Agent | None = None,
    options: RunOptions | None = None,
    observers: Sequence[RunObserver] = (),
    skip: set[tuple[str, str, int]] | None = None,
    judges: JudgeRunOptions | None = None,
    previous: Sequence[CaseResult] = (),
    executor: Executor | None = None,
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
            previous=previous,
            executor=executor,
        )
    )
