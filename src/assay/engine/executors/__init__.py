"""Where a run's case runs execute, behind one small protocol.

The runner plans the jobs and says how many may run at once; an `Executor` runs them
and hands each result back as it completes (`done`), in any order. `LocalExecutor`
runs them as asyncio tasks on the run's own event loop. `RayExecutor`
(`assay.engine.executors.ray`, the `[ray]` extra) runs them as Ray tasks on a cluster:
for it the runner hands over `StagedWork`, the part of a case run that can travel (the
agent, the deterministic scores) apart from the part that stays with the run (judges and
their cache), so the pipeline never knows where a case ran.
"""

from __future__ import annotations

from assay.engine.executors.base import Done, Executor, StagedWork, Work
from assay.engine.executors.local import LocalExecutor

__all__ = ["Done", "Executor", "LocalExecutor", "StagedWork", "Work"]
