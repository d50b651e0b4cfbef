"""The background executor of evaluation runs, and resuming them after a restart.

With an agent spec (`assay serve --agent SPEC`) each run's task supervises a worker
process that executes it (`_run_process`, `run_worker`); otherwise (an app given a
Python agent object, an in-memory store) the task executes the run itself.

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
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError
from assay.service._run_session import fail_run, interrupt_run, run_session
from assay.service.settings import ServiceRunSettings
from assay.session.run_session import RunSession
from assay.store.eval_results import SERVICE_KEY, EvaluationResults
from assay.store.exceptions import store_unavailable
from assay.store.lease import pid_alive
from assay.store.runs import RunInfo
from assay.store.schema import RunStatus
from assay.store.types import utcnow

if TYPE_CHECKING:
    from assay.service._run_process import RunProcesses
    from assay.service.context import ServiceContext

logger = logging.getLogger("assay.service.runs")

HEARTBEAT_S = 30.0
LEASE_S = 120.0


def owner_record(instance: str) -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "instance": instance}


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
        if isinstance(pid, int) and pid != os.getpid() and not pid_alive(pid):
            return False
    seen = run.updated_at or run.created_at
    return utcnow() - seen < timedelta(seconds=lease_s)


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
        # Set by `runs.attach` when runs execute in worker processes (see _run_process).
        self.worker: RunProcesses | None = None

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
        if self.worker is not None:
            self._give_up(run_id, task)  # its worker is killed at once
            return True
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
        if self.worker is not None:
            self.worker.kill(run_id)
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

    def is_lost(self, run_id: str) -> bool:
        """Whether the run's state is written elsewhere (cancelled, deleted, taken over)."""
        return run_id in self._lost

    async def _execute(self, run_id: str) -> None:
        store = self.ctx.store
        session: RunSession | None = None
        in_worker = False
        try:
            run = await asyncio.to_thread(store.get_run, run_id)
            settings = ServiceRunSettings.of_run(run)
            self.active[run_id] = (run.app, tuple(settings.evaluations))
            if self.worker is not None:
                in_worker = True
                await self.worker.execute(run.app, run_id)
                return
            agent = self.ctx.agent
            if agent is None:
                raise AssayError("no agent to run: start assay serve with --agent")
            on_stored = functools.partial(self._on_stored, run.app)
            session = run_session(
                store,
                run,
                settings,
                agent,
                on_stored,
                timeout_s=self.ctx.case_timeout_s,
                prices_file=self.ctx.prices_file,
            )
            self._sessions[run_id] = session
            if run_id in self._lost:
                session.abandon()
            await session.arun()
        except asyncio.CancelledError:
            lost = run_id in self._lost
            self._lost.discard(run_id)
            if not lost and not in_worker and (session is None or not session.opened):
                # Stopped before the session took the run: hand it to the next server.
                await asyncio.to_thread(interrupt_run, store, run_id)
            raise
        except Exception as exc:  # a broken run must not take the server down
            if store_unavailable(exc):
                # An outage, not the run's fault: leave it RUNNING; its heartbeat stops,
                # so a server (this one included) resumes it within the lease.
                logger.warning("evaluation run %s paused, the store is away: %s", run_id, exc)
                return
            logger.exception("evaluation run %s failed", run_id)
            if session is None or not session.opened:  # else the session marked it ERROR
                await asyncio.to_thread(fail_run, store, run_id, f"{type(exc).__name__}: {exc}")
        finally:
            if in_worker:
                self._lost.discard(run_id)
