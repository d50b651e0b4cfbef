"""Where a run's case runs execute, behind one small protocol.

The runner plans the jobs and says how many may run at once; an `Executor` runs them
and hands each result back as it completes (`done`), in any order, both through the
run's one scheduler (`assay.engine.schedule`). `LocalExecutor` runs them as asyncio
tasks on the run's own event loop. `RayExecutor`
(`assay.engine.executors.ray`, the `[ray]` extra) runs them as Ray tasks on a cluster:
for it the runner hands over `StagedWork`, the part of a case run that can travel (the
agent, the deterministic scores) apart from the part that stays with the run (judges and
their cache), so the pipeline never knows where a case ran.
"""

from __future__ import annotations

from collections.abc import Mapping

from assay.engine.executors.base import Done, Executor, StagedWork, Work
from assay.engine.executors.local import LocalExecutor
from assay.errors import ConfigError

EXECUTORS = ("local", "ray")
"""The names `--executor` and `evaluate(executor=...)` take."""

__all__ = ["EXECUTORS", "Done", "Executor", "LocalExecutor", "StagedWork", "Work", "named"]


def named(
    name: str,
    *,
    ray_address: str | None = None,
    ray_runtime_env: Mapping[str, object] | None = None,
) -> Executor:
    """The executor called `name` (one of `EXECUTORS`); ConfigError for any other name,
    or a Ray setting given to another executor, or Ray not installed."""
    key = name.strip().lower()
    if key not in EXECUTORS:
        raise ConfigError(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")
    if key == "ray":
        from assay.engine.executors.ray import RayExecutor

        return RayExecutor(ray_address, runtime_env=ray_runtime_env)
    if ray_address is not None or ray_runtime_env is not None:
        raise ConfigError("--ray-address is for --executor ray; add --executor ray")
    return LocalExecutor()
