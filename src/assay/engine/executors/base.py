"""The executor protocol: run jobs, at most `workers` at once, report each result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

JobT = TypeVar("JobT")
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
        done: Callable[[int, ResultT], None],
        *,
        workers: int,
    ) -> None: ...
