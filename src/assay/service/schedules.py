"""Scheduled evaluation runs: the CES resource's server-set fields, and the scheduler.

A `scheduledEvaluationRuns` resource holds a run request (`request`, as RunEvaluation
takes it), a `schedulingConfig` and `active` (proto3: unset is false, so a schedule
runs only once `active` is set). The server keeps `totalExecutions`,
`nextScheduledExecutionTime` and `lastCompletedRun`, plus `lastStartedRun` (assay's
own; Google's client does not show it).

The `Scheduler` lives in the `assay serve` process: every `tick_s` seconds, and at once
when a schedule is created or changed, it starts the run of every active schedule that
is due, within that schedule's project and location. Taking a due schedule is a
compare-and-set on its etag (advancing `nextScheduledExecutionTime`), so of several
servers over one store exactly one starts each run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from assay.errors import AssayError
from assay.service import runs
from assay.service._schedule_times import first_time, next_time, parse_time, start_of
from assay.service.errors import ServiceError
from assay.store import EtagMismatchError, Resource
from assay.store.namespace import Namespace, namespace_scope
from assay.store.schema import RunStatus
from assay.store.types import utcnow

if TYPE_CHECKING:
    from assay.service.context import ServiceContext

logger = logging.getLogger("assay.service.schedules")

KIND = "scheduledEvaluationRuns"
TICK_S = 30.0
_WRITE_ATTEMPTS = 5


def rfc3339(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def derive(body: Mapping[str, Any], previous: Resource | None, now: datetime) -> dict[str, Any]:
    """`body` with the server-set fields filled in, after a create (`previous` None) or
    an update: a new or changed schedule (or one set active again) gets its next time."""
    out = dict(body)
    before = previous.body if previous is not None else {}
    out["totalExecutions"] = int(before.get("totalExecutions", 0))
    config = out["schedulingConfig"]
    changed = previous is None or before.get("schedulingConfig") != config
    reactivated = bool(out.get("active")) and not before.get("active")
    if changed or reactivated or "nextScheduledExecutionTime" not in out:
        start = start_of(config, now if previous is None else previous.create_time)
        if out["totalExecutions"] == 0 and changed:
            upcoming: datetime | None = first_time(config, start)
        else:
            upcoming = next_time(config, start, now)
        if upcoming is None:
            out.pop("nextScheduledExecutionTime", None)
        else:
            out["nextScheduledExecutionTime"] = rfc3339(upcoming)
    return out


class Scheduler:
    """Starts the runs of due schedules (see the module docstring)."""

    def __init__(
        self,
        ctx: ServiceContext,
        *,
        tick_s: float = TICK_S,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.ctx = ctx
        self.tick_s = tick_s
        self.clock = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    def wake(self) -> None:
        """Look for due schedules now (callable from any thread)."""
        loop, event = self._loop, self._wake
        if loop is not None and event is not None and not loop.is_closed():
            loop.call_soon_threadsafe(event.set)

    def tick(self) -> list[str]:
        """Start every due run now; returns the names of the runs started."""
        now = self.clock()
        started = []
        for schedule in self.ctx.store.resources.list_all(KIND):
            with namespace_scope(Namespace(schedule.project, schedule.location)):
                try:
                    self._settle(schedule)
                    if schedule.body.get("active") and _due(schedule, now):
                        run = self._fire(schedule, now)
                        if run is not None:
                            started.append(run)
                except (AssayError, ServiceError) as exc:
                    logger.warning("scheduled evaluation run %s: %s", _name(schedule), exc)
        return started

    def _fire(self, schedule: Resource, now: datetime) -> str | None:
        body = dict(schedule.body)
        config = body["schedulingConfig"]
        upcoming = next_time(config, start_of(config, schedule.create_time), now)
        body["totalExecutions"] = int(body.get("totalExecutions", 0)) + 1
        if upcoming is None:
            body.pop("nextScheduledExecutionTime", None)
        else:
            body["nextScheduledExecutionTime"] = rfc3339(upcoming)
        try:
            taken = self.ctx.store.resources.put(
                schedule.app, KIND, schedule.id,
                display_name=schedule.display_name, body=body, etag=schedule.etag,
            )  # fmt: skip
        except EtagMismatchError:
            return None  # changed or taken meanwhile: the next tick sees the new version
        request = dict(body["request"])
        request["scheduledEvaluationRun"] = _name(schedule)
        request.setdefault("displayName", f"{schedule.display_name} #{body['totalExecutions']}")
        operation = runs.start_run(self.ctx, schedule.app, request)
        run_name = str(operation["metadata"]["evaluationRun"])
        logger.info("scheduled evaluation run %s started %s", _name(schedule), run_name)
        self._record(taken, {"lastStartedRun": run_name})
        return run_name

    def _settle(self, schedule: Resource) -> None:
        """Fill in `lastCompletedRun` once the last started run completed."""
        started = schedule.body.get("lastStartedRun")
        if not started or started == schedule.body.get("lastCompletedRun"):
            return
        try:
            run = self.ctx.store.get_run(started.rsplit("/", 1)[-1])
        except AssayError:
            return  # deleted meanwhile
        if run.status == RunStatus.COMPLETED.value:
            self._record(schedule, {"lastCompletedRun": started})

    def _record(self, schedule: Resource, fields: Mapping[str, object]) -> None:
        current: Resource | None = schedule
        for _attempt in range(_WRITE_ATTEMPTS):
            if current is None:
                return
            try:
                self.ctx.store.resources.put(
                    current.app, KIND, current.id, display_name=current.display_name,
                    body={**current.body, **fields}, etag=current.etag,
                )  # fmt: skip
                return
            except EtagMismatchError:
                current = self.ctx.store.resources.get(schedule.app, KIND, schedule.id)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        task = asyncio.create_task(self._run())
        try:
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            self._loop = self._wake = None

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            try:
                await asyncio.to_thread(self.tick)
            except AssayError as exc:  # the store away: try again at the next tick
                logger.warning("looking for due scheduled evaluation runs failed: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.tick_s)
            self._wake.clear()


def _due(schedule: Resource, now: datetime) -> bool:
    upcoming = schedule.body.get("nextScheduledExecutionTime")
    return isinstance(upcoming, str) and parse_time(upcoming, "nextScheduledExecutionTime") <= now


def _name(schedule: Resource) -> str:
    return f"apps/{schedule.app}/{KIND}/{schedule.id}"


_SCHEDULERS: dict[int, Scheduler] = {}


def scheduler_of(ctx: ServiceContext) -> Scheduler:
    """The scheduler of `ctx` (created once per app)."""
    found = _SCHEDULERS.get(id(ctx))
    if found is None or found.ctx is not ctx:
        found = Scheduler(ctx)
        key = id(ctx)
        _SCHEDULERS[key] = found
        weakref.finalize(ctx, _SCHEDULERS.pop, key, None)
    return found


def install(_app: object, ctx: ServiceContext) -> contextlib.AbstractAsyncContextManager[None]:
    """Run the scheduler for the app's lifetime."""
    return scheduler_of(ctx).lifespan()
