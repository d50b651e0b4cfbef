"""The run's judges: one pool, where each judged metric finds its judge as it scores.

Each `JudgedMetric` gets the judge its `judge_model_options.judge_model` names, or the
run's default (`--judge MODEL`). With neither it reports `NO_JUDGE_MESSAGE`; when the
judge cannot be built (SDK not installed, no API key) the metric reports that reason.
Either way it comes out NOT_EVALUATED and the deterministic metrics still run.
A judge the caller gave a metric (`attach_judge`) wins over the run's. The judges pace
their calls through the run's `ModelRegistry` (`run_registry`), shared with the
simulated user and the agents.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from assay.engine.judge_options import JudgeRunOptions as JudgeRunOptions  # re-exported
from assay.metrics.base import Metric
from assay.metrics.judged.base import JudgedMetric, judges_in_context

if TYPE_CHECKING:
    from assay.core.results import CaseResult
    from assay.judges.client import JudgePool
    from assay.judges.stats import JudgeStats
    from assay.models.cost import CostLine
    from assay.models.registry import ModelRegistry


def judged_metrics(metrics: Sequence[Metric]) -> list[JudgedMetric]:
    return [m for m in metrics if isinstance(m, JudgedMetric)]


def run_registry(
    judges: JudgeRunOptions | JudgePool | None, run_concurrency: int = 1
) -> ModelRegistry:
    """The model registry of a run: a pool's own when the caller passed one (its runs
    share their pacing, as configured), else a new one for this run alone."""
    from assay.judges.client import JudgePool

    if isinstance(judges, JudgePool):
        return judges.registry
    return (judges or JudgeRunOptions()).make_registry(run_concurrency)


@asynccontextmanager
async def run_judges(
    metrics: Sequence[Metric],
    judges: JudgeRunOptions | JudgePool | None,
    registry: ModelRegistry | None = None,
) -> AsyncIterator[JudgePool | None]:
    """The judges of one run, in the run's context for its duration.

    Yields None when no metric is judged. The judged metrics find their judges in the
    pool while they score (`judges_in_context`); no metric object is changed, so the
    same metrics may serve runs going on at once with different judges. A pool built
    here (from options, or the defaults) is closed on exit; a pool passed in stays
    open for its owner.
    """
    if not judged_metrics(metrics):
        yield None
        return
    from assay.judges.client import JudgePool

    owned = not isinstance(judges, JudgePool)
    pool = (
        judges
        if isinstance(judges, JudgePool)
        else (judges or JudgeRunOptions()).make_pool(registry)
    )
    try:
        with judges_in_context(pool, num_samples=pool.num_samples):
            yield pool
    finally:
        if owned:
            await pool.aclose()


def judge_summary(
    pool: JudgePool | None,
    since: JudgeStats | None = None,
    cost_since: Mapping[tuple[str, str], CostLine] | None = None,
) -> dict[str, object]:
    """The `judge/...` summary keys of a run (none when it judged nothing).

    `since` / `cost_since`: snapshots of the pool's stats and of its meter's lines taken
    when the run started, so a pool shared by several runs reports each run's own work.
    """
    if pool is None:
        return {}
    stats = pool.stats.since(since) if since is not None else pool.stats
    return {**stats.summary(), **pool.meter.summary(cost_since)}


def unstable_summary(cases: Sequence[CaseResult]) -> dict[str, int]:
    """`judge/unstable/{metric}`: the case results of each metric whose judge samples
    straddled its threshold, for every metric with a sample split; `judge/unstable`
    their total. None of these keys when no judged item had more than one sample."""
    from assay.metrics.sample_split import is_unstable, split_of

    counts: dict[str, int] = {}
    for case in cases:
        for name, result in case.metrics.items():
            if split_of(result.details) is None:
                continue
            counts[name] = counts.get(name, 0) + int(is_unstable(result.details))
    if not counts:
        return {}
    out: dict[str, int] = {"judge/unstable": sum(counts.values())}
    out.update({f"judge/unstable/{name}": n for name, n in sorted(counts.items())})
    return out
