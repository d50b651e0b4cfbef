"""One registry of rate limits and retries per run: every caller of one endpoint shares them.

promptfoo keeps one rate limiter per provider for a whole evaluation, and wraps each
provider call with it, so that all the parts of an eval hitting one API slow down
together when it answers 429. `ModelRegistry` is that for a run of assay: the judges,
the simulated user and the OpenAI-tools / HTTP agents calling the same endpoint get the
same `Pacing` (one `AdaptiveLimiter`, one `RetryPolicy`), keyed by (provider, endpoint).
A 429 seen by one of them halves the limit (and a Retry-After pauses) all of them.

A registry belongs to one run: the engine builds it when the run starts and closes it
when the run ends, so two runs going on at once share nothing unless a caller hands
both the same registry (or the same judge pool, which carries one). Agents are built
before the run and find the run's registry in the context (`registry_in_context`);
outside a run they pace themselves with a registry of their own.

It also holds the run's reply cache (`cache`): judges read and write it, and the
simulated user does when the run asks for cached user replies.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from assay.errors import ConfigError
from assay.models.cache import MemoryReplyCache, ReplyCache
from assay.models.client import ModelClient, Outcome
from assay.models.policy import AdaptiveLimiter, Clock, RetryPolicy, Sleep
from assay.models.stats import CallStats
from assay.models.types import ModelBackend


@dataclass(frozen=True, slots=True)
class Pacing:
    """The limiter and retry policy every caller of one endpoint shares within a run."""

    limiter: AdaptiveLimiter
    retry: RetryPolicy

    def with_retries(self, max_retries: int | None) -> RetryPolicy:
        """The shared policy with a caller's own number of retries.

        The back-off curve and its random source stay the endpoint's; how many times a
        caller tries again is its own setting (a judge and an agent may differ).
        """
        if max_retries is None or max_retries == self.retry.max_retries:
            return self.retry
        return replace(self.retry, max_retries=max_retries)


class ModelRegistry:
    """The pacing of one run's model calls, per (provider, endpoint), and its reply cache.

    `concurrency` is the calls in flight per endpoint for a caller that does not ask
    for a bound of its own (the agents); a caller asking for fewer lowers the endpoint's
    bound for everyone (the strictest wins), since they all hit the same server.
    `max_retries` is the retries of a caller that does not say.
    """

    def __init__(
        self,
        *,
        concurrency: int = 8,
        max_retries: int = 4,
        cache: ReplyCache | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if concurrency < 1:
            raise ConfigError(f"model call concurrency must be at least 1, got {concurrency}")
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.cache: ReplyCache = cache if cache is not None else MemoryReplyCache()
        self._clock = clock
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._pacing: dict[tuple[str, str], Pacing] = {}

    @property
    def sleep(self) -> Sleep:
        """How the run's model callers wait (a test's fake clock, or asyncio.sleep)."""
        return self._sleep

    @property
    def endpoints(self) -> list[tuple[str, str]]:
        """The (provider, endpoint) pairs paced so far."""
        return list(self._pacing)

    def pacing(self, provider: str, endpoint: str, *, concurrency: int | None = None) -> Pacing:
        """The limiter and retry policy of `endpoint` (made on first use).

        `concurrency`: the most calls in flight this caller wants; a bound below the
        endpoint's lowers it for every caller of that endpoint.
        """
        key = (provider, endpoint)
        known = self._pacing.get(key)
        if known is None:
            limiter = AdaptiveLimiter(
                concurrency or self.concurrency, clock=self._clock, sleep=self._sleep
            )
            retry = RetryPolicy(max_retries=self.max_retries, rng=self._rng)
            known = self._pacing[key] = Pacing(limiter, retry)
        elif concurrency is not None:
            known.limiter.cap(concurrency)
        return known

    def client(
        self,
        backend: ModelBackend,
        *,
        role: str,
        stats: CallStats,
        timeout_s: float,
        use_cache: bool,
        concurrency: int | None = None,
        max_retries: int | None = None,
        parallelism: int | None = None,
        cache: ReplyCache | None = None,
        in_flight: dict[str, asyncio.Future[Outcome]] | None = None,
    ) -> ModelClient:
        """A `ModelClient` over `backend` paced with its endpoint's shared pacing.

        `cache` defaults to the registry's (the run's) cache; `use_cache` False makes
        every request a call.
        """
        pacing = self.pacing(backend.backend, endpoint_of(backend), concurrency=concurrency)
        return ModelClient(
            backend,
            cache=cache if cache is not None else self.cache,
            limiter=pacing.limiter,
            retry=pacing.with_retries(max_retries),
            stats=stats,
            timeout_s=timeout_s,
            use_cache=use_cache,
            parallelism=parallelism,
            sleep=self._sleep,
            in_flight=in_flight,
            role=role,
        )

    async def flush(self) -> None:
        """Write every reply cached so far."""
        await self.cache.flush()


def endpoint_of(backend: ModelBackend) -> str:
    """Where `backend` sends its calls ("" for a backend that does not say)."""
    return str(getattr(backend, "endpoint", "") or "")


_CURRENT: ContextVar[ModelRegistry | None] = ContextVar("assay_model_registry", default=None)


def current_registry() -> ModelRegistry | None:
    """The registry of the run this code runs in (None outside a run)."""
    return _CURRENT.get()


def pacing_in_run(provider: str, endpoint: str, *, fallback: ModelRegistry) -> Pacing:
    """`endpoint`'s pacing in the current run's registry, else in `fallback` (the
    caller's own, for calls made outside a run)."""
    return (current_registry() or fallback).pacing(provider, endpoint)


@contextmanager
def registry_in_context(registry: ModelRegistry) -> Iterator[ModelRegistry]:
    """Make `registry` the current run's for the code (and the tasks it starts) inside."""
    token = _CURRENT.set(registry)
    try:
        yield registry
    finally:
        _CURRENT.reset(token)
