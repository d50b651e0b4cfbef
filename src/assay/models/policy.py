"""How model calls are paced: an adaptive concurrency limit and a retry policy.

The one retry policy of everything that calls a model or a model-backed endpoint:
judges, the simulated user and the HTTP agent all back off the same way.

`AdaptiveLimiter` bounds the calls in flight to one backend and adapts the bound the
AIMD way: a 429 or 5xx halves it (at most once per "generation" of calls, so a burst of
rejections from one window counts once), a Retry-After pauses new calls until then, and
successes raise it again by one per window of successful calls, up to the configured
maximum. `RetryPolicy` computes exponential back-off with full jitter. Both take their
clock, sleep and random source as arguments so tests run them deterministically.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from assay.errors import ConfigError

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Permit:
    """One acquired slot; `generation` is the limiter's generation when it was taken."""

    generation: int


class AdaptiveLimiter:
    """An AIMD concurrency limit for one backend, shared by every judge using it.

    Waiters are served first come, first served: a released slot is handed straight to
    the oldest waiter, so a steady stream of new calls cannot starve earlier ones.
    """

    def __init__(
        self,
        max_limit: int,
        *,
        min_limit: int = 1,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if max_limit < 1:
            raise ConfigError(f"judge concurrency must be at least 1, got {max_limit}")
        if not 1 <= min_limit <= max_limit:
            raise ConfigError(
                f"the minimum judge concurrency must be between 1 and {max_limit}, got {min_limit}"
            )
        self.max_limit = max_limit
        self.min_limit = min_limit
        self.limit = max_limit
        self.in_flight = 0
        self.decreases = 0
        self.increases = 0
        self._clock = clock
        self._sleep = sleep
        self._generation = 0
        self._successes = 0
        self._paused_until = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()

    def cap(self, max_limit: int) -> None:
        """Lower the most calls in flight to `max_limit` (never raises it): another
        caller of the same endpoint asked for fewer."""
        if max_limit < 1:
            raise ConfigError(f"judge concurrency must be at least 1, got {max_limit}")
        if max_limit >= self.max_limit:
            return
        self.max_limit = max_limit
        self.min_limit = min(self.min_limit, max_limit)
        self.limit = min(self.limit, max_limit)

    @property
    def paused_until(self) -> float:
        """Clock time before which no new call starts (a server's Retry-After)."""
        return self._paused_until

    async def acquire(self) -> Permit:
        """Wait for a free slot (and for any Retry-After pause) and take it."""
        if self._waiters or self.in_flight >= self.limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    # The slot was handed over just before the cancellation: give it back.
                    self.in_flight -= 1
                    self._wake()
                elif waiter in self._waiters:  # `_wake` may already have dropped it
                    self._waiters.remove(waiter)
                raise
            # `_wake` counted the slot for us when it handed it over.
        else:
            self.in_flight += 1
        try:
            await self._wait_for_pause()
        except asyncio.CancelledError:
            self.in_flight -= 1
            self._wake()
            raise
        return Permit(self._generation)

    async def _wait_for_pause(self) -> None:
        # Holding the slot while paused costs nothing: no call may start anyway.
        while (wait := self._paused_until - self._clock()) > 0:
            await self._sleep(wait)

    def release(
        self,
        permit: Permit,
        *,
        ok: bool,
        overloaded: bool = False,
        retry_after: float | None = None,
    ) -> None:
        """Give the slot back, telling the limiter how the call went.

        `ok`: the call succeeded (counts towards raising the limit). `overloaded`: the
        backend answered 429 or 5xx (halves the limit once per generation).
        `retry_after`: seconds the backend asked us to wait before the next call.
        """
        self.in_flight -= 1
        if ok:
            self._on_success()
        elif overloaded:
            self._on_overload(permit)
        if retry_after is not None and retry_after > 0:
            self._paused_until = max(self._paused_until, self._clock() + retry_after)
        self._wake()

    def _on_success(self) -> None:
        if self.limit >= self.max_limit:
            return
        self._successes += 1
        # Additive increase: one more slot per window of `limit` successful calls.
        if self._successes >= self.limit:
            self._successes = 0
            self.limit += 1
            self.increases += 1

    def _on_overload(self, permit: Permit) -> None:
        if permit.generation != self._generation:
            return  # started before the last decrease: that decrease already covered it
        self._generation += 1
        self._successes = 0
        new_limit = max(self.min_limit, self.limit // 2)
        if new_limit < self.limit:
            self.limit = new_limit
            self.decreases += 1

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            if waiter.done():
                continue
            self.in_flight += 1
            waiter.set_result(None)


@dataclass
class RetryPolicy:
    """Exponential back-off with full jitter.

    Before retry number `attempt` (1-based) the delay is uniform in
    [0, min(max_delay_s, base_delay_s * 2 ** (attempt - 1))], and never shorter than the
    server's Retry-After.
    """

    max_retries: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ConfigError(f"judge max_retries must be 0 or more, got {self.max_retries}")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ConfigError("judge retry delays must not be negative")

    def should_retry(self, attempt: int, retryable: bool) -> bool:
        """Whether a call that failed on try `attempt` (0-based) is tried again."""
        return retryable and attempt < self.max_retries

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry `attempt` (1-based)."""
        cap = min(self.max_delay_s, self.base_delay_s * (2 ** max(attempt - 1, 0)))
        jittered = self.rng.uniform(0.0, cap)
        return max(jittered, retry_after or 0.0)
