"""`Judge`: one backend wrapped with the cache, the adaptive limit, retries and a timeout.

`Judge.generate(messages, n, settings)` is the `JudgeClient` the metrics call: `n`
samples are `n` calls, each cached under (backend, endpoint, model, messages, prompt
version, sample index, settings), so re-running unchanged work makes no call. A metric
passes `accept` (its reply parser as a yes/no): replies it cannot parse are neither
cached nor taken from the cache, so a judge that is fixed is asked again. Failed samples
are dropped; when every sample fails the call raises `JudgeCallError` with the error
text, and the metric reports no score with that text. `JudgePool` holds the judges of one
run: one `Judge` per model string and options, one limiter per backend, one cache and one
set of stats.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay.errors import ConfigError
from assay.judges.cache import (
    HasCacheTable,
    MemoryReplyCache,
    ReplyCache,
    StoreReplyCache,
    judge_cache_key,
)
from assay.judges.policy import AdaptiveLimiter, Clock, Permit, RetryPolicy, Sleep
from assay.judges.resolve import make_backend, parse_model
from assay.judges.stats import JudgeStats
from assay.judges.types import (
    GenerationSettings,
    JudgeBackend,
    JudgeCallError,
    JudgeModelOptions,
    JudgeRequest,
)

Outcome = str | JudgeCallError
BackendFactory = Callable[..., JudgeBackend]


class Judge:
    """A `JudgeClient` over one backend: cache, limiter, retries, timeout and stats."""

    def __init__(
        self,
        backend: JudgeBackend,
        *,
        cache: ReplyCache,
        limiter: AdaptiveLimiter,
        retry: RetryPolicy,
        stats: JudgeStats,
        timeout_s: float,
        use_cache: bool = True,
        parallelism: int | None = None,
        sleep: Sleep = asyncio.sleep,
        in_flight: dict[str, asyncio.Future[Outcome]] | None = None,
    ) -> None:
        self.backend = backend
        self.cache = cache
        self.limiter = limiter
        self.retry = retry
        self.stats = stats
        self.timeout_s = timeout_s
        self.use_cache = use_cache
        self._sleep = sleep
        # Identical requests in flight at once share one call (shared across a pool).
        self._in_flight: dict[str, asyncio.Future[Outcome]] = (
            in_flight if in_flight is not None else {}
        )
        self._parallelism = parallelism
        self._semaphore: asyncio.Semaphore | None = None

    def __repr__(self) -> str:
        return f"<Judge {self.backend.backend}:{self.backend.model}>"

    @property
    def label(self) -> str:
        """`backend:model`, for messages."""
        return f"{self.backend.backend}:{self.backend.model}"

    @property
    def endpoint(self) -> str:
        """Where the backend's model is served ("" for a backend that does not say)."""
        return str(getattr(self.backend, "endpoint", "") or "")

    def cache_key(
        self,
        messages: Sequence[Mapping[str, Any]],
        sample: int,
        settings: GenerationSettings,
        prompt_version: str | None = None,
    ) -> str:
        """The cache key of one sample of `messages` under `settings`."""
        return judge_cache_key(
            backend=self.backend.backend,
            endpoint=self.endpoint,
            model=self.backend.model,
            prompt=[dict(m) for m in messages],
            prompt_version=prompt_version,
            sample=sample,
            settings=settings.as_key(),
        )

    async def generate(
        self,
        messages: Sequence[Mapping[str, Any]],
        n: int,
        settings: Mapping[str, Any] | GenerationSettings | None = None,
        *,
        accept: Callable[[str], bool] | None = None,
        prompt_version: str | None = None,
    ) -> list[str]:
        """`n` sampled replies to `messages` (fewer if some samples failed for good).

        `accept` says whether the caller can use a reply: only accepted replies are
        cached, and a cached reply it refuses counts as a miss. `prompt_version` (the
        metric's template id) is part of the cache key. Raises JudgeCallError when
        every sample failed, with the last error's text.
        """
        if n < 1:
            raise ConfigError(f"a judge needs at least 1 sample, got {n}")
        chosen = GenerationSettings.from_mapping(settings)
        prompt = [dict(m) for m in messages]
        keys = [self.cache_key(prompt, i, chosen, prompt_version) for i in range(n)]
        cached = self.cache.get_many(keys) if self.use_cache else {}
        if accept is not None:
            cached = {key: reply for key, reply in cached.items() if accept(reply)}
        if cached:
            self.stats.record_cache_hits(self.backend.backend, len(cached))
        missing = [(i, key) for i, key in enumerate(keys) if key not in cached]
        outcomes: dict[int, Outcome] = {
            i: cached[key] for i, key in enumerate(keys) if key in cached
        }
        if missing:
            fresh = await asyncio.gather(*(self._sample(key, prompt, chosen) for _, key in missing))
            for (i, key), out in zip(missing, fresh, strict=True):
                outcomes[i] = out
                # A reply the metric cannot parse is not remembered: a judge that is
                # fixed (or a flaky sample) gets asked again next time.
                if isinstance(out, str) and (accept is None or accept(out)):
                    self.cache.put(
                        key, backend=self.backend.backend, model=self.backend.model, reply=out
                    )
        replies = [out for _, out in sorted(outcomes.items()) if isinstance(out, str)]
        if replies:
            return replies
        errors = [out for out in outcomes.values() if isinstance(out, JudgeCallError)]
        last = errors[-1]
        # Backend errors usually name their model already; say which judge when not.
        where = "" if self.backend.model in last.message else f"{self.label}: "
        what = "" if n == 1 else f"all {n} judge samples failed, the last with: "
        raise JudgeCallError(
            f"{what}{where}{last.message}",
            retryable=False,
            status=last.status,
        )

    async def _sample(
        self, key: str, prompt: list[dict[str, Any]], settings: GenerationSettings
    ) -> Outcome:
        name = self.backend.backend
        if self.use_cache:
            pending = self._in_flight.get(key)
            if pending is not None:
                shared = await asyncio.shield(pending)
                if isinstance(shared, str):
                    self.stats.record_cache_hits(name)
                else:
                    self.stats.record_error(name)
                return shared
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        outcome: Outcome = JudgeCallError("the judge call was cancelled", retryable=False)
        try:
            outcome = await self._call(prompt, settings)
        finally:
            if self._in_flight.get(key) is future:
                del self._in_flight[key]
            future.set_result(outcome)
        return outcome

    async def _call(self, prompt: list[dict[str, Any]], settings: GenerationSettings) -> Outcome:
        if self._parallelism is None:
            return await self._call_with_retries(prompt, settings)
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self._parallelism)
        async with self._semaphore:
            return await self._call_with_retries(prompt, settings)

    async def _call_with_retries(
        self, prompt: list[dict[str, Any]], settings: GenerationSettings
    ) -> Outcome:
        name = self.backend.backend
        attempt = 0
        while True:
            outcome = await self._attempt(prompt, settings)
            if isinstance(outcome, str):
                return outcome
            if not self.retry.should_retry(attempt, outcome.retryable):
                self.stats.record_error(name)
                return outcome
            attempt += 1
            self.stats.record_retry(name)
            await self._sleep(self.retry.delay(attempt, outcome.retry_after))

    async def _attempt(self, prompt: list[dict[str, Any]], settings: GenerationSettings) -> Outcome:
        """One call through the limiter: the reply text, or the error it ended with."""
        name = self.backend.backend
        permit: Permit = await self.limiter.acquire()
        released = False
        try:
            self.stats.record_call(name)
            try:
                reply = await asyncio.wait_for(
                    self.backend.complete(prompt, settings), self.timeout_s
                )
            except JudgeCallError as exc:
                error = exc
            except TimeoutError:
                error = JudgeCallError(
                    f"no reply within the {self.timeout_s:g}s judge timeout", retryable=True
                )
            except Exception as exc:  # a backend bug or an unmapped SDK error: keep its text
                error = JudgeCallError(f"{type(exc).__name__}: {exc}", retryable=False)
            else:
                released = True
                self.limiter.release(permit, ok=True)
                self.stats.record_tokens(name, reply.input_tokens, reply.output_tokens)
                return reply.text
            released = True
            self.limiter.release(
                permit, ok=False, overloaded=error.overloaded, retry_after=error.retry_after
            )
            return error
        finally:
            if not released:  # cancelled mid-call: free the slot without judging the backend
                self.limiter.release(permit, ok=False)


class JudgePool:
    """The judges of one run: one `Judge` per model and options, sharing cache and stats.

    Judge calls to one backend share one adaptive limit of `concurrency` calls in flight.
    The cache is the store's judge cache, or memory when `store` is None; `use_cache`
    False makes every sample a call (replies are still written to the cache).
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
        backend_factory: BackendFactory = make_backend,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
        stats: JudgeStats | None = None,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"judge concurrency must be at least 1, got {concurrency}")
        if timeout_s <= 0:
            raise ConfigError(f"the judge timeout must be positive, got {timeout_s}")
        if default_model is not None:
            parse_model(default_model)  # a mistyped --judge is a usage error, not a skip
        self.default_model = default_model
        #: the endpoint of the default model (else its SDK's environment variables)
        self.default_base_url = default_base_url
        self.concurrency = concurrency
        self.use_cache = use_cache
        self.timeout_s = timeout_s
        self.retry = RetryPolicy(max_retries=max_retries, rng=rng or random.Random())
        if cache is not None:
            self.cache: ReplyCache = cache
        elif store is not None:
            self.cache = StoreReplyCache(store.judge_cache)
        else:
            self.cache = MemoryReplyCache()
        # Given by a caller that shows the counters while the run goes (progress lines).
        self.stats = stats if stats is not None else JudgeStats()
        self._factory = backend_factory
        self._clock = clock
        self._sleep = sleep
        self._judges: dict[tuple[str, str | None, int | None], Judge | str] = {}
        self.limiters: dict[tuple[str, str | None], AdaptiveLimiter] = {}
        self._in_flight: dict[str, asyncio.Future[Outcome]] = {}
        # id(options) -> (options, what judge_for found); the options object is kept
        # alive with its entry, so its id cannot be reused by another object.
        self._found: dict[int, tuple[JudgeModelOptions, Judge | str | None]] = {}

    def judge_for(self, metric: JudgeRequest) -> Judge | str | None:
        """The judge `metric` asks for (its judge_model, else the run's default).

        None when neither names one; the reason as text when that judge cannot be built
        (SDK not installed, no API key, unknown model string).
        """
        options = metric.judge_options
        # Metrics ask on every case they score: answer a known options object at once.
        known = self._found.get(id(options))
        if known is not None and known[0] is options:
            return known[1]
        found = self._find(options)
        self._found[id(options)] = (options, found)
        return found

    def _find(self, options: JudgeModelOptions) -> Judge | str | None:
        model = options.judge_model or self.default_model
        if model is None:
            return None
        if options.judge_model is None and options.base_url is None and self.default_base_url:
            options = options.model_copy(update={"base_url": self.default_base_url})
        try:
            return self.judge(model, options)
        except Exception as exc:  # the metric reports it; the rest of the run goes on
            reason = str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
            return f"judge {model!r} is not available: {reason}"

    def judge(self, model: str, options: JudgeModelOptions | None = None) -> Judge:
        """The pool's judge for `model` (built on first use); raises ConfigError."""
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
            self._judges[key] = str(exc)
            raise
        limiter_key = (backend.backend, base_url)
        limiter = self.limiters.get(limiter_key)
        if limiter is None:
            limiter = self.limiters[limiter_key] = AdaptiveLimiter(
                self.concurrency, clock=self._clock, sleep=self._sleep
            )
        judge = Judge(
            backend,
            cache=self.cache,
            limiter=limiter,
            retry=self.retry,
            stats=self.stats,
            timeout_s=self.timeout_s,
            use_cache=self.use_cache,
            parallelism=parallelism,
            sleep=self._sleep,
            in_flight=self._in_flight,
        )
        self._judges[key] = judge
        return judge

    @property
    def judges(self) -> list[Judge]:
        """The judges built so far."""
        return [j for j in self._judges.values() if isinstance(j, Judge)]

    async def flush(self) -> None:
        """Write every cached reply; count failed cache writes in the stats."""
        await self.cache.flush()
        self.stats.cache_write_errors = len(self.cache.write_errors)

    async def aclose(self) -> None:
        """Flush the cache and close every backend."""
        failures: list[BaseException] = []
        try:
            await self.flush()
        finally:
            for judge in self.judges:
                try:
                    await judge.backend.aclose()
                except Exception as exc:  # close the others first, then report it
                    failures.append(exc)
        if failures:
            raise failures[0]
