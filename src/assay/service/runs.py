"""Evaluation runs: start a run in the background, read runs and their results.

The functions here are shared by the REST routes (`runs_api`), E's generic
`/v1/{name}` handler and the MCP tools. `start_run` validates the request and every
evaluation it names, snapshots the evaluations into the run's config (a run evaluates
them as they were when it started, also after a restart), stores the run RUNNING and
hands it to the app's `RunExecutor`; it answers at once with a CES long-running
operation whose `metadata.evaluationRun` names the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.agents.tools import ToolBehavior
from assay.config import EXPECTATION_CHECKS, golden_checks_called_for
from assay.engine.replay import RunMethod
from assay.errors import ConfigError, InputError
from assay.service import _results
from assay.service._executor import RunExecutor
from assay.service._listing import decode_token, encode_token, page_size_of, token_key
from assay.service._run_session import EVAL_SET_ID, evaluation_case, run_plan, total_runs
from assay.service._storable import check_storable
from assay.service.aggregate import Aggregator
from assay.service.errors import FailedPrecondition, InvalidArgument, NotFound
from assay.service.names import RESULTS, RUNS, check_app, check_id, parse_kind_name, parse_name
from assay.service.settings import BUDGET_FIELD, RunOwner, ServiceRunSettings, requested_budget
from assay.store.eval_results import SERVICE_KEY, EvaluationResults
from assay.store.exceptions import RunNotFoundError
from assay.store.namespace import current_namespace
from assay.store.runs import RunInfo

if TYPE_CHECKING:
    from assay.service.context import ServiceContext
    from assay.store import Store

# Runs per evaluation: each is a full agent conversation, so more is a mistake, not a plan.
MAX_RUN_COUNT = 1000
OPERATION_TYPE = "type.googleapis.com/google.cloud.ces.v1beta.RunEvaluationOperationMetadata"
GOLDEN_METRICS = (
    "parameter_correctness_score",
    "tool_invocation_score",
    "tool_ordered_invocation_score",
    "golden_expectations",
)
# Need an LLM judge: computed only when the request (or server) names a judge model.
JUDGED_METRICS = ("semantic_similarity", "hallucination")
SCENARIO_METRICS = ("user_goal_satisfaction", "task_completed")
# Judges each evaluation expectation (its llmCriteria prompt) against the final response.
EXPECTATION_METRIC = "rubric_based_final_response_quality_v1"

REQUEST_FIELDS = (
    "app",
    "evaluations",
    "evaluationDataset",
    "displayName",
    "appVersion",
    "runCount",
    "config",
    "toolCallBehaviour",
    "toolCallBehavior",
    "goldenRunMethod",
    "judgeModel",
    "userModel",
    # Set by the scheduler on the runs it starts (apps/{app}/scheduledEvaluationRuns/{id}).
    "scheduledEvaluationRun",
    # assay's extension: a lower cap on the run's judges than the server's (not in CES).
    BUDGET_FIELD,
)


RUNS_PART = "runs"


@dataclass
class RunsState:
    """What the runs side keeps per app: the executor, queries and the metric cache."""

    executor: RunExecutor
    results: EvaluationResults
    aggregator: Aggregator


def attach(ctx: ServiceContext) -> RunsState:
    """Create the runs side of `ctx` (once per app; `runs_api.install` calls it).

    It lives on the context (`ctx.parts`), not in this module: two apps in one process
    (tests, a server and its replacement) never share an executor.
    """
    results = EvaluationResults(ctx.store.engine, ctx.store.url)
    aggregator = Aggregator(results, ctx.store.get_run)
    executor = RunExecutor(ctx, results, aggregator.touched, lease_s=ctx.run_lease_s)
    if ctx.agent_spec is not None and _shareable(ctx.store):
        from assay.service._run_process import RunProcesses

        executor.worker = RunProcesses(
            ctx.store,
            ctx.agent_spec,
            ctx.case_timeout_s,
            aggregator.touched,
            executor.is_lost,
            prices_file=ctx.prices_file,
        )
    state = RunsState(executor, results, aggregator)
    ctx.parts[RUNS_PART] = state
    return state


def _shareable(store: Store) -> bool:
    """Whether another process can open `store` (an in-memory SQLite database cannot)."""
    url = store.engine.url
    return url.get_backend_name() != "sqlite" or url.database not in (None, "", ":memory:")


def state_of(ctx: ServiceContext) -> RunsState:
    found = ctx.parts.get(RUNS_PART)
    return found if isinstance(found, RunsState) else attach(ctx)


# -- starting a run ------------------------------------------------------------------------


def _request_ids(ctx: ServiceContext, app: str, request: Mapping[str, object]) -> list[str]:
    names = request.get("evaluations") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InvalidArgument.field("evaluations", "expected a list of evaluation names or ids")
    ids = [_local_id(app, n, "evaluations", "evaluations") for n in names]
    dataset = request.get("evaluationDataset")
    if dataset:
        if not isinstance(dataset, str):
            raise InvalidArgument.field("evaluationDataset", "expected a dataset name or id")
        ds_id = _local_id(app, dataset, "evaluationDatasets", "evaluationDataset")
        found = ctx.store.resources.get(app, "evaluationDatasets", ds_id)
        if found is None:
            raise NotFound(f"no evaluationDatasets {ds_id!r} in app {app!r}")
        members = found.body.get("evaluations") or []
        ids += [_local_id(app, m, "evaluations", "evaluationDataset.evaluations") for m in members]
    if not ids:
        raise InvalidArgument(
            "name the evaluations to run: give evaluations (names or ids) or an "
            "evaluationDataset that lists some"
        )
    return list(dict.fromkeys(ids))


def _local_id(app: str, ref: str, kind: str, field: str) -> str:
    if "/" not in ref:
        return check_id(ref, field)
    parsed = parse_kind_name(ref, kind, field=field)
    if parsed.app != app:
        raise InvalidArgument.field(field, f"{ref!r} belongs to app {parsed.app!r}, not {app!r}")
    return parsed.id


def _enum(request: Mapping[str, object], field: str, parse: Any, default: str) -> str:
    value = request.get(field)
    if value is None or str(value).upper().endswith("_UNSPECIFIED"):
        return default
    if not isinstance(value, str):
        raise InvalidArgument.field(field, f"expected a string, got {value!r}")
    try:
        return str(parse(value).value)
    except ConfigError as exc:
        raise InvalidArgument.field(field, str(exc)) from None


def _with_expectations(ctx: ServiceContext, app: str, body: Mapping[str, object]) -> dict[str, Any]:
    """The evaluation with each named expectation resource written inline, as it is now.

    The run keeps its snapshot: an expectation changed later does not change the run.
    """
    out = dict(body)
    for part in ("golden", "scenario"):
        section = body.get(part)
        if not isinstance(section, Mapping) or not section.get("evaluationExpectations"):
            continue
        inlined = []
        for ref in section["evaluationExpectations"]:
            found = ctx.store.resources.get(app, "evaluationExpectations", ref.rsplit("/", 1)[-1])
            if found is None:
                raise FailedPrecondition(f"evaluation expectation {ref} no longer exists")
            criteria = found.body["llmCriteria"]
            inlined.append({"displayName": found.display_name, "llmCriteria": criteria})
        out[part] = {**section, "evaluationExpectations": inlined}
    return out


def _has_expectations(body: Mapping[str, Any]) -> bool:
    return any(
        isinstance(body.get(part), Mapping) and body[part].get("evaluationExpectations")
        for part in ("golden", "scenario")
    )


def run_settings(
    ctx: ServiceContext, app: str, request: Mapping[str, object]
) -> ServiceRunSettings:
    """The settings of the run `request` asks for (validated: INVALID_ARGUMENT naming
    the field, NOT_FOUND for a missing evaluation); nothing is stored."""
    unknown = sorted(set(request) - set(REQUEST_FIELDS))
    if unknown:
        raise InvalidArgument.field(
            unknown[0],
            f"unknown field of a run request; expected some of {', '.join(REQUEST_FIELDS)}",
        )
    if request.get("app") not in (None, app, f"apps/{app}"):
        raise InvalidArgument.field("app", f"the request is for app {app!r}")
    config = request.get("config") or {}
    if not isinstance(config, Mapping):
        raise InvalidArgument.field("config", "expected an EvaluationConfig object")
    behaviour = {
        "toolCallBehaviour": config.get("toolCallBehaviour")
        or request.get("toolCallBehaviour")
        or request.get("toolCallBehavior")
    }
    tool_behavior = _enum(behaviour, "toolCallBehaviour", ToolBehavior.parse, "REAL")
    run_count = request.get("runCount")
    if run_count is not None and (
        isinstance(run_count, bool)
        or not isinstance(run_count, int)
        or not 1 <= run_count <= MAX_RUN_COUNT
    ):
        raise InvalidArgument.field(
            "runCount", f"expected an integer from 1 to {MAX_RUN_COUNT}, got {run_count!r}"
        )
    for field in ("displayName", "appVersion", "judgeModel", "userModel", "scheduledEvaluationRun"):
        if request.get(field) is not None and not isinstance(request[field], str):
            raise InvalidArgument.field(field, "expected a string")
    check_models(ctx, request)
    budget = requested_budget(request.get(BUDGET_FIELD), ctx.judge_budget)
    ids = _request_ids(ctx, app, request)
    evaluations: dict[str, Any] = {}
    for eid in ids:
        found = ctx.store.resources.get(app, "evaluations", eid)
        if found is None:
            raise NotFound(f"no evaluations {eid!r} in app {app!r}")
        try:
            evaluation_case(eid, found.body)
        except InputError as exc:
            raise InvalidArgument(
                f"evaluation apps/{app}/evaluations/{eid} cannot run: {exc}"
            ) from None
        evaluations[eid] = _with_expectations(ctx, app, found.body)
    judged = bool(request.get("judgeModel"))
    metrics = [*GOLDEN_METRICS, *(JUDGED_METRICS + SCENARIO_METRICS if judged else ())]
    if judged and any(_has_expectations(body) for body in evaluations.values()):
        metrics.append(EXPECTATION_METRIC)
    settings = ServiceRunSettings(
        evaluation_ids=ids,
        evaluations=evaluations,
        metrics=metrics,
        run_count=run_count,
        tool_behavior=tool_behavior,
        config={**config, "toolCallBehaviour": tool_behavior},
        golden_run_method=_enum(request, "goldenRunMethod", RunMethod.parse, "STABLE"),
        # Scenarios may name the app's personas: the run keeps the ones it started with.
        personas={
            p.id: {"displayName": p.display_name, **p.body}
            for p in ctx.store.resources.list_resources(app, "personas")
        },
        app_version=request.get("appVersion") or None,
        evaluation_dataset=request.get("evaluationDataset") or None,
        judge_model=request.get("judgeModel") or None,
        user_model=request.get("userModel") or None,
        scheduled_evaluation_run=request.get("scheduledEvaluationRun") or None,
        judge_budget=budget if budget.capped else None,
    )
    try:
        cases, options = run_plan(settings)
    except ConfigError as exc:
        raise InvalidArgument(str(exc)) from None
    # As `assay eval` does: a golden check no expectation asks for would have nothing to
    # score and leave every case NOT_EVALUATED (which is never a pass). With none left
    # (scenarios without a judge) the conversations still run and every result says why
    # it was not evaluated.
    called = golden_checks_called_for(cases)
    settings.metrics = [m for m in metrics if m not in EXPECTATION_CHECKS or m in called] or metrics
    settings.total_count = total_runs(cases, options)
    return settings


def allowed_models(ctx: ServiceContext) -> tuple[str, ...]:
    """The models a request may name: the server's `--judge-model` and `--allow-model`s."""
    own = (ctx.judge_model,) if ctx.judge_model else ()
    return (*own, *(m for m in ctx.limits.allowed_models if m != ctx.judge_model))


def check_models(ctx: ServiceContext, request: Mapping[str, object], prefix: str = "") -> None:
    """INVALID_ARGUMENT naming the field if a run request (or a schedule's, `prefix`
    "request.") names a model the server does not allow."""
    for field in ("judgeModel", "userModel"):
        model = request.get(field)
        if model is None or isinstance(model, str):
            _check_model_allowed(ctx, prefix + field, model)


def check_scheduled_request(ctx: ServiceContext, request: Mapping[str, object]) -> None:
    """What a schedule's run request may ask of this server, checked when the schedule is
    written (INVALID_ARGUMENT naming `request.FIELD`): its models and its judge budget."""
    check_models(ctx, request, "request.")
    requested_budget(request.get(BUDGET_FIELD), ctx.judge_budget, f"request.{BUDGET_FIELD}")


def _check_model_allowed(ctx: ServiceContext, field: str, model: str | None) -> None:
    """A model named by a request must be one the operator configured: a request never
    makes the server open a file (`local:/path.gguf`) or call an endpoint of its own."""
    if not model:
        return
    allowed = allowed_models(ctx)
    if model in allowed:
        return
    if not allowed:
        raise InvalidArgument.field(
            field,
            "this server takes no model from a request; its operator allows models with "
            "`assay serve --judge-model MODEL` or `--allow-model MODEL`",
        )
    raise InvalidArgument.field(
        field,
        f"{model[:200]!r} is not a model this server allows; allowed: {', '.join(allowed)}",
    )


def checked_request(ctx: ServiceContext, app: str, request: object) -> ServiceRunSettings:
    """The settings of a run request, checked as `evaluations:run` checks it (also for
    its estimate, `evaluations:estimate`): the app, the body's shape and depth, an
    agent to run, then every field."""
    check_app(app)
    if not isinstance(request, Mapping):
        raise InvalidArgument("the request body must be a JSON object")
    check_storable(request, "", ctx.limits.max_depth)
    if ctx.agent is None:
        raise FailedPrecondition(
            "no agent to evaluate: start assay serve with --agent (e.g. --agent module:attr)"
        )
    return run_settings(ctx, app, request)


def start_run(ctx: ServiceContext, app: str, request: dict[str, Any]) -> dict[str, Any]:
    """Create an evaluationRun (state RUNNING) and start it; return the operation JSON."""
    settings = checked_request(ctx, app, request)
    assert ctx.agent is not None  # checked_request refuses a run without one
    state = state_of(ctx)
    settings.owner = RunOwner.model_validate(state.executor.owner())
    run_id = ctx.store.start_run(
        eval_set_ids=[EVAL_SET_ID],
        metrics=settings.metrics,
        config={SERVICE_KEY: settings.document()},
        agent=ctx.agent.name,
        runs=settings.run_count or 1,
        name=request.get("displayName") or None,
        app=app,
    )
    ctx.store.set_total(run_id, settings.total_count or 0)
    state.executor.submit(run_id)
    run = ctx.store.get_run(run_id)
    return {
        "name": f"apps/{app}/operations/run-{run_id}",
        "metadata": {
            "@type": OPERATION_TYPE,
            "evaluations": [f"apps/{app}/evaluations/{e}" for e in settings.evaluation_ids],
            "evaluationRun": _results.run_name(app, run_id),
            "createTime": _results.rfc3339(run.created_at),
            "verb": "run",
        },
        "done": False,
    }


# -- reading runs and results -------------------------------------------------------------


def _run(ctx: ServiceContext, name: str) -> tuple[str, RunInfo]:
    parsed = parse_name(name)
    if parsed.kind != RUNS:
        raise InvalidArgument.field("name", f"{name!r} is not an evaluationRun name")
    try:
        run = ctx.store.get_run(parsed.id)
    except RunNotFoundError:
        run = None
    if run is None or run.app != parsed.app or not in_namespace(run):
        raise NotFound(f"no evaluationRun {parsed.id!r} in app {parsed.app!r}")
    return parsed.app, run


def in_namespace(run: RunInfo) -> bool:
    """Whether `run` belongs to the project and location of this request."""
    ns = current_namespace()
    return (run.project, run.location) == (ns.project, ns.location)


def render_run(ctx: ServiceContext, app: str, run: RunInfo) -> dict[str, Any]:
    return _results.render_run(app, run, state_of(ctx).results.progress(run.id))


def get_run(ctx: ServiceContext, name: str) -> dict[str, Any]:
    """Return the evaluationRun `name` (apps/{app}/evaluationRuns/{id})."""
    app, run = _run(ctx, name)
    return render_run(ctx, app, run)


def _cursor(cursor: dict[str, Any] | None, field: str, kind: type) -> Any:
    value = None if cursor is None else cursor.get(field)
    if cursor is not None and (isinstance(value, bool) or not isinstance(value, kind)):
        raise InvalidArgument.field("pageToken", "the token holds no position in this list")
    return value


def list_runs(
    ctx: ServiceContext, app: str, *, page_size: int = 50, page_token: str | None = None
) -> dict[str, Any]:
    """Return `{"evaluationRuns": [...], "nextPageToken": ...}` for `app`, newest first."""
    check_app(app)
    size = page_size_of(page_size)
    key, scope = token_key(ctx.store), (app, RUNS)
    before = _cursor(decode_token(key, page_token, *scope), "b", str)
    found = state_of(ctx).results.runs_page(app, limit=size + 1, before=before)
    out: dict[str, Any] = {"evaluationRuns": [render_run(ctx, app, r) for r in found[:size]]}
    if len(found) > size:
        out["nextPageToken"] = encode_token(key, {"b": found[size - 1].id}, *scope)
    return out


def delete_run(ctx: ServiceContext, name: str) -> None:
    """Delete the evaluationRun `name` and its results (stopping it when running here)."""
    app, run = _run(ctx, name)
    state = state_of(ctx)
    state.executor.cancel(run.id)
    ctx.store.delete_run(run.id)
    state.aggregator.forget(app)


def cancel_run(ctx: ServiceContext, name: str) -> dict[str, Any]:
    """Stop the unfinished evaluationRun `name`: it ends CANCELLED, keeping what finished."""
    app, run = _run(ctx, name)
    state = state_of(ctx)
    if not state.results.cancel(run.id, "the evaluation run was cancelled on request"):
        current = render_run(ctx, app, ctx.store.get_run(run.id))["state"]
        raise FailedPrecondition(f"evaluation run {name} has already finished ({current})")
    # Running here: stop now. Running on another server over this store: its next
    # heartbeat finds the run no longer RUNNING and stops it.
    state.executor.abandon(run.id)
    state.aggregator.forget(app)
    return render_run(ctx, app, ctx.store.get_run(run.id))


def forget_evaluation(ctx: ServiceContext, app: str, evaluation_id: str) -> None:
    """Delete a deleted evaluation's results, so one re-created under its id starts clean."""
    state = state_of(ctx)
    state.results.delete_results(app, evaluation_id)
    state.aggregator.forget(app)


def delete_result(ctx: ServiceContext, name: str) -> None:
    """Delete the evaluationResult `name` (apps/{app}/evaluations/{id}/results/{rid})."""
    parsed = parse_name(name)
    if parsed.kind != RESULTS or parsed.parent is None:
        raise InvalidArgument.field("name", f"{name!r} is not an evaluation result name")
    run_id, index = _results.parse_result_id(parsed.id)
    state = state_of(ctx)
    gone = state.results.delete_results(parsed.app, parsed.parent, run_id=run_id, run_index=index)
    if not gone:
        raise NotFound(f"no evaluation result {name!r}")
    state.aggregator.forget(parsed.app)


def get_result(ctx: ServiceContext, name: str) -> dict[str, Any]:
    """Return the evaluationResult `name` (apps/{app}/evaluations/{id}/results/{rid})."""
    parsed = parse_name(name)
    if parsed.kind != RESULTS or parsed.parent is None:
        raise InvalidArgument.field("name", f"{name!r} is not an evaluation result name")
    run_id, index = _results.parse_result_id(parsed.id)
    row = state_of(ctx).results.result(parsed.app, parsed.parent, run_id, index)
    if row is None:
        raise NotFound(f"no evaluation result {name!r}")
    return _results.render_result(parsed.app, row, state_of(ctx).aggregator.run(run_id))


def _run_filter(app: str, expression: str) -> str:
    key, sep, value = expression.partition("=")
    if not sep:
        key, sep, value = expression.partition(":")
    value = value.strip().strip('"')
    if not sep or key.strip() != "evaluationRun" or not value:
        raise InvalidArgument.field(
            "filter", 'supported: evaluationRun="apps/{app}/evaluationRuns/{id}" (or the id)'
        )
    return _local_id(app, value, RUNS, "filter")


def list_results(
    ctx: ServiceContext,
    evaluation: str,
    *,
    page_size: int = 50,
    page_token: str | None = None,
    filter: str | None = None,
) -> dict[str, Any]:
    """Return `{"evaluationResults": [...], "nextPageToken": ...}`, newest first."""
    parsed = parse_kind_name(evaluation, "evaluations", field="parent")
    size = page_size_of(page_size)
    key, scope = token_key(ctx.store), (str(parsed), RESULTS, filter or "")
    before = _cursor(decode_token(key, page_token, *scope), "r", int)
    run_id = _run_filter(parsed.app, filter) if filter else None
    state = state_of(ctx)
    rows = state.results.results(
        parsed.app, parsed.id, limit=size + 1, before=before, run_id=run_id
    )
    rendered = []
    for row in rows[:size]:
        rendered.append(_results.render_result(parsed.app, row, state.aggregator.run(row.run_id)))
    out: dict[str, Any] = {"evaluationResults": rendered}
    if len(rows) > size:
        out["nextPageToken"] = encode_token(key, {"r": rows[size - 1].row_id}, *scope)
    return out
