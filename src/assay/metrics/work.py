"""A CPU budget the caller of a metric may set: long loops check it and stop.

The service scores what a request sends within a budget of CPU seconds per request
(`assay.service.settings.WorkLimits`). A metric whose work grows faster than its input
(rougeLsum's sentence pairs) calls `check()` in its outer loop; outside `cpu_budget`
the check is one context-variable read.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from assay.errors import AssayError

_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar("assay_cpu_deadline", default=None)


class WorkBudgetExceeded(AssayError):
    """The scoring took more CPU time than its budget."""


@contextmanager
def cpu_budget(seconds: float) -> Iterator[None]:
    """Within the block, `check()` raises once this thread used `seconds` of CPU."""
    token = _DEADLINE.set((time.thread_time() + seconds, seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check() -> None:
    deadline = _DEADLINE.get()
    if deadline is not None and time.thread_time() > deadline[0]:
        raise WorkBudgetExceeded(
            f"scoring took over {deadline[1]:g} CPU seconds, the limit per request"
        )
