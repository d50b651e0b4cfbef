"""`LocalExecutor`: the jobs as asyncio tasks on the run's event loop (`engine.schedule`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from assay.engine.schedule import Schedule

JobT = TypeVar("JobT")
ResultT = TypeVar("ResultT")


class LocalExecutor:
    """`workers` slots of the run's `Schedule` take jobs in order until none is left.

    Structured: the slots live in one `asyncio.TaskGroup`, so the first to raise (an
    observer's store write failing, a bug) cancels the others; none outlives the run's
    judge pool or simulator. The error is re-raised as itself, not as an
    ExceptionGroup, so callers keep catching the errors they know.
    """

    async def run(
        self,
        jobs: Sequence[JobT],
        work: Callable[[JobT], Awaitable[ResultT]],
        done: Callable[[int, ResultT], Awaitable[None] | None],
        *,
        workers: int,
    ) -> None:
        await Schedule(work, workers=max(1, workers), done=done).run(jobs)
