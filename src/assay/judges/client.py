"""`Judge` and `JudgePool`: the judges of a run, as clients of the model layer.

A `Judge` is a `ModelClient` (`assay.models.client`: cache, shared limiter, retries,
timeout, stats) that the metrics call as their `JudgeClient`: `judge.generate(messages,
n, settings, accept=..., prompt_version=...)`. When every sample fails the call raises
`JudgeCallError` with the error text, and the metric reports no score with that text.
`JudgePool` holds the judges of one run: one `Judge` per model string and options, one
cache and one set of stats; each endpoint's limiter and retry policy come from the run's
`ModelRegistry`, shared with the other callers of that endpoint.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError
from assay.judges.align import (
    AlignedJudgeSpec,
    alignment_text,
    augment_messages,
    is_aligned_ref,
    parse_ref,
)
from assay.judges.stats import JudgeStats
from assay.judges.types import JudgeModelOptions, JudgeRequest
from assay.models.batch import BatchBackend, BatchLedger, BatchQueue
from assay.models.cache import HasCacheTable, MemoryReplyCache, ReplyCache, StoreReplyCache
from assay.models.client import ModelClient, Outcome
from assay.models.cost import CallMeter, DryRunBackend, DryRunBatches, ReadOnlyCache
from assay.models.policy import AdaptiveLimiter, Clock, Sleep
from assay.models.pricing import shipped_prices
from assay.models.registry import ModelRegistry, endpoint_of
from assay.models.resolve import BACKENDS, make_backend, parse_model
from assay.models.types import GenerationSettings, ModelBackend

if TYPE_CHECKING:
    from assay.judges.align import AlignedJudgeSource

BackendFactory = Callable[..., ModelBackend]
logger = logging.getLogger(__name__)


class Judge(ModelClient):
    """A `JudgeClient` over one backend: cache, limiter, retries, timeout and stats."""

    role = "judge"


def make_judge_backend(
    model: str, options: JudgeModelOptions | None = None, *, timeout_s: float
) -> ModelBackend:
    """The backend for a judge: `options.base_url` picks the endpoint and
    `options.judge_model_config` holds a local model's load options."""
    return make_backend(
        model,
        base_url=options.base_url if options is not None else None,
        config=options.judge_model_config if options is not None else None,
        timeout_s=timeout_s,
    )


class JudgePool:
    """The judges of one run: one `Judge` per model and options, sharing cache and stats.

    Judge calls to one endpoint share one adaptive limit of at most `concurrency` calls
    in flight and one retry policy, from `registry` (the run's, shared with the other
    callers of that endpoint in the run; a registry of the pool's own when None). The
    cache is `cache`, else the store's judge cache, else the registry's, else memory;
    `use_cache` False makes every sample a call (replies are still written to the cache).
    `aligned` is where `aligned:NAME[@VERSION]` judges are found (`assay.judges.align`;
    by default the store's, when the store keeps them).
    `meter` counts, prices and caps the judges' calls (one with the shipped prices and no
    cap when None); `dry_run` makes every judge a `DryRunBackend` over a read-only cache.
    """

    def __init__(
        self,
        *,
        store: HasCacheTable | None = None,
        default_model: str | None = None,
        default_base_url: str | None = None,
        concurrency: int = 8,
        use_cache: bool = True,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        cache: ReplyCache | None = None,
        backend_factory: BackendFactory = make_judge_backend,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
        stats: JudgeStats | None = None,
        registry: ModelRegistry | None = None,
        aligned: AlignedJudgeSource | None = None,
        num_samples: int | None = None,
        sample_offset: int = 0,
        batch: bool = False,
        batch_ledger: BatchLedger | None = None,
        meter: CallMeter | None = None,
        dry_run: bool = False,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"judge concurrency must be at least 1, got {concurrency}")
        if timeout_s <= 0:
            raise ConfigError(f"the judge timeout must be positive, got {timeout_s}")
        if aligned is None and store is not None:
            aligned = getattr(store, "aligned_judges", None)
        #: where aligned judges are found by name (None: none can be used)
        self.aligned = aligned
        if default_model is not None:
            self._check_model(default_model)  # a mistyped --judge is a usage error
        if num_samples is not None and num_samples < 1:
            raise ConfigError(f"judge samples must be at least 1, got {num_samples}")
        self.default_model = default_model
        #: the run's samples per judged item for every judged metric (None: each its own)
        self.num_samples = num_samples
        #: the judges' first sample index in cache keys (`ModelClient.sample_offset`)
        self.sample_offset = sample_offset
        #: the endpoint of the default model (else its SDK's environment variables)
        self.default_base_url = default_base_url
        self.concurrency = concurrency
        self.use_cache = use_cache
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        if cache is not None:
            self.cache: ReplyCache = cache
        elif store is not None:
            self.cache = StoreReplyCache(store.judge_cache)
        elif registry is not None:
            self.cache = registry.cache
        else:
            self.cache = MemoryReplyCache()
        #: a dry run reads the cache (its hits are counted) and writes nothing to it
        self.dry_run = dry_run
        if dry_run:
            self.cache = ReadOnlyCache(self.cache)
        #: the judges' calls counted, priced and capped (`assay.models.cost`)
        self.meter = meter if meter is not None else CallMeter(shipped_prices())
        #: the run's pacing: judges share each endpoint's limiter and retry policy with
        #: every other caller of it in the run (the simulated user, the agents)
        self.registry = registry or ModelRegistry(
            concurrency=concurrency,
            max_retries=max_retries,
            cache=self.cache,
            clock=clock,
            sleep=sleep,
            rng=rng,
        )
        # Given by a caller that shows the counters while the run goes (progress lines).
        self.stats = stats if stats is not None else JudgeStats()
        #: `--judge-batch`: judge calls go through the vendor's batch interface where
        #: the backend has one (live otherwise); `batch_ledger` keeps the batch ids
        self.batch = batch
        self.batch_ledger = batch_ledger
        self._batchers: list[BatchQueue] = []
        self._factory = backend_factory
        self._sleep = sleep
        self._judges: dict[tuple[str, str | None, int | None], Judge | str] = {}
        self._aligned_judges: dict[tuple[str, str | None], Judge] = {}
        #: the limiter of each (backend, endpoint) the pool's judges call
        self.limiters: dict[tuple[str, str], AdaptiveLimiter] = {}
        self._in_flight: dict[str, asyncio.Future[Outcome]] = {}
        # (id(options), metric name) -> (options, what judge_for found); the options
        # object is kept alive with its entry, so its id cannot be reused by another
        # object. The name is part of the key: an aligned judge serves one metric only.
        self._found: dict[tuple[int, str | None], tuple[JudgeModelOptions, Judge | str | None]] = {}

    def _check_model(self, model: str) -> None:
        if not is_aligned_ref(model):
            parse_model(model)
            return
        name, version = parse_ref(model)
        self._aligned_spec(name, version)

    def judge_for(self, metric: JudgeRequest) -> Judge | str | None:
        """The judge `metric` asks for (its judge_model, else the run's default).

        None when neither names one; the reason as text when that judge cannot be built
        (SDK not installed, no API key, unknown model string).
        """
        options = metric.judge_options
        # Metrics ask on every case they score: answer a known options object at once.
        name = getattr(metric, "name", None)
        key = (id(options), name if isinstance(name, str) else None)
        known = self._found.get(key)
        if known is not None and known[0] is options:
            return known[1]
        found = self._find(options, key[1])
        self._found[key] = (options, found)
        return found

    def _find(self, options: JudgeModelOptions, metric: str | None = None) -> Judge | str | None:
        model = options.judge_model or self.default_model
        if model is None:
            return None
        if metric is not None:
            model = self._for_metric(model, metric)
        if options.judge_model is None and options.base_url is None and self.default_base_url:
            options = options.model_copy(update={"base_url": self.default_base_url})
        try:
            return self.judge(model, options)
        except Exception as exc:  # the metric reports it; the rest of the run goes on
            reason = str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
            return f"judge {model!r} is not available: {reason}"

    def _for_metric(self, model: str, metric: str) -> str:
        """The model string `metric` is judged by: an aligned judge aligned for another
        metric stands for its base model (its guidelines are about that other metric)."""
        if not is_aligned_ref(model):
            return model
        try:
            spec = self._aligned_spec(*parse_ref(model))
        except ConfigError:
            return model  # `judge` says why, in the metric's result
        return model if spec.metric == metric else spec.judge_model

    def _aligned_spec(self, name: str, version: int | None) -> AlignedJudgeSpec:
        if self.aligned is None:
            raise ConfigError(
                f"aligned judge {name!r} needs a store that keeps aligned judges"
                " (`assay judge align` stores them; run with --store)"
            )
        return self.aligned.resolve(name, version)

    def judge(self, model: str, options: JudgeModelOptions | None = None) -> Judge:
        """The pool's judge for `model` (built on first use); raises ConfigError.

        `aligned:NAME[@VERSION]` is an `AlignedJudge` over its base model's judge."""
        if is_aligned_ref(model):
            return self._aligned_judge(model, options)
        base_url = options.base_url if options is not None else None
        parallelism = options.parallelism_limit if options is not None else None
        key = (model.strip(), base_url, parallelism)
        known = self._judges.get(key)
        if isinstance(known, Judge):
            return known
        if isinstance(known, str):
            raise ConfigError(known)
        try:
            backend = self._factory(model, options, timeout_s=self.timeout_s)
        except ConfigError as exc:
            if not self.dry_run:
                self._judges[key] = str(exc)
                raise
            # A dry run calls nothing: a judge with no key yet is still counted.
            spec = parse_model(model)
            batches = self.batch and _can_batch(spec.backend)
            backend = (DryRunBatches if batches else DryRunBackend)(
                None, backend=spec.backend, model=spec.name, endpoint=base_url or ""
            )
        else:
            if self.dry_run:
                batches = (
                    self.batch
                    and isinstance(backend, BatchBackend)
                    and not getattr(backend, "batch_unavailable", None)  # Gemini on Vertex AI
                )
                backend = (DryRunBatches if batches else DryRunBackend)(backend)
        endpoint = endpoint_of(backend)
        pacing = self.registry.pacing(backend.backend, endpoint, concurrency=self.concurrency)
        self.limiters[(backend.backend, endpoint)] = pacing.limiter
        judge = Judge(
            backend,
            cache=self.cache,
            limiter=pacing.limiter,
            retry=pacing.with_retries(self.max_retries),
            stats=self.stats,
            timeout_s=self.timeout_s,
            use_cache=self.use_cache,
            parallelism=parallelism,
            sleep=self._sleep,
            in_flight=self._in_flight,
            sample_offset=self.sample_offset,
            batcher=self._batcher_for(backend),
            meter=self.meter,
        )
        self._judges[key] = judge
        return judge

    def _aligned_judge(self, model: str, options: JudgeModelOptions | None) -> Judge:
        spec = self._aligned_spec(*parse_ref(model))
        base_url = options.base_url if options is not None else None
        key = (spec.ref, base_url)
        known = self._aligned_judges.get(key)
        if known is not None:
            return known
        base_options = options
        if options is not None and options.judge_model is not None:
            base_options = options.model_copy(update={"judge_model": spec.judge_model})
        judge = AlignedJudge(
            self.judge(spec.judge_model, base_options), spec, in_flight=self._in_flight
        )
        self._aligned_judges[key] = judge
        return judge

    def _batcher_for(self, backend: ModelBackend) -> BatchQueue | None:
        if not self.batch:
            return None
        if self.dry_run:  # batches answered at once, for free: priced as batched
            if not isinstance(backend, DryRunBatches):
                return None
            batcher = BatchQueue(backend, None, window_s=0.0, first_poll_s=0.0)
            self._batchers.append(batcher)
            return batcher
        # A backend may batch for one endpoint and not another (Gemini: not on Vertex AI).
        unavailable = getattr(backend, "batch_unavailable", None)
        if not isinstance(backend, BatchBackend) or unavailable:
            logger.warning(
                "judge %s:%s %s; its calls are made live",
                backend.backend,
                backend.model,
                unavailable or "has no batch interface in assay",
            )
            return None
        batcher = BatchQueue(backend, self.batch_ledger)
        self._batchers.append(batcher)
        return batcher

    @property
    def judges(self) -> list[Judge]:
        """The judges built so far (aligned judges share their base judge's backend)."""
        return [j for j in self._judges.values() if isinstance(j, Judge)]

    async def flush(self) -> None:
        """Write every cached reply; count failed cache writes in the stats."""
        await self.cache.flush()
        self.stats.cache_write_errors = len(self.cache.write_errors)
        for batcher in self._batchers:  # their replies are cached now
            await batcher.settle()

    async def aclose(self) -> None:
        """Flush the cache and close every backend."""
        failures: list[BaseException] = []
        try:
            await self.flush()
        finally:
            for batcher in self._batchers:
                await batcher.aclose()
            for judge in self.judges:
                try:
                    await judge.backend.aclose()
                except Exception as exc:  # close the others first, then report it
                    failures.append(exc)
        if failures:
            raise failures[0]


def _can_batch(backend: str) -> bool:
    """The backend named `backend` has a batch interface in assay (its class, read
    without building a client: a dry run's judge may have no API key)."""
    info = BACKENDS.get(backend)
    if info is None:
        return False
    try:
        module = importlib.import_module(f"assay.models.backends.{info.module}")
    except ImportError:  # its SDK is not installed: no calls to price at all
        return False
    made_by = getattr(getattr(module, "create_backend", None), "__self__", None)
    return callable(getattr(made_by, "submit_batch", None))


class AlignedJudge(Judge):
    """A base judge's client whose prompts carry an aligned judge's guidelines and
    examples, and whose cache keys carry its `NAME@VERSION`.

    Built by `JudgePool` from the base model's `Judge` (same backend, limiter, retry
    policy, cache and stats); it does not own the backend (the base judge closes it).
    """

    def __init__(
        self,
        base: Judge,
        spec: AlignedJudgeSpec,
        *,
        in_flight: dict[str, asyncio.Future[Outcome]] | None = None,
    ) -> None:
        super().__init__(
            base.backend,
            cache=base.cache,
            limiter=base.limiter,
            retry=base.retry,
            stats=base.stats,
            timeout_s=base.timeout_s,
            use_cache=base.use_cache,
            in_flight=in_flight,
            sample_offset=base.sample_offset,
            batcher=base.batcher,
        )
        self.spec = spec
        self.judge_version = spec.ref
        self._base = base
        self._addition = alignment_text(spec.guidelines, spec.examples)

    async def _call(
        self, key: str, prompt: list[dict[str, Any]], settings: GenerationSettings
    ) -> Outcome:
        # Through the base judge: its `parallelism_limit` bounds both judges' calls, and
        # its batch queue (`--judge-batch`) takes the aligned judge's calls too.
        return await self._base._call(key, prompt, settings)

    def __repr__(self) -> str:
        return f"<AlignedJudge {self.spec.ref} over {self.label}>"

    async def generate(
        self,
        messages: Sequence[Mapping[str, object]],
        n: int,
        settings: Mapping[str, object] | GenerationSettings | None = None,
        *,
        accept: Callable[[str], bool] | None = None,
        prompt_version: str | None = None,
    ) -> list[str]:
        """The base model's `n` replies to `messages` with the alignment added."""
        return await super().generate(
            augment_messages(messages, self._addition),
            n,
            settings,
            accept=accept,
            prompt_version=prompt_version,
        )
