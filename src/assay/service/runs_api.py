"""REST routes for evaluation runs and results, and the runs side's hooks into the app.

    POST   /v1/apps/{app}/evaluations:run                run_evaluation (an operation)
    POST   /v1/apps/{app}/evaluations:estimate           estimate_evaluation_run (a dry run)
    GET    /v1/apps/{app}/evaluationRuns                 list runs, newest first
    GET    /v1/apps/{app}/evaluationRuns/{id}            get a run (state, progress)
    DELETE /v1/apps/{app}/evaluationRuns/{id}            delete a run and its results
    GET    /v1/apps/{app}/evaluations/{id}/results       list results, newest first
    GET    /v1/apps/{app}/evaluations/{id}/results/{r}   get a result

`install` also registers the evaluation decorator (run and result fields of every
evaluation rendered) and returns the executor's lifespan: it resumes orphaned runs when
the app starts and hands unfinished runs back when it stops.
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, FastAPI, Query

from assay.service import _results, run_estimate, runs
from assay.service._routing import OffloadedRoute
from assay.service.context import ServiceContext, get_ctx
from assay.service.routes import ERRORS
from assay.store import Resource

Ctx = Annotated[ServiceContext, Depends(get_ctx)]
PageSize = Annotated[int, Query(alias="pageSize", description="Page size (default 50).")]
PageToken = Annotated[
    str | None, Query(alias="pageToken", description="nextPageToken of the previous page.")
]

RECENT_RUNS = 10
"""How many run names an evaluation's `evaluationRuns` lists (newest first)."""

router = APIRouter(
    prefix="/v1", tags=["evaluationRuns"], responses=ERRORS, route_class=OffloadedRoute
)


@router.post(
    "/apps/{app}/evaluations:run",
    operation_id="run_evaluation",
    summary="Run evaluations (or a dataset) against the server's agent",
    description="Body: {evaluations: [names or ids], evaluationDataset, displayName, "
    "appVersion, runCount, config: {toolCallBehaviour: REAL|FAKE|MIXED}, goldenRunMethod: "
    "STABLE|NAIVE, judgeModel, userModel, assayJudgeBudget: {maxUsd, maxCalls}}. Returns a "
    "long-running operation at once; metadata.evaluationRun names the run to poll.",
)
def run_evaluation(ctx: Ctx, app: str, body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
    return runs.start_run(ctx, app, body)


@router.post(
    "/apps/{app}/evaluations:estimate",
    operation_id="estimate_evaluation_run",
    summary="Estimate a run's judge calls, tokens, cache hits and price, running nothing",
    description="Body: the body of evaluations:run, checked as it is. Nothing is stored and "
    "no model or agent is called. Returns the estimate `assay eval --dry-run --out` writes "
    "(judge: calls, cache_hits, input_tokens, output_tokens, usd, per_metric, "
    "per_metric_model; agent: calls), the evaluations and metrics of the run, its "
    "judgeBudget (with exceeded: whether the estimate passes it), and complete: false "
    "with notCounted naming the simulated scenarios whose calls cannot be known before.",
)
def estimate_evaluation_run(
    ctx: Ctx, app: str, body: Annotated[dict[str, Any], Body()]
) -> dict[str, Any]:
    return run_estimate.estimate(ctx, app, body)


@router.get("/apps/{app}/evaluationRuns", operation_id="list_evaluation_runs")
def list_evaluation_runs(
    ctx: Ctx, app: str, page_size: PageSize = 50, page_token: PageToken = None
) -> dict[str, Any]:
    return runs.list_runs(ctx, app, page_size=page_size, page_token=page_token)


@router.get("/apps/{app}/evaluationRuns/{run_id}", operation_id="get_evaluation_run")
def get_evaluation_run(ctx: Ctx, app: str, run_id: str) -> dict[str, Any]:
    return runs.get_run(ctx, f"apps/{app}/evaluationRuns/{run_id}")


@router.delete("/apps/{app}/evaluationRuns/{run_id}", operation_id="delete_evaluation_run")
def delete_evaluation_run(ctx: Ctx, app: str, run_id: str) -> dict[str, Any]:
    runs.delete_run(ctx, f"apps/{app}/evaluationRuns/{run_id}")
    return {}


@router.get(
    "/apps/{app}/evaluations/{evaluation_id}/results", operation_id="list_evaluation_results"
)
def list_evaluation_results(
    ctx: Ctx,
    app: str,
    evaluation_id: str,
    page_size: PageSize = 50,
    page_token: PageToken = None,
    filter: Annotated[
        str | None, Query(description='evaluationRun="apps/{app}/evaluationRuns/{id}"')
    ] = None,
) -> dict[str, Any]:
    return runs.list_results(
        ctx,
        f"apps/{app}/evaluations/{evaluation_id}",
        page_size=page_size,
        page_token=page_token,
        filter=filter,
    )


@router.get(
    "/apps/{app}/evaluations/{evaluation_id}/results/{result_id}",
    operation_id="get_evaluation_result",
)
def get_evaluation_result(ctx: Ctx, app: str, evaluation_id: str, result_id: str) -> dict[str, Any]:
    return runs.get_result(ctx, f"apps/{app}/evaluations/{evaluation_id}/results/{result_id}")


def decorate_evaluation(
    ctx: ServiceContext, res: Resource, body: dict[str, Any], full: bool
) -> None:
    """Fill an evaluation's output-only run fields from its stored results."""
    state = runs.state_of(ctx)
    metrics = state.aggregator.metrics(res.app, res.id)
    run_ids = {*metrics.run_ids, *state.executor.running_runs_of(res.app, res.id)}
    newest = sorted(run_ids, reverse=True)[:RECENT_RUNS]
    body["evaluationRuns"] = [_results.run_name(res.app, r) for r in newest]
    # Both are made once per change of the evaluation's results, not once per request.
    if metrics.versions:
        body["aggregatedMetrics"] = metrics.rendered()
    last = metrics.last_result(res.app, state.aggregator.run)
    if last is not None:
        body["lastCompletedResult"] = last
    if full:
        rows = state.results.results(res.app, res.id, limit=10)
        body["lastTenResults"] = [
            _results.render_result(res.app, r, state.aggregator.run(r.run_id)) for r in rows
        ]


def install(app: FastAPI, ctx: ServiceContext) -> contextlib.AbstractAsyncContextManager[None]:
    """Add the run/result routes and the evaluation decorator; return the executor's
    lifespan (resume orphaned runs on start, hand running ones back on stop)."""
    state = runs.attach(ctx)
    app.include_router(router)
    ctx.decorators.append(decorate_evaluation)
    return state.executor.lifespan()
