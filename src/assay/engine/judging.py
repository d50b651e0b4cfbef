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

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError
from assay.metrics.base import Metric
from assay.metrics.judged.base import JudgedMetric, judges_in_context

if TYPE_CHECKING:
    from assay.judges.client import JudgePool
    from assay.judges.stats import JudgeStats
    from assay.models.registry import ModelRegistry


@dataclass(frozen=True)
class JudgeRunOptions:
    """How a run uses judges: the default model, calls in flight, cache, timeout.

    `store` holds the judge cache (its `judge_cache` table); None keeps replies in
    memory for this run only.
    """

    model: str | None = None
    concurrency: int = 8
    use_cache: bool = True
    timeout_s: float = 60.0
    max_retries: int = 4
    store: Any = None
    base_url: str | None = None
    #: the pool's counters (a `JudgeStats`), when the caller shows them as the run goes
    stats: Any = None

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(
                "judge concurrency (--judge-concurrency) must be at least 1,"
                f" got {self.concurrency}"
            )
        if self.timeout_s <= 0:
            raise ConfigError(f"the judge timeout must be positive, got {self.timeout_s}")
        if self.max_retries < 0:
            raise ConfigError(f"judge max_retries must be 0 or more, got {self.max_retries}")
        if self.model is not None:
            from assay.models.resolve import check_sdk, parse_model

            # A mistyped judge, or one whose SDK is not installed, is a usage error (exit
            # 2 naming the extra), not a run of skipped metrics.
            spec = parse_model(self.model)
            check_sdk(spec.backend, label=f"judge {self.model!r}")

    def make_registry(self, run_concurrency: int = 1) -> ModelRegistry:
        """The run's model registry: its reply cache (the store's when there is one) and
        the pacing every model caller of the run shares. Callers that set no bound of
        their own (the agents) get as many calls in flight as the run has cases going."""
        from assay.models.cache import MemoryReplyCache, ReplyCache, StoreReplyCache
        from assay.models.registry import ModelRegistry

        cache: ReplyCache = (
            StoreReplyCache(self.store.judge_cache)
            if self.store is not None
            else MemoryReplyCache()
        )
        return ModelRegistry(
            concurrency=max(self.concurrency, run_concurrency),
            max_retries=self.max_retries,
            cache=cache,
        )

    def make_pool(self, registry: ModelRegistry | None = None) -> JudgePool:
        """The run's judges; with `registry`, they pace and cache through it."""
        from assay.judges.client import JudgePool

        return JudgePool(
            # with a registry, the run's cache is the registry's: no store of its own
            store=self.store if registry is None else None,
            registry=registry,
            default_model=self.model,
            default_base_url=self.base_url,
            concurrency=self.concurrency,
            use_cache=self.use_cache,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            stats=self.stats,
        )


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
        with judges_in_context(pool):
            yield pool
    finally:
        if owned:
            await pool.aclose()


def judge_summary(pool: JudgePool | None, since: JudgeStats | None = None) -> dict[str, Any]:
    """The `judge/...` summary keys of a run (none when it judged nothing).

    `since`: a snapshot of the pool's stats taken when the run started, so a pool
    shared by several runs reports each run's own work.
    """
    if pool is None:
        return {}
    stats = pool.stats.since(since) if since is not None else pool.stats
    return stats.summary()
