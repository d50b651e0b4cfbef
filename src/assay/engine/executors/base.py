"""The executor protocol: run jobs, at most `workers` at once, report each result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

JobT = TypeVar("JobT")
MidT = TypeVar("MidT")
ResultT = TypeVar("ResultT")

Work = Callable[[JobT], Awaitable[ResultT]]
"""Runs one job (a case run) to its result; never raises for the agent or a metric."""
Done = Callable[[int, ResultT], None]
"""Receives each result with the index of its job, as soon as it completes."""


class Executor(Protocol):
    """Runs a run's jobs. Returns when every job is done; if `work` or `done` raises,
    the jobs still running are cancelled and the error is raised as itself."""

    async def run(
        self,
        jobs: Sequence[JobT],
        work: Callable[[JobT], Awaitable[ResultT]],
        done: Callable[[int, ResultT], Awaitable[None] | None],
        *,
        workers: int,
    ) -> None: ...


@dataclass(frozen=True)
class StagedWork(Generic[JobT, MidT, ResultT]):
    """A job's work in two parts, for executors that run jobs in other processes.

    - `remote(jobs)`: the part that may run anywhere (an agent conversation, the
      deterministic scores); it and the jobs must pickle, and it must not need anything
      of the driver's process (the store, the judge cache, the event loop). Takes a
      batch of jobs (`batch` at most) so cheap jobs travel together.
    - `finish(job, mid)`: the part that stays on the driver (the judged scores, through
      the run's judge pool and cache); its result goes to `done`.
    - `failed(job, message)`: the result of a job whose remote part raised or whose
      process died, so one lost task fails its case run and not the run.

    Called directly it runs both parts in this process, so every executor can run it.
    """

    remote: Callable[[Sequence[JobT]], Awaitable[list[MidT]]]
    finish: Callable[[JobT, MidT], Awaitable[ResultT]]
    failed: Callable[[JobT, str], ResultT]
    batch: int = 1

    async def __call__(self, job: JobT) -> ResultT:
        (mid,) = await self.remote([job])
        return await self.finish(job, mid)
