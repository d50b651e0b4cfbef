"""One case run, from its job to its `CaseResult`, in two parts that may run apart.

`infer_and_score` runs the agent (a golden replay or a simulated conversation) and the
deterministic metrics: it needs only the job and a `CaseRunContext`, so an executor may
run it in another process or on another machine (`RemoteCaseRuns` is its picklable
form, which builds the simulated user where it runs). `finish` adds the judged metrics
and builds the result: it stays with the run, whose judge pool holds the cache and the
rate limits every judge call goes through. `evaluate_case_run` is both in one process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.agents.base import Agent
from assay.core.cases import EvalCase, Turn
from assay.core.error_types import ErrorType
from assay.core.results import CaseResult, MetricResult
from assay.engine.infer import Inference, with_app_details
from assay.engine.replay import replay
from assay.engine.scenario_run import NO_AGENT, run_scenario, user_simulator
from assay.engine.scoring import (
    NO_RESPONSE_REASON,
    finish_case,
    no_score_results,
    score_deterministic,
    score_judged,
)
from assay.metrics.base import Metric

if TYPE_CHECKING:
    from assay.engine.options import RunOptions
    from assay.simulation import UserSimulator


@dataclass(slots=True)
class CaseJob:
    """One run (`run_index`) of one case of one eval set."""

    evalset_id: str
    case: EvalCase
    run_index: int


def simulated(case: EvalCase, agent_given: bool) -> bool:
    """Whether the case is a scenario a simulated user plays (an agent, no reference)."""
    return agent_given and case.scenario is not None and case.reference is None


@dataclass(slots=True)
class CaseRunContext:
    """What every case run of one run shares."""

    metrics: Sequence[Metric]
    agent: Agent | None
    options: RunOptions
    simulator: UserSimulator | None
    app_details: dict[str, Any] | None


@dataclass(slots=True)
class Inferred:
    """A case run's first part: how the turns came about, and the deterministic
    metrics' results with None for the judged ones (None when there was nothing to
    score)."""

    inference: Inference | None
    scores: list[MetricResult | None] | None


def nothing_recorded(case: EvalCase) -> Inference:
    if case.scenario is not None:
        return Inference(None, error=NO_AGENT, error_type=ErrorType.NOT_SUPPORTED)
    return Inference(None, error=NO_RESPONSE_REASON)


async def _infer(job: CaseJob, ctx: CaseRunContext) -> Inference | None:
    """The turns to score (None: score the recorded ones) or why there are none."""
    case, agent, options = job.case, ctx.agent, ctx.options
    if agent is not None and simulated(case, True):
        return await run_scenario(
            agent,
            case,
            behavior=options.tool_behavior,
            simulator=ctx.simulator,
            timeout_s=options.timeout_s,
        )
    if agent is not None and case.user_turns():
        return await replay(
            agent,
            case,
            behavior=options.tool_behavior,
            method=options.run_method,
            timeout_s=options.timeout_s,
        )
    if case.actual is not None:
        return None
    if agent is not None:
        return Inference(None, error="the case has no user inputs to send to the agent")
    return nothing_recorded(case)


def _turns(job: CaseJob, inference: Inference | None) -> list[Turn] | None:
    return inference.turns if inference is not None else job.case.actual


def _scored_case(job: CaseJob, ctx: CaseRunContext) -> EvalCase:
    # The judges see the agent's instructions and tools (`app_details`).
    return with_app_details(job.case, ctx.app_details) if ctx.agent is not None else job.case


async def infer_and_score(job: CaseJob, ctx: CaseRunContext) -> Inferred:
    """Run the agent on the case (if any) and score the deterministic metrics."""
    inference = await _infer(job, ctx)
    turns = _turns(job, inference)
    if not turns:
        return Inferred(inference, None)
    return Inferred(inference, score_deterministic(_scored_case(job, ctx), turns, ctx.metrics))


async def finish(job: CaseJob, ctx: CaseRunContext, inferred: Inferred) -> CaseResult:
    """Score the judged metrics (through the run's judge pool) and build the result."""
    inference = inferred.inference
    turns = _turns(job, inference) or []
    case = _scored_case(job, ctx)
    if inferred.scores is None:
        reason = (inference.error if inference else None) or NO_RESPONSE_REASON
        results = no_score_results(ctx.metrics, reason)
    else:
        results = await score_judged(case, turns, ctx.metrics, inferred.scores)
    return finish_case(
        case,
        turns,
        ctx.metrics,
        results,
        eval_set_id=job.evalset_id,
        run_index=job.run_index,
        inference=inference,
    )


async def evaluate_case_run(job: CaseJob, ctx: CaseRunContext) -> CaseResult:
    """Both parts of a case run, here."""
    return await finish(job, ctx, await infer_and_score(job, ctx))


def lost_case_run(job: CaseJob, metrics: Sequence[Metric], message: str) -> CaseResult:
    """The result of a case run whose task failed before it could report (its worker
    died, the agent could not be unpickled there): a RUNTIME_FAILURE naming why."""
    error = f"the case run's task failed: {message}"
    return finish_case(
        job.case,
        [],
        metrics,
        no_score_results(metrics, error),
        eval_set_id=job.evalset_id,
        run_index=job.run_index,
        inference=Inference(None, error=error, error_type=ErrorType.RUNTIME_FAILURE),
    )


@dataclass(frozen=True)
class RemoteCaseRuns:
    """`infer_and_score` over a batch of jobs, as an executor ships it to its workers.

    Picklable (metrics, agent and options travel with it); the simulated user is built
    where the batch runs, from `options.simulator`, and closed after it.
    """

    metrics: Sequence[Metric]
    agent: Agent | None
    options: RunOptions
    app_details: dict[str, Any] | None

    async def __call__(self, jobs: Sequence[CaseJob]) -> list[Inferred]:
        needs = self.agent is not None and any(simulated(j.case, True) for j in jobs)
        async with user_simulator(self.options.simulator, needs) as simulator:
            ctx = CaseRunContext(
                self.metrics, self.agent, self.options, simulator, self.app_details
            )
            return [await infer_and_score(job, ctx) for job in jobs]
