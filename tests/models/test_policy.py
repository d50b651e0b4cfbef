"""The adaptive limiter (AIMD, Retry-After, FIFO hand-over) and the retry policy.

Time is a fake clock advanced by a fake sleep, so nothing here waits for real.
"""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest

from assay.errors import ConfigError
from assay.models.policy import AdaptiveLimiter, RetryPolicy


class FakeTime:
    """A clock that only moves when something sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def _limiter(max_limit: int, t: FakeTime | None = None, **kw: int) -> AdaptiveLimiter:
    t = t or FakeTime()
    return AdaptiveLimiter(max_limit, clock=t.clock, sleep=t.sleep, **kw)


async def test_at_most_limit_slots_are_taken_and_waiters_are_served_in_order() -> None:
    limiter = _limiter(2)
    a = await limiter.acquire()
    b = await limiter.acquire()
    assert limiter.in_flight == 2
    order: list[str] = []

    async def take(name: str) -> None:
        permit = await limiter.acquire()
        order.append(name)
        limiter.release(permit, ok=True)

    waiting = [asyncio.create_task(take(n)) for n in ("first", "second", "third")]
    await asyncio.sleep(0)
    assert order == []  # both slots are held
    limiter.release(a, ok=True)
    limiter.release(b, ok=True)
    await asyncio.gather(*waiting)
    assert order == ["first", "second", "third"]
    assert limiter.in_flight == 0


async def test_a_new_caller_does_not_jump_the_queue() -> None:
    limiter = _limiter(1)
    held = await limiter.acquire()
    queued = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0)
    limiter.release(held, ok=True)
    # The freed slot went to the queued caller, so a newcomer must wait.
    newcomer = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0)
    assert queued.done() and not newcomer.done()
    limiter.release(queued.result(), ok=True)
    limiter.release(await newcomer, ok=True)
    assert limiter.in_flight == 0


async def test_overload_halves_the_limit_once_per_generation() -> None:
    limiter = _limiter(8)
    permits = [await limiter.acquire() for _ in range(8)]
    # Eight calls of one window all see 429: one halving, not eight.
    for permit in permits:
        limiter.release(permit, ok=False, overloaded=True)
    assert (limiter.limit, limiter.decreases) == (4, 1)
    # A call started after the decrease that is rejected again halves again.
    again = await limiter.acquire()
    limiter.release(again, ok=False, overloaded=True)
    assert limiter.limit == 2
    for _ in range(3):
        p = await limiter.acquire()
        limiter.release(p, ok=False, overloaded=True)
    assert limiter.limit == 1  # never below the minimum


async def test_a_plain_failure_does_not_change_the_limit() -> None:
    limiter = _limiter(4)
    permit = await limiter.acquire()
    limiter.release(permit, ok=False, overloaded=False)
    assert limiter.limit == 4


async def test_successes_recover_the_limit_additively_up_to_the_maximum() -> None:
    limiter = _limiter(8)
    permit = await limiter.acquire()
    limiter.release(permit, ok=False, overloaded=True)
    assert limiter.limit == 4
    seen = [limiter.limit]
    for _ in range(40):
        p = await limiter.acquire()
        limiter.release(p, ok=True)
        seen.append(limiter.limit)
    # One more slot per window of `limit` successes: 4 successes -> 5, 5 more -> 6, ...
    assert seen[4] == 5 and seen[3] == 4
    assert seen[9] == 6 and seen[8] == 5
    assert max(seen) == 8 and seen[-1] == 8
    assert all(b - a in (0, 1) for a, b in itertools.pairwise(seen))


async def test_a_shrunk_limit_holds_back_waiters_until_calls_drain() -> None:
    limiter = _limiter(4)
    permits = [await limiter.acquire() for _ in range(4)]
    waiter = asyncio.create_task(limiter.acquire())
    limiter.release(permits[0], ok=False, overloaded=True)  # limit 4 -> 2, 3 in flight
    await asyncio.sleep(0)
    assert not waiter.done()
    limiter.release(permits[1], ok=True)  # 2 in flight: still at the limit
    await asyncio.sleep(0)
    assert not waiter.done()
    limiter.release(permits[2], ok=True)
    await asyncio.sleep(0)
    assert waiter.done()
    limiter.release(permits[3], ok=True)
    limiter.release(waiter.result(), ok=True)
    assert limiter.in_flight == 0


async def test_retry_after_pauses_new_calls_until_then() -> None:
    t = FakeTime()
    limiter = _limiter(4, t)
    permit = await limiter.acquire()
    limiter.release(permit, ok=False, overloaded=True, retry_after=2.5)
    assert limiter.paused_until == 2.5
    started = t.now
    again = await limiter.acquire()
    assert t.now - started == pytest.approx(2.5)
    assert t.sleeps == [pytest.approx(2.5)]
    limiter.release(again, ok=True)
    # The pause is over: the next call does not wait.
    await limiter.acquire()
    assert t.sleeps == [pytest.approx(2.5)]


async def test_a_cancelled_waiter_gives_its_place_up() -> None:
    limiter = _limiter(1)
    held = await limiter.acquire()
    cancelled = asyncio.create_task(limiter.acquire())
    after = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.sleep(0)
    limiter.release(held, ok=True)
    permit = await after
    assert limiter.in_flight == 1
    limiter.release(permit, ok=True)
    assert limiter.in_flight == 0


async def test_a_waiter_cancelled_after_the_hand_over_returns_the_slot() -> None:
    limiter = _limiter(1)
    held = await limiter.acquire()
    waiter = asyncio.create_task(limiter.acquire())
    await asyncio.sleep(0)
    limiter.release(held, ok=True)  # hands the slot to `waiter` ...
    waiter.cancel()  # ... which is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert limiter.in_flight == 0
    permit = await limiter.acquire()
    limiter.release(permit, ok=True)


def test_limits_are_checked() -> None:
    with pytest.raises(ConfigError, match="at least 1"):
        AdaptiveLimiter(0)
    with pytest.raises(ConfigError, match="between 1 and 2"):
        AdaptiveLimiter(2, min_limit=3)
    with pytest.raises(ConfigError, match="max_retries"):
        RetryPolicy(max_retries=-1)


def test_backoff_is_exponential_with_full_jitter() -> None:
    policy = RetryPolicy(max_retries=4, base_delay_s=0.5, max_delay_s=3.0, rng=random.Random(7))
    for attempt, cap in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (9, 3.0)]:
        delays = [policy.delay(attempt) for _ in range(300)]
        assert all(0.0 <= d <= cap for d in delays)
        # Full jitter spreads over the whole range, not just near the cap.
        assert min(delays) < 0.2 * cap and max(delays) > 0.8 * cap


def test_backoff_never_undercuts_retry_after() -> None:
    policy = RetryPolicy(base_delay_s=0.5, rng=random.Random(1))
    assert all(policy.delay(1, retry_after=4.0) == 4.0 for _ in range(50))


def test_should_retry_counts_attempts_and_respects_retryable() -> None:
    policy = RetryPolicy(max_retries=2)
    assert policy.should_retry(0, True) and policy.should_retry(1, True)
    assert not policy.should_retry(2, True)
    assert not policy.should_retry(0, False)
