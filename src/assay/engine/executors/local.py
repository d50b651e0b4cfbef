"""`LocalExecutor`: the jobs as asyncio tasks on the run's event loop, in one task group."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

JobT = TypeVar("JobT")
ResultT = TypeVar("ResultT")


class LocalExecutor:
    """`workers` tasks take jobs in order from one queue until it is empty.

    Structured: the tasks live in one `asyncio.TaskGroup`, so the first to raise (an
    observer's store write failing, a bug) cancels the others; none outlives the run's
    judge pool or simulator. The error is re-raised as itself, not as an
    ExceptionGroup, so callers keep catching the errors they know.
    """

    async def run(
        self,
        jobs: Sequence[JobT],
        work: Callable[[JobT], Awaitable[ResultT]],
        done: Callable[[int, ResultT], None],
        *,
        workers: int,
    ) -> None:
        queue = iter(enumerate(jobs))

        async def worker() -> None:
            for i, job in queue:
                done(i, await work(job))

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(max(1, min(workers, len(jobs)))):
                    group.create_task(worker())
        except BaseExceptionGroup as grouped:
            raise grouped.exceptions[0] from None
