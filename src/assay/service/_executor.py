"""The background executor of evaluation runs, and resuming them after a restart.

A run is an asyncio task on the server's event loop driving a `RunSession` (the same
run lifecycle as `assay eval` and `assay.evaluate`) over the evaluations snapshotted
into the run's settings (`ServiceRunSettings`) when it started. Each finished case
is stored at once (a `StoreRecorder` writing batches of one from its own thread, so
the loop never waits on the database), which is what makes progress readable while
the run goes on and lets a restarted server resume where the run stopped.

Ownership: a run's config names its owner (host, process id, executor instance).
When the app starts, every unfinished service run whose owner is gone — stopped
gracefully (INTERRUPTED), a dead process on this host, or any server (this process's
other apps included) silent for `LEASE_S` — is claimed with a compare-and-set
(of several servers starting at once exactly one wins) and resumed, skipping the
case runs already stored. Owners refresh their runs' update time every
`HEARTBEAT_S`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from assay.agents.tools import ToolBehavior
from assay.engine.build import build_metrics
from assay.engine.judging import JudgeRunOptions
from assay.engine.replay import RunMethod
from assay.engine.runner import RunOptions, runs_for
from assay.errors import AssayError
from assay.formats import ces
from assay.model.core import EvalCase, EvalSet
from assay.model.results import CaseResult
from assay.service.settings import ServiceRunSettings
from assay.session.run_session import RunSession
from assay.store.eval_results import SERVICE_KEY, EvaluationResults
from assay.store.recorder import StoreRecorder
from assay.store.runs import RunInfo
from assay.store.schema import RunStatus
from assay.store.types import utcnow

if TYPE_CHECKING:
    from assay.service.context import ServiceContext
    from assay.store import Store

logger = logging.getLogger("assay.service.runs")

EVAL_SET_ID = "evaluations"
"""The eval set id of every service run's cases (the case id is the evaluation id)."""

HEARTBEAT_S = 30.0
LEASE_S = 120.0


def owner_record(instance: str) -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "instance": instance}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_alive(run: RunInfo, lease_s: float = LEASE_S) -> bool:
    """Whether the process that owns an unfinished run may still be executing it.

    Only a heartbeat within the lease proves an owner alive, wherever it runs: a live
    process id on this host does not (after a crash the id may belong to another
    process by now). A dead process id on this host or an executor of this process that
    A dead process id on this host proves it gone at once, without waiting for the
    lease to run out. (An app of this process that stopped handed its runs back as
    INTERRUPTED; one that could not is freed by the lease.)
    """
    if run.status != RunStatus.RUNNING.value:
        return False  # INTERRUPTED: its owner stopped and handed it back
    owner = run.config.get(SERVICE_KEY, {}).get("owner") or {}
    if owner.get("host") == socket.gethostname():
        pid = owner.get("pid")
        if isinstance(pid, int) and pid != os.getpid() and not _pid_alive(pid):
            return False
    seen = run.updated_at or run.created_at
    return utcnow() - seen < timedelta(seconds=lease_s)


def evaluation_case(evaluation_id: str, body: Mapping[str, Any]) -> EvalCase:
    """An evaluation resource's body as the EvalCase the engine runs (id: its id)."""
    data = {k: v for k, v in body.items() if k != "name"}
    data["name"] = evaluation_id
    evalset = ces.load_data(data, file=f"evaluations/{evaluation_id}", mapping=None)
    return evalset.cases[0]


def run_plan(settings: ServiceRunSettings) -> tuple[list[EvalCase], RunOptions]:
    """The cases and run options of a service run, from its stored settings."""
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

    def on_case_done(self, result: CaseResult) -> None:
        with self._received_lock:
            self._received.append(result.case_id)
        super().on_case_done(result)

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


class RunExecutor:
    """Runs evaluation runs in the background of one app (see the module docstring)."""

    def __init__(
        self,
        ctx: ServiceContext,
        results: EvaluationResults,
        on_stored: Callable[[str, list[str]], None],
        *,
        lease_s: float = LEASE_S,
    ) -> None:
        self.ctx = ctx
        self.lease_s = lease_s
        # Heartbeats (and looks for orphans) several times per lease, so one late beat
        # never costs the run.
        self.heartbeat_s = min(HEARTBEAT_S, lease_s / 4)
        # Runs another server took over while this one was executing them.
        self._lost: set[str] = set()
        self.results = results
        self._on_stored = on_stored
        self.instance = uuid.uuid4().hex
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._sessions: dict[str, RunSession] = {}
        # run id -> (app, evaluation ids) of the runs executing here
        self.active: dict[str, tuple[str, tuple[str, ...]]] = {}

    def owner(self) -> dict[str, Any]:
        return owner_record(self.instance)

    def submit(self, run_id: str) -> None:
        """Start executing a stored RUNNING run (callable from any thread)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            raise AssayError("the run executor is not running (the app has not started)")
        loop.call_soon_threadsafe(self._spawn, run_id)

    def cancel(self, run_id: str) -> bool:
        """Stop a run executing here (before deleting it); False if it is not here."""
        task = self._tasks.get(run_id)
        if task is None or self._loop is None:
            return False
        self._loop.call_soon_threadsafe(task.cancel)
        return True

    def abandon(self, run_id: str) -> bool:
        """Stop executing a run whose final state was written elsewhere (a cancelled run):
        what finished is kept and the stored state is left alone."""
        task = self._tasks.get(run_id)
        if task is None or self._loop is None:
            return False
        self._give_up(run_id, task)
        return True

    def _give_up(self, run_id: str, task: asyncio.Task[None]) -> None:
        """Cancel a run's task leaving its stored state alone (written elsewhere)."""
        self._lost.add(run_id)
        session = self._sessions.get(run_id)
        if session is not None:
            session.abandon()
        assert self._loop is not None
        self._loop.call_soon_threadsafe(task.cancel)

    def running_runs_of(self, app: str, evaluation_id: str) -> list[str]:
        return [
            rid for rid, (a, evals) in self.active.items() if a == app and evaluation_id in evals
        ]

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self._loop = asyncio.get_running_loop()
        beat = asyncio.create_task(self._heartbeat())
        try:
            await asyncio.to_thread(self._resume_orphans)
            yield
        finally:
            beat.cancel()
            tasks = list(self._tasks.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, beat, return_exceptions=True)
            self._loop = None

    def _resume_orphans(self) -> None:
        for run in self.results.unfinished_service_runs():
            if run.id in self._tasks or owner_alive(run, self.lease_s):
                continue
            config = dict(run.config)
            config[SERVICE_KEY] = {**config[SERVICE_KEY], "owner": self.owner()}
            if self.results.claim(run, config):
                logger.info("resuming evaluation run %s (its previous server stopped)", run.id)
                assert self._loop is not None
                self._loop.call_soon_threadsafe(self._spawn, run.id)

    def _spawn(self, run_id: str) -> None:
        if run_id in self._tasks:
            return
        task = asyncio.get_running_loop().create_task(self._execute(run_id))
        self._tasks[run_id] = task
        task.add_done_callback(lambda _t: self._forget(run_id))

    def _forget(self, run_id: str) -> None:
        self._tasks.pop(run_id, None)
        self._sessions.pop(run_id, None)
        self.active.pop(run_id, None)

    async def _heartbeat(self) -> None:
        """Keep this server's runs alive, give up runs taken over, adopt orphans.

        Orphans are looked for on every beat, not only at start-up: a run whose server
        died while this one was already up is resumed within a lease.
        """
        while True:
            await asyncio.sleep(self.heartbeat_s)
            for run_id, task in list(self._tasks.items()):
                try:
                    ours = await asyncio.to_thread(self.results.heartbeat, run_id, self.instance)
                except AssayError as exc:
                    logger.warning("heartbeat of evaluation run %s failed: %s", run_id, exc)
                    continue
                if not ours and not task.done():
                    # Silent longer than the lease (e.g. the database was away): another
                    # server owns the run now. Stop without touching its state.
                    logger.warning("evaluation run %s was taken over by another server", run_id)
                    self._give_up(run_id, task)
            try:
                await asyncio.to_thread(self._resume_orphans)
            except AssayError as exc:
                logger.warning("looking for orphaned evaluation runs failed: %s", exc)

    async def _execute(self, run_id: str) -> None:
        store = self.ctx.store
        run = await asyncio.to_thread(store.get_run, run_id)
        session: RunSession | None = None
        try:
            settings = ServiceRunSettings.of_run(run)
            self.active[run_id] = (run.app, tuple(settings.evaluations))
            agent = self.ctx.agent
            if agent is None:
                raise AssayError("no agent to run: start assay serve with --agent")
            cases, options = run_plan(settings)
            total = total_runs(cases, options)
            on_stored = functools.partial(self._on_stored, run.app)
            session = RunSession(
                [EvalSet(id=EVAL_SET_ID, cases=cases)],
                build_metrics(names=settings.metrics),
                agent=agent,
                options=options,
                judges=JudgeRunOptions(model=settings.judge_model),
                store=store,
                continue_run=run_id,
                recorder=lambda db, rid: _Recorder(db, rid, total, on_stored),
                offload=True,
            )
            self._sessions[run_id] = session
            if run_id in self._lost:
                session.abandon()
            await session.arun()
        except asyncio.CancelledError:
            lost = run_id in self._lost
            self._lost.discard(run_id)
            if not lost and (session is None or not session.opened):
                # Stopped before the session took the run: hand it to the next server.
                await asyncio.to_thread(_interrupt, store, run_id)
            raise
        except Exception as exc:  # a broken run must not take the server down
            logger.exception("evaluation run %s failed", run_id)
            if session is None or not session.opened:  # else the session marked it ERROR
                await asyncio.to_thread(_fail, store, run_id, f"{type(exc).__name__}: {exc}")


def _interrupt(store: Store, run_id: str) -> None:
    store.finish_run(run_id, summary=None, status=RunStatus.INTERRUPTED.value)


def _fail(store: Store, run_id: str, message: str) -> None:
    store.finish_run(run_id, summary=None, status=RunStatus.ERROR.value, error=message)
