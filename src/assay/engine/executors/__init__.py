"""Where a run's case runs execute, behind one small protocol.

The runner plans the jobs and says how many may run at once; an `Executor` runs them
and hands each result back as it completes (`done`), in any order. `LocalExecutor`
runs them as asyncio tasks on the run's own event loop. A process pool or Ray executor
implements the same `run` (the job and the work function are all it gets), so the
pipeline never knows where a case ran.
"""

from __future__ import annotations

from assay.engine.executors.base import Done, Executor, Work
from assay.engine.executors.local import LocalExecutor

__all__ = ["Done", "Executor", "LocalExecutor", "Work"]
