"""How a run uses judges (`JudgeRunOptions`), apart from the judges themselves
(`assay.engine.judging`): a run of deterministic metrics names these options without
loading the judged metrics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.judges.align import AlignedJudgeSource
    from assay.judges.client import JudgePool
    from assay.models.cost import CallMeter
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
    #: `--judge-samples N`: judge samples per item for every judged metric of the run
    num_samples: int | None = None
    #: `--judge-batch`: judge calls through the vendor's batch interface (the batch ids
    #: in `store`, so a resumed run collects a batch instead of paying twice), priced at
    #: the batch price; the caps admit each batched call before it is queued
    batch: bool = False
    #: caps on the judges' spending (`--max-judge-usd`, `--max-judge-calls`); None: none
    max_usd: float | None = None
    max_calls: int | None = None
    #: a price table laid over the shipped one (`--prices FILE`)
    prices_file: str | None = None
    #: how a refusal names the caps (a `CapNames`; None: `assay eval`'s flags)
    cap_names: Any = None
    #: count and price the judge calls without making them (`--dry-run`)
    dry_run: bool = False

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ConfigError(
                "judge concurrency (--judge-concurrency) must be at least 1,"
                f" got {self.concurrency}"
            )
        if self.timeout_s <= 0:
            raise ConfigError(f"the judge timeout must be positive, got {self.timeout_s}")
        if self.num_samples is not None and self.num_samples < 1:
            raise ConfigError(f"--judge-samples must be at least 1, got {self.num_samples}")
        if self.max_retries < 0:
            raise ConfigError(f"judge max_retries must be 0 or more, got {self.max_retries}")
        if self.max_usd is not None and not (self.max_usd > 0 and self.max_usd < float("inf")):
            raise ConfigError(f"--max-judge-usd must be a positive number, got {self.max_usd}")
        if self.max_calls is not None and self.max_calls < 1:
            raise ConfigError(f"--max-judge-calls must be at least 1, got {self.max_calls}")
        if self.prices_file is not None:
            from assay.models.pricing import read_price_file

            try:
                read_price_file(self.prices_file)
            except ValueError as exc:
                raise ConfigError(f"--prices: {exc}") from None
        if self.model is not None:
            from assay.models.resolve import check_sdk, parse_model

            # A mistyped judge, or one whose SDK is not installed, is a usage error (exit
            # 2 naming the extra), not a run of skipped metrics.
            model = self._base_model(self.model)
            if model is not None:
                spec = parse_model(model)
                check_sdk(spec.backend, label=f"judge {self.model!r}")

    def _base_model(self, model: str) -> str | None:
        """The model string behind `model`: an aligned judge's base model (None while
        no store is known to look it up in), else `model` itself."""
        from assay.judges.align import is_aligned_ref, parse_ref

        if not is_aligned_ref(model):
            return model
        ref = parse_ref(model)  # a mistyped name or version is a usage error now
        aligned = self.aligned_judges
        return aligned.resolve(*ref).judge_model if aligned is not None else None

    @property
    def aligned_judges(self) -> AlignedJudgeSource | None:
        """The store's aligned judges (`assay judge align`), when it keeps them."""
        from assay.judges.align import AlignedJudgeSource

        found = getattr(self.store, "aligned_judges", None)
        return found if isinstance(found, AlignedJudgeSource) else None

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

    def make_meter(self) -> CallMeter:
        """The meter of the run's judge calls: the price table and the caps."""
        from assay.models.cost import CLI_CAPS, CallMeter
        from assay.models.pricing import price_table

        return CallMeter(
            price_table(self.prices_file),
            max_usd=self.max_usd,
            max_calls=self.max_calls,
            names=self.cap_names or CLI_CAPS,
        )

    def make_pool(self, registry: ModelRegistry | None = None) -> JudgePool:
        """The run's judges; with `registry`, they pace and cache through it."""
        from assay.judges.client import JudgePool

        return JudgePool(
            meter=self.make_meter(),
            dry_run=self.dry_run,
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
            aligned=self.aligned_judges,
            num_samples=self.num_samples,
            batch=self.batch,
            batch_ledger=self.store.judge_batches if self.store is not None else None,
        )
