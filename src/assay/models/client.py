"""`ModelClient`: one model backend with the reply cache, pacing, retries and a timeout.

`ModelClient.generate(messages, n, settings)` asks for `n` samples: `n` calls, each
cached under (backend, endpoint, model, messages, prompt version, sample index,
settings), so re-running unchanged work makes no call. A caller passes `accept` (its
reply parser as a yes/no): replies it cannot parse are neither cached nor taken from the
cache, so a model that is fixed is asked again. Failed samples are dropped; when every
sample fails the call raises `ModelCallError` with the error text. The limiter and the
retry policy are handed in, so every client of one endpoint in a run can share them
(`assay.models.registry`). Judges and the simulated user are both clients.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay.errors import ConfigError
from assay.models.batch import BatchQueue
from assay.models.cache import ReplyCache, reply_cache_key
from assay.models.cost import Admission, BudgetReached, CallMeter
from assay.models.policy import AdaptiveLimiter, Permit, RetryPolicy, Sleep
from assay.models.stats import CallStats
from assay.models.types import BackendReply, GenerationSettings, ModelBackend, ModelCallError

Outcome = str | ModelCallError


class ModelClient:
    """One backend wrapped with the cache, a shared limiter, retries, a timeout and stats.

    `role` names the caller in messages ("judge", "user model"): the client itself does
    not care who asks.
    """

    role = "model"
    #: an aligned judge's `NAME@VERSION`, part of every cache key (None: a plain model)
    judge_version: str | None = None

    def __init__(
        self,
        backend: ModelBackend,
        *,
        cache: ReplyCache,
        limiter: AdaptiveLimiter,
        retry: RetryPolicy,
        stats: CallStats,
        timeout_s: float,
        use_cache: bool = True,
        parallelism: int | None = None,
        sleep: Sleep = asyncio.sleep,
        in_flight: dict[str, asyncio.Future[Outcome]] | None = None,
        role: str | None = None,
        sample_offset: int = 0,
        batcher: BatchQueue | None = None,
        meter: CallMeter | None = None,
    ) -> None:
        if role is not None:
            self.role = role
        #: added to each sample's index in the cache key: a client with another offset
        #: draws other samples of the same prompt (the repeats of `assay judge stability`)
        self.sample_offset = sample_offset
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
        #: counts, prices and caps the calls (`assay.models.cost`); None: no cost kept
        self.meter = meter
        self._semaphore: asyncio.Semaphore | None = None
        #: set by `--judge-batch`: calls go through the vendor's batch interface first
        self.batcher = batcher

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.backend.backend}:{self.backend.model}>"

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
        messages: Sequence[Mapping[str, object]],
        sample: int,
        settings: GenerationSettings,
        prompt_version: str | None = None,
    ) -> str:
        """The cache key of one sample of `messages` under `settings`."""
        return reply_cache_key(
            backend=self.backend.backend,
            endpoint=self.endpoint,
            model=self.backend.model,
            prompt=[dict(m) for m in messages],
            prompt_version=prompt_version,
            sample=sample,
            settings=settings.as_key(),
            judge_version=self.judge_version,
        )

    async def generate(
        self,
        messages: Sequence[Mapping[str, object]],
        n: int,
        settings: Mapping[str, object] | GenerationSettings | None = None,
        *,
        accept: Callable[[str], bool] | None = None,
        prompt_version: str | None = None,
    ) -> list[str]:
        """`n` sampled replies to `messages` (fewer if some samples failed for good).

        `accept` says whether the caller can use a reply: only accepted replies are
        cached, and a cached reply it refuses counts as a miss. `prompt_version` (the
        metric's template id) is part of the cache key. Raises ModelCallError when
        every sample failed, with the last error's text.
        """
        if n < 1:
            raise ConfigError(f"a {self.role} needs at least 1 sample, got {n}")
        chosen = GenerationSettings.from_mapping(settings)
        prompt = [dict(m) for m in messages]
        first = self.sample_offset
        keys = [self.cache_key(prompt, first + i, chosen, prompt_version) for i in range(n)]
        cached = self.cache.get_many(keys) if self.use_cache else {}
        if accept is not None:
            cached = {key: reply for key, reply in cached.items() if accept(reply)}
        if cached:
            self.stats.record_cache_hits(self.backend.backend, len(cached))
            if self.meter is not None:
                self.meter.record_cache_hits(self.label, len(cached))
        missing = [(i, key) for i, key in enumerate(keys) if key not in cached]
        outcomes: dict[int, Outcome] = {
            i: cached[key] for i, key in enumerate(keys) if key in cached
        }
        if missing:
            fresh = await asyncio.gather(*(self._sample(key, prompt, chosen) for _, key in missing))
            for (i, key), out in zip(missing, fresh, strict=True):
                outcomes[i] = out
                # A reply the caller cannot parse is not remembered: a model that is
                # fixed (or a flaky sample) gets asked again next time.
                if isinstance(out, str) and (accept is None or accept(out)):
                    self.cache.put(
                        key, backend=self.backend.backend, model=self.backend.model, reply=out
                    )
        refused = [out for out in outcomes.values() if isinstance(out, BudgetReached)]
        if refused:
            # Not a verdict from fewer samples than asked: the samples made are cached,
            # and a run with a higher cap asks only for the others.
            raise BudgetReached(refused[-1].message)
        replies = [out for _, out in sorted(outcomes.items()) if isinstance(out, str)]
        if replies:
            return replies
        errors = [out for out in outcomes.values() if isinstance(out, ModelCallError)]
        last = errors[-1]
        # Backend errors usually name their model already; say which when not.
        where = "" if self.backend.model in last.message else f"{self.label}: "
        what = "" if n == 1 else f"all {n} {self.role} samples failed, the last with: "
        raise ModelCallError(
            f"{what}{where}{last.message}",
            retryable=False,
            status=last.status,
        )

    async def _sample(
        self, key: str, prompt: list[dict[str, object]], settings: GenerationSettings
    ) -> Outcome:
        name = self.backend.backend
        if self.use_cache:
            pending = self._in_flight.get(key)
            if pending is not None:
                shared = await asyncio.shield(pending)
                if isinstance(shared, str):
                    self.stats.record_cache_hits(name)
                    if self.meter is not None:
                        self.meter.record_cache_hits(self.label)
                else:
                    self.stats.record_error(name)
                return shared
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        outcome: Outcome | None = None
        try:
            outcome = await self._call(key, prompt, settings)
        finally:
            if self._in_flight.get(key) is future:
                del self._in_flight[key]
            if outcome is None:  # built only when needed: an error's text is redacted
                outcome = ModelCallError(f"the {self.role} call was cancelled", retryable=False)
            future.set_result(outcome)
        return outcome

    async def _call(
        self, key: str, prompt: list[dict[str, Any]], settings: GenerationSettings
    ) -> Outcome:
        if self.batcher is not None:
            batched = await self._batched(self.batcher, key, prompt, settings)
            if batched is not None:
                return batched
            # Failed in the batch: made live, with the usual retries (admitted anew).
        if self._parallelism is None:
            return await self._call_with_retries(prompt, settings)
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self._parallelism)
        async with self._semaphore:
            return await self._call_with_retries(prompt, settings)

    async def _batched(
        self,
        batcher: BatchQueue,
        key: str,
        prompt: list[dict[str, Any]],
        settings: GenerationSettings,
    ) -> Outcome | None:
        """One call by way of a batch: its reply text, `BudgetReached`, or None when the
        batch failed it (then it is made live).

        A batch call takes no live slot (the vendor paces its batches). With a meter it
        is admitted before it is queued, at the batch price, and stays in flight (its
        estimate reserved) until its batch returns; a request already in a batch (sent
        before a crash) is paid whatever the cap says, so it is admitted as committed.
        """
        admission: Admission | None = None
        if self.meter is not None:
            committed = await batcher.holds(key)
            admitted = await self.meter.admit(
                self.label, prompt, settings, batched=True, committed=committed
            )
            if isinstance(admitted, str):
                return BudgetReached(admitted)
            admission = admitted
        outcome: BackendReply | ModelCallError | None = None
        try:
            outcome = await batcher.call(key, prompt, settings)
        finally:
            if admission is not None and self.meter is not None:
                reply = outcome if isinstance(outcome, BackendReply) else None
                self.meter.settle(admission, reply)  # a failed item is billed nothing
        name = self.backend.backend
        self.stats.record_call(name)
        if isinstance(outcome, BackendReply):
            self.stats.record_tokens(
                name, outcome.input_tokens, outcome.output_tokens, outcome.cached_tokens
            )
            return outcome.text
        return None

    async def _call_with_retries(
        self, prompt: list[dict[str, object]], settings: GenerationSettings
    ) -> Outcome:
        name = self.backend.backend
        attempt = 0
        while True:
            outcome = await self._attempt(prompt, settings)
            if isinstance(outcome, str):
                return outcome
            if isinstance(outcome, BudgetReached):  # not made: no error, no retry
                return outcome
            if not self.retry.should_retry(attempt, outcome.retryable):
                self.stats.record_error(name)
                return outcome
            attempt += 1
            self.stats.record_retry(name)
            await self._sleep(self.retry.delay(attempt, outcome.retry_after))

    async def _attempt(self, prompt: list[dict[str, Any]], settings: GenerationSettings) -> Outcome:
        """One call through the limiter: the reply text, or the error it ended with.

        With a meter, the call is admitted first (taken after the limiter's permit, so
        the calls in flight are counted against a cap) and settled after.
        """
        name = self.backend.backend
        permit: Permit = await self.limiter.acquire()
        admission: Admission | None = None
        if self.meter is not None:
            admitted = await self.meter.admit(self.label, prompt, settings)
            if isinstance(admitted, str):
                self.limiter.release(permit, ok=True)
                return BudgetReached(admitted)
            admission = admitted
        released = False
        try:
            self.stats.record_call(name)
            try:
                reply = await asyncio.wait_for(
                    self.backend.complete(prompt, settings), self.timeout_s
                )
            except ModelCallError as exc:
                error = exc
            except TimeoutError:
                error = ModelCallError(
                    f"no reply within the {self.timeout_s:g}s {self.role} timeout", retryable=True
                )
            except Exception as exc:  # a backend bug or an unmapped SDK error: keep its text
                error = ModelCallError(f"{type(exc).__name__}: {exc}", retryable=False)
            else:
                released = True
                self.limiter.release(permit, ok=True)
                self.stats.record_tokens(
                    name, reply.input_tokens, reply.output_tokens, reply.cached_tokens
                )
                if admission is not None and self.meter is not None:
                    self.meter.settle(admission, reply)
                return reply.text
            if admission is not None and self.meter is not None:
                self.meter.settle(admission, None)
            released = True
            self.limiter.release(
                permit, ok=False, overloaded=error.overloaded, retry_after=error.retry_after
            )
            return error
        finally:
            if not released:  # cancelled mid-call: free the slot without judging the backend
                self.limiter.release(permit, ok=False)
                if admission is not None and self.meter is not None:
                    self.meter.settle(admission, None)
