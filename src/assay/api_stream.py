"""`assay.evaluate(rows_path, agent=...)` and `await assay.aevaluate(...)` streamed: the
rows read as the agent's slots free, never loaded whole (`session.agent_stream`), as
`assay eval` runs them. One async run, `aevaluate_streamed`: `aevaluate` awaits it in
the caller's event loop, `evaluate` runs `aevaluate` through its sync wrapper.

The returned `EvalResult` holds every case result, unless the caller bounded them
(`keep_cases`; what then grows with the rows is numbers — the summary's scores — and the
case ids checked for duplicates), but not the rows' cases, which are dropped once run;
each result is stored as it finishes (durable before its slot takes new work when the
agent is slow). Used when `session.plan.plan_run` says so (`plan_evaluate` gathers
what `aevaluate` knows): the dataset is one or more row files (JSON lines, CSV, Parquet
of Vertex rows), the metrics are named (or come from a config) and none is judged, each
case runs once, the executor is local and nothing else needs the loaded eval sets
(MLflow, ADK's eval history); otherwise `aevaluate` loads the data.

Cancelled (a task cancelled, Ctrl-C under `evaluate`), the case runs that finished are
stored and the run is left INTERRUPTED, which the same call resumes; the cancellation
goes on to the caller (`evaluate` raises KeyboardInterrupt). SIGTERM is left to the
caller's process, as on the loaded path.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from assay.agents.tools import ToolBehavior
from assay.core.results import CaseResult, EvalResult, Status
from assay.engine.replay import RunMethod
from assay.errors import ConfigError
from assay.redact import redact_url
from assay.session.plan import RunPlan, row_files

if TYPE_CHECKING:
    from assay.api_inputs import AgentInput, ConfigInput, Dataset, Metrics, StoreInput
    from assay.config import EvalConfig
    from assay.engine import RunObserver
    from assay.engine.executors import Executor
    from assay.formats.stream import RowFile
    from assay.metrics.base import Metric
    from assay.session.streaming import StreamOutcome
    from assay.simulation import SimulatorOptions


@dataclass(frozen=True)
class Planned:
    """`aevaluate`'s run as `session.plan` plans it, with what a streamed run needs."""

    plan: RunPlan
    files: list[RowFile] = field(default_factory=list)
    config: EvalConfig | None = None
    metrics: list[Metric] = field(default_factory=list)


def plan_evaluate(
    dataset: Dataset,
    metrics: Metrics,
    agent: AgentInput,
    config: ConfigInput,
    *,
    format: str | None,
    runs: int | None,
    executor: str | Executor,
    observers: bool,
    keep_cases: int | None,
    mlflow: bool,
    adk_history: bool,
) -> Planned:
    """The facts `evaluate`/`aevaluate` know of a run, planned by `session.plan.plan_run`:
    row files are streamed when their metrics are named (or come from a config) and no
    option needs every case at once. The config and metrics are resolved only for row
    files (the loaded path resolves its own, against the loaded data)."""
    from assay.api_inputs import resolve_config, resolve_metrics
    from assay.engine.executors import LocalExecutor
    from assay.session.plan import RunFacts, plan_run

    local = executor == "local" or isinstance(executor, LocalExecutor)
    files = row_files(dataset, format) if local else None
    cfg = resolve_config(config, dataset) if files else None
    named = metrics is not None or cfg is not None
    metric_objects = resolve_metrics(metrics, cfg, []) if files and named else []
    facts = RunFacts(
        files=files,
        metrics=metric_objects if named else None,
        agent=agent is not None,
        local=local,
        runs=runs,
        mlflow=mlflow,
        adk_history=adk_history,
        observers=observers,
        whole_result=keep_cases is None,
    )
    return Planned(plan_run(facts), files or [], cfg, metric_objects)


async def aevaluate_streamed(
    planned: Planned,
    agent: AgentInput,
    *,
    runs: int | None,
    concurrency: int,
    timeout_s: float | None,
    store: StoreInput,
    mapping: Mapping[str, str] | None,
    run_name: str | None,
    judge: str | None,
    judge_concurrency: int,
    use_cache: bool,
    tool_behavior: ToolBehavior | str,
    run_method: RunMethod | str | None,
    simulator: SimulatorOptions | None,
    persona_source: str | None,
    fresh: bool,
    keep_cases: int | None,
    observers: Sequence[RunObserver] = (),
) -> EvalResult:
    """`aevaluate`'s run of `agent` over the row files `planned` (its driver
    `Driver.AGENT_ROWS`), streamed."""
    from assay.api_inputs import (
        environment,
        open_store,
        resolve_agent,
        run_options,
    )
    from assay.engine.judge_options import JudgeRunOptions
    from assay.session.agent_stream import AgentStreamingRun
    from assay.session.run_session import RunSession

    files, cfg, metric_objects = planned.files, planned.config, planned.metrics
    options = run_options(
        runs=runs,
        concurrency=concurrency,
        timeout_s=timeout_s,
        tool_behavior=tool_behavior,
        run_method=run_method,
        simulator=simulator,
    )
    adapter = resolve_agent(agent)
    assert adapter is not None
    label = redact_url(agent) if isinstance(agent, str) else getattr(adapter, "name", None)
    # The loaded run's identity, so either resumes the other's interrupted run.
    session = RunSession(
        (),
        metric_objects,
        agent=adapter,
        options=options,
        config=cfg.dump() if cfg is not None else {},
        agent_label=label,
        persona_source=persona_source,
    )
    assert session.identity is not None
    identity = session.identity.as_kwargs()
    identity["eval_set_ids"] = [f.eval_set_id for f in files]
    opened = open_store(store)
    try:
        outcome = await AgentStreamingRun(
            files,
            metric_objects,
            adapter,
            identity,
            options=options,
            judges=JudgeRunOptions(model=judge, concurrency=judge_concurrency, use_cache=use_cache),
            store=opened,
            mapping=dict(mapping) if mapping is not None else None,
            fresh=fresh,
            name=run_name,
            # Every case result unless the caller bounded them (`keep_at_most`'s rule).
            keep_all_up_to=sys.maxsize if keep_cases is None else keep_cases,
            keep_failing=keep_cases or 0,
            observers=observers,
            environment=environment() if opened is not None else None,
        ).arun()
    finally:
        if opened is not None and opened is not store:  # a Store given stays open
            opened.close()
    if outcome.error is not None:
        raise outcome.error
    result = streamed_result(outcome, metric_objects, files, agent_run=True)
    for observer in observers:
        observer.on_finish(result)
    return result


def streamed_result(
    outcome: StreamOutcome, metrics: list[Metric], files: list[RowFile], *, agent_run: bool
) -> EvalResult:
    """The `EvalResult` of a streamed run: its kept cases, and the whole run's summary
    when it did not keep them all."""
    from assay.engine.aggregate import build_result

    result = build_result(
        outcome.kept,
        metrics,
        agent_run=agent_run,
        eval_set_id=files[0].eval_set_id if len(files) == 1 else None,
    )
    if not outcome.kept_all:  # the summary covers every row, not only the kept cases
        result.summary = outcome.summary
    result.run_id = outcome.run_id
    return result


def check_keep_cases(keep_cases: object) -> None:
    """`keep_cases` is None or a count, checked before anything runs."""
    if keep_cases is None:
        return
    if isinstance(keep_cases, bool) or not isinstance(keep_cases, int) or keep_cases < 0:
        raise ConfigError(
            f"keep_cases={keep_cases!r}: give None (every case result) or a count >= 0"
            " (at most that many case results, the first that did not pass)"
        )


def keep_at_most(
    result: EvalResult,
    keep_cases: int | None,
    metrics: Sequence[Metric],
    *,
    agent_run: bool,
    observers: Sequence[RunObserver] = (),
) -> EvalResult:
    """A loaded run's result as a streamed run keeps it: every case result when there
    are at most `keep_cases` (or no bound), else the first `keep_cases` that did not
    pass, with their rows; the summary still covers the whole run. With a bound, the
    `observers` (given to the run through `finish_later`) get this result at the end,
    as a streamed run's do."""
    from assay.engine.aggregate import build_result

    trimmed = result
    if keep_cases is not None and len(result.cases) > keep_cases:
        kept = [case for case in result.cases if case.status is not Status.PASSED][:keep_cases]
        trimmed = build_result(kept, metrics, agent_run=agent_run, eval_set_id=result.eval_set_id)
        trimmed.summary, trimmed.repeated = result.summary, result.repeated
        trimmed.run_id = result.run_id
    if keep_cases is not None:
        for observer in observers:
            observer.on_finish(trimmed)
    return trimmed


def finish_later(observers: Sequence[RunObserver], keep_cases: int | None) -> Sequence[RunObserver]:
    """The observers a loaded run is given: with `keep_cases`, their `on_finish` waits
    for `keep_at_most`'s result (the one returned) instead of the engine's whole one."""
    if keep_cases is None:
        return observers
    return [_FinishLater(observer) for observer in observers]


class _FinishLater:
    def __init__(self, observer: RunObserver) -> None:
        self.observer = observer

    def on_start(self, total: int) -> None:
        self.observer.on_start(total)

    def on_case_done(self, result: CaseResult) -> Awaitable[None] | None:
        return self.observer.on_case_done(result)

    def on_finish(self, result: EvalResult) -> None:
        return None  # told by `keep_at_most`
