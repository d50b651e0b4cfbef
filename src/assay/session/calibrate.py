"""Running a calibration (SPEC §5): the labelled items scored by one judged metric in a
`RunSession`, the life every run has (the engine, the run's judges, the observers).

What a calibration is (the labels file, the verdicts, the agreement report) lives in
`assay.engine.calibrate`. A calibration measures a judge, not an agent: its session
records nothing (no run in `assay runs`, nothing to resume); the store, when given,
holds the judge cache only, so an unchanged calibration asks the judge nothing again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.engine.calibrate import (
    CalibrationReport,
    LabelledSet,
    build_judged_metric,
    calibration_report,
    load_labels,
)
from assay.metrics.judged.base import JudgedMetric
from assay.session.run_session import RunSession

if TYPE_CHECKING:
    from assay.engine.runner import RunObserver
    from assay.judges.client import JudgePool
    from assay.models.cache import HasCacheTable


async def acalibrate(
    labels: str | Path | LabelledSet,
    *,
    metric: str | JudgedMetric,
    judge: str,
    samples: int | None = None,
    base_url: str | None = None,
    store: HasCacheTable | None = None,
    use_cache: bool = True,
    concurrency: int = 8,
    timeout_s: float = 60.0,
    pool: JudgePool | None = None,
    observers: Sequence[RunObserver] = (),
) -> CalibrationReport:
    """Score every labelled item with `metric` judged by `judge`; compare with the labels.

    The items run in a `RunSession` with a `JudgePool` (cache in `store`, or memory;
    `concurrency` judge calls in flight), exactly as `assay eval` scores them;
    `observers` see the run start, each item scored and the run finish. A judge that
    cannot be built (unknown model string, SDK missing) is a ConfigError; a judge that
    fails on some items leaves those items unscored. A `pool` passed in is used as is
    and left open (its own judge options then apply).
    """
    from assay.judges.client import JudgePool

    labelled = labels if isinstance(labels, LabelledSet) else load_labels(labels)
    scorer = (
        metric
        if isinstance(metric, JudgedMetric)
        else build_judged_metric(metric, judge=judge, samples=samples, base_url=base_url)
    )
    own = pool is None
    run_pool = pool or JudgePool(
        store=store,
        default_model=judge,
        concurrency=concurrency,
        use_cache=use_cache,
        timeout_s=timeout_s,
    )
    try:
        # Build the judge now: a judge that cannot exist is a usage error here, not a
        # column of unscored items.
        scorer.attach_judge(run_pool.judge(scorer.judge_model or judge, scorer.judge_options))
        # No store in the session: the judge cache is the pool's (see the module's note).
        # Without an agent, the engine keeps enough cases going to fill the judge limit.
        session = RunSession([labelled.evalset], [scorer], judges=run_pool, observers=observers)
        result = await session.arun()
    finally:
        scorer.attach_judge(None)
        if own:
            await run_pool.aclose()
    return calibration_report(labelled, scorer, judge, result)


def calibrate(labels: str | Path | LabelledSet, **kwargs: Any) -> CalibrationReport:
    """Synchronous `acalibrate` (not for use inside a running event loop)."""
    return asyncio.run(acalibrate(labels, **kwargs))


__all__ = ["acalibrate", "calibrate"]
