"""The one scheduler of case runs: slots, a read-ahead window, results in file order.

Every run's case runs go through `Schedule`: the loaded run's (`LocalExecutor`, and
`RayExecutor`, whose slots each hold one Ray task in flight), and the streamed agent
run's (`session.agent_stream`, whose rows are read as slots free). `workers` slots each
take the next job from an iterable read lazily, await its work and go straight on to
the next (no task or wake-up per job), so memory holds the jobs in flight, not the input.

Each result goes to `done` as it completes, before its slot takes new work: a caller
that stores it there loses only the jobs in flight to a kill. With `in_order`, each
result goes there too, in the jobs' order, as soon as every earlier job's did (reports
written in file order): a job taken waits in the window until it is released, and
`window` bounds the window, so when the earliest job is slow, reading stops once the
window is full of finished jobs behind it. After a stop (a cancelled run, an error),
`held()` gives the finished results not yet released, in order.

The first error of a job, `done` or `in_order`, or of reading the jobs, cancels the
slots still running and is raised as itself (not as an ExceptionGroup).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sized
from typing import Generic, TypeVar

JobT = TypeVar("JobT")
ResultT = TypeVar("ResultT")


class _Taken(Generic[ResultT]):
    """A job of the window: its index, then its result until it is released."""

    __slots__ = ("finished", "index", "result")

    def __init__(self, index: int) -> None:
        self.index = index
        self.finished = False
        self.result: ResultT | None = None


class Schedule(Generic[JobT, ResultT]):
    """Runs `work` over jobs, `workers` at a time (see the module docstring).

    `done(i, result)`: each result with its job's index, in completion order; an
    awaitable it returns is awaited before the slot takes new work.
    `in_order(i, result)`: the same, in the jobs' order. `window`: at most this many
    jobs taken and not yet released in order (only with `in_order`; None: no bound).
    """

    def __init__(
        self,
        work: Callable[[JobT], Awaitable[ResultT]],
        *,
        workers: int,
        done: Callable[[int, ResultT], Awaitable[None] | None] | None = None,
        in_order: Callable[[int, ResultT], None] | None = None,
        window: int | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"a schedule needs at least one worker, got {workers}")
        if window is not None and (window < 1 or in_order is None):
            raise ValueError("window must be at least 1, and is for a schedule with in_order")
        self.work = work
        self.workers = workers
        self.done = done
        self.in_order = in_order
        self.window = window
        self._held: deque[_Taken[ResultT]] = deque()

    @property
    def waiting(self) -> int:
        """Jobs taken and not yet released in order (0 without `in_order`)."""
        return len(self._held)

    def held(self) -> list[tuple[int, ResultT]]:
        """The finished results not yet released in order (after a stop), in order."""
        return [(t.index, t.result) for t in self._held if t.finished]  # type: ignore[misc]

    async def run(self, jobs: Iterable[JobT]) -> None:
        """Run every job of `jobs` (read lazily); return when all are done."""
        source = enumerate(jobs)
        slots = self.workers
        if isinstance(jobs, Sized):
            slots = max(1, min(slots, len(jobs)))
        room = asyncio.Condition()
        window = self.window
        held = self._held
        ordered = self.in_order is not None

        def release() -> None:
            assert self.in_order is not None
            while held and held[0].finished:
                taken = held.popleft()
                self.in_order(taken.index, taken.result)  # type: ignore[arg-type]

        async def slot() -> None:
            while True:
                if window is not None and len(held) >= window:
                    async with room:
                        await room.wait_for(lambda: len(held) < window)
                next_job = next(source, None)
                if next_job is None:
                    return
                index, job = next_job
                if ordered:
                    taken: _Taken[ResultT] = _Taken(index)
                    held.append(taken)
                result = await self.work(job)
                if self.done is not None:
                    stored = self.done(index, result)
                    if stored is not None:  # durable before the slot goes on
                        await stored
                if ordered:
                    taken.result, taken.finished = result, True
                    if held[0] is taken:
                        release()
                        if window is not None:
                            async with room:
                                room.notify_all()

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(slots):
                    group.create_task(slot())
        except BaseExceptionGroup as grouped:
            raise grouped.exceptions[0] from None
