"""What executes one service run, wherever it runs: its plan, session and recorder.

Shared by the in-process executor (`_executor.RunExecutor`) and the run-worker process
(`run_worker`), so both drive the same `RunSession` over the run's stored settings.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from assay.agents.tools import ToolBehavior
from assay.core.cases import EvalCase, EvalSet
from assay.core.results import CaseResult
from assay.engine.build import build_metrics
from assay.engine.judge_options import JudgeRunOptions
from assay.engine.replay import RunMethod
from assay.engine.runner import RunOptions, runs_for
from assay.formats import ces
from assay.models.cost import CapNames
from assay.service.settings import ServiceRunSettings
from assay.session.plan import Driver, RunFacts, plan_run
from assay.session.run_session import RunSession
from assay.store.recorder import StoreRecorder
from assay.store.runs import RunInfo
from assay.store.schema import RunStatus

if TYPE_CHECKING:
    from assay.agents.base import Agent
    from assay.store import Store

_log = logging.getLogger(__name__)

EVAL_SET_ID = "evaluations"
"""The eval set id of every service run's cases (the case id is the evaluation id)."""


def evaluation_case(evaluation_id: str, body: Mapping[str, object]) -> EvalCase:
    """An evaluation resource's body as the EvalCase the engine runs (id: its id)."""
    data = {k: v for k, v in body.items() if k != "name"}
    data["name"] = evaluation_id
    evalset = ces.load_data(data, file=f"evaluations/{evaluation_id}", mapping=None)
    return evalset.cases[0]


def run_plan(
    settings: ServiceRunSettings, timeout_s: float | None = None
) -> tuple[list[EvalCase], RunOptions]:
    """The cases and run options of a service run, from its stored settings; `timeout_s`:
    per case run (the executing server's `--case-timeout`; None: the engine's default)."""
    cases = [evaluation_case(eid, body) for eid, body in settings.evaluations.items()]
    simulator = None
    if settings.user_model:
        from assay.simulation import SimulatorOptions
        from assay.simulation.personas import personas_from_resources

        simulator = SimulatorOptions(
            model=settings.user_model, personas=personas_from_resources(settings.personas)
        )
    options = RunOptions(
        runs=settings.run_count,
        tool_behavior=ToolBehavior.parse(settings.tool_behavior),
        run_method=RunMethod.parse(settings.golden_run_method),
        simulator=simulator,
    )
    if timeout_s is not None:
        options.timeout_s = timeout_s
    return cases, options


def total_runs(cases: list[EvalCase], options: RunOptions) -> int:
    return sum(runs_for(case, options, agent_given=True) for case in cases)


class _Recorder(StoreRecorder):
    """Stores each result as soon as it arrives and announces it once committed; the
    total is the whole run's (a resumed run's engine only counts what is left)."""

    def __init__(
        self, store: Store, run_id: str, total: int, on_stored: Callable[[list[str]], None]
    ) -> None:
        super().__init__(store, run_id, batch_size=1, flush_interval_s=0.1)
        self._total = total
        self._on_stored = on_stored
        self._received: list[str] = []
        self._received_lock = threading.Lock()

    def on_start(self, total: int) -> None:
        super().on_start(total)
        self._store.set_total(self.run_id, self._total)

    def on_case_done(self, result: CaseResult) -> Awaitable[None] | None:
        with self._received_lock:
            self._received.append(result.case_id)
        return super().on_case_done(result)

    def _write_pending(self) -> None:
        # A result arriving between these two lines is announced with the next write.
        with self._received_lock:
            announced, self._received = self._received, []
        try:
            super()._write_pending()
        except BaseException:
            with self._received_lock:
                self._received[:0] = announced
            raise
        if announced:
            self._on_stored(announced)


def run_session(
    store: Store,
    run: RunInfo,
    settings: ServiceRunSettings,
    agent: Agent,
    on_stored: Callable[[list[str]], None],
    *,
    timeout_s: float | None = None,
    prices_file: str | None = None,
) -> RunSession:
    """The `RunSession` that executes (or resumes) the stored service run `run`, its
    judges capped by the budget stored with it; `prices_file`: the executing server's
    `--prices`."""
    cases, options = run_plan(settings, timeout_s)
    total = total_runs(cases, options)
    metrics = build_metrics(names=settings.metrics)
    # The evaluations are held in the store, never row files: `session.plan` loads them.
    plan = plan_run(RunFacts(files=None, metrics=metrics, agent=True, runs=options.runs))
    assert plan.driver is Driver.SESSION, plan
    _log.debug("run %s: %s", run.id, plan.notice())
    return RunSession(
        [EvalSet(id=EVAL_SET_ID, cases=cases)],
        metrics,
        agent=agent,
        options=options,
        judges=judge_options(settings, prices_file),
        store=store,
        continue_run=run.id,
        recorder=lambda db, rid: _Recorder(db, rid, total, on_stored),
        offload=True,
    )


def judge_options(settings: ServiceRunSettings, prices_file: str | None) -> JudgeRunOptions:
    """How the run's judges are called: its judge model, under its stored budget."""
    budget = settings.judge_budget
    return JudgeRunOptions(
        model=settings.judge_model,
        max_usd=budget.max_usd if budget is not None else None,
        max_calls=budget.max_calls if budget is not None else None,
        prices_file=prices_file,
        cap_names=SERVICE_CAPS,
    )


#: the caps as a service run has them: the run's stored budget (the server's
#: `--max-judge-*-per-run`, or lower as the request's `assayJudgeBudget` asked)
SERVICE_CAPS = CapNames(
    usd="this run's assayJudgeBudget.maxUsd",
    calls="this run's assayJudgeBudget.maxCalls",
    prices="assay serve --prices FILE",
)


def interrupt_run(store: Store, run_id: str) -> None:
    store.finish_run(run_id, summary=None, status=RunStatus.INTERRUPTED.value)


def fail_run(store: Store, run_id: str, message: str) -> None:
    store.finish_run(run_id, summary=None, status=RunStatus.ERROR.value, error=message)
