"""`Judge` and `JudgePool` over an in-process fake backend: samples, cache, retries, limits.

The HTTP path (the real openai SDK against the stand-in server) is in
test_client_http.py.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import pytest

from assay.errors import ConfigError
from assay.judges import (
    BackendReply,
    GenerationSettings,
    Judge,
    JudgeCallError,
    JudgePool,
    MemoryReplyCache,
)
from assay.judges.stats import JudgeStats
from assay.metrics.judged.base import JudgedMetric, JudgedOptions, JudgeModelOptions
from assay.models.policy import AdaptiveLimiter, RetryPolicy

Step = Callable[[int, Sequence[Mapping[str, str]], GenerationSettings], BackendReply]


class FakeBackend:
    """A scripted backend: `script(call_index, messages, settings)` gives each reply.

    The script may raise JudgeCallError; `gate` (an Event) holds every call until set.
    """

    backend = "fake"

    def __init__(self, script: Step | None = None, *, model: str = "m1") -> None:
        self.model = model
        self.script = script or (lambda i, m, s: BackendReply(f"reply {i}", 10, 2))
        self.calls: list[tuple[list[dict[str, str]], GenerationSettings]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.gate: asyncio.Event | None = None
        self.closed = False

    async def complete(
        self, messages: Sequence[Mapping[str, str]], settings: GenerationSettings
    ) -> BackendReply:
        index = len(self.calls)
        self.calls.append(([dict(m) for m in messages], settings))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
            await asyncio.sleep(0)
            return self.script(index, messages, settings)
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        self.closed = True


class NoSleep:
    """A fake clock: records the delays and moves time on instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def _judge(
    backend: FakeBackend,
    *,
    limit: int = 8,
    max_retries: int = 4,
    timeout_s: float = 5.0,
    use_cache: bool = True,
    cache: MemoryReplyCache | None = None,
    sleep: NoSleep | None = None,
) -> Judge:
    sleep = sleep or NoSleep()
    return Judge(
        backend,
        cache=cache if cache is not None else MemoryReplyCache(),
        limiter=AdaptiveLimiter(limit, clock=sleep.clock, sleep=sleep),
        retry=RetryPolicy(max_retries=max_retries, rng=random.Random(0)),
        stats=JudgeStats(),
        timeout_s=timeout_s,
        use_cache=use_cache,
        sleep=sleep,
    )


PROMPT = [{"role": "system", "content": "judge"}, {"role": "user", "content": "is 4 = 4?"}]


async def test_n_samples_are_n_calls_in_sample_order() -> None:
    backend = FakeBackend()
    judge = _judge(backend)
    replies = await judge.generate(PROMPT, 3, {"temperature": 0.5, "json_schema": {"type": "x"}})
    assert sorted(replies) == ["reply 0", "reply 1", "reply 2"]
    assert len(backend.calls) == 3
    messages, settings = backend.calls[0]
    assert messages == PROMPT
    assert settings == GenerationSettings(temperature=0.5, json_schema={"type": "x"})
    stats = judge.stats
    assert (stats.calls, stats.cache_hits, stats.input_tokens, stats.output_tokens) == (3, 0, 30, 6)


async def test_rerunning_unchanged_work_makes_no_call() -> None:
    backend = FakeBackend()
    cache = MemoryReplyCache()
    first = await _judge(backend, cache=cache).generate(PROMPT, 3, {})
    again = _judge(backend, cache=cache)
    assert await again.generate(PROMPT, 3, {}) == first
    assert len(backend.calls) == 3
    assert (again.stats.calls, again.stats.cache_hits) == (0, 3)
    # One more sample than before: only the new sample index is called.
    await again.generate(PROMPT, 4, {})
    assert len(backend.calls) == 4 and again.stats.cache_hits == 6


@pytest.mark.parametrize(
    "change",
    [
        {"settings": {"temperature": 0.9}},
        {"prompt": [{"role": "user", "content": "is 4 = 5?"}]},
        {"model": "m2"},
    ],
)
async def test_the_cache_key_covers_prompt_settings_and_model(change: dict[str, Any]) -> None:
    cache = MemoryReplyCache()
    await _judge(FakeBackend(), cache=cache).generate(PROMPT, 1, {})
    backend = FakeBackend(model=change.get("model", "m1"))
    await _judge(backend, cache=cache).generate(
        change.get("prompt", PROMPT), 1, change.get("settings", {})
    )
    assert len(backend.calls) == 1


async def test_no_cache_bypasses_reads_but_still_writes() -> None:
    cache = MemoryReplyCache()
    backend = FakeBackend()
    await _judge(backend, cache=cache).generate(PROMPT, 2, {})
    bypass = _judge(backend, cache=cache, use_cache=False)
    await bypass.generate(PROMPT, 2, {})
    assert len(backend.calls) == 4 and bypass.stats.cache_hits == 0
    assert len(cache) == 2
    # The bypassing run wrote its (newer) replies: a cached run now returns those.
    assert await _judge(backend, cache=cache).generate(PROMPT, 2, {}) == ["reply 2", "reply 3"]


async def test_identical_requests_in_flight_share_one_call() -> None:
    backend = FakeBackend()
    backend.gate = asyncio.Event()
    judge = _judge(backend)
    both = asyncio.gather(judge.generate(PROMPT, 1, {}), judge.generate(PROMPT, 1, {}))
    await asyncio.sleep(0.001)
    backend.gate.set()
    assert await both == [["reply 0"], ["reply 0"]]
    assert len(backend.calls) == 1
    assert (judge.stats.calls, judge.stats.cache_hits) == (1, 1)


def _failing(errors: dict[int, JudgeCallError]) -> Step:
    def step(i: int, messages: Any, settings: Any) -> BackendReply:
        if i in errors:
            raise errors[i]
        return BackendReply(f"reply {i}")

    return step


async def test_retryable_errors_are_retried_with_backoff() -> None:
    sleep = NoSleep()
    errors = {
        0: JudgeCallError("HTTP 429", retryable=True, status=429, retry_after=1.5),
        1: JudgeCallError("HTTP 503", retryable=True, status=503),
    }
    backend = FakeBackend(_failing(errors))
    judge = _judge(backend, sleep=sleep)
    assert await judge.generate(PROMPT, 1, {}) == ["reply 2"]
    assert (judge.stats.calls, judge.stats.retries, judge.stats.errors) == (3, 2, 0)
    assert sleep.delays[0] == 1.5  # Retry-After is honoured (and not waited twice)
    assert len(sleep.delays) == 2
    assert 0 <= sleep.delays[1] <= 1.0  # second retry: jitter within base * 2
    # The 429 halved the limit; the 503 came from a call of the new generation: again.
    assert judge.limiter.limit == 2


async def test_a_non_retryable_error_is_not_retried() -> None:
    backend = FakeBackend(_failing({0: JudgeCallError("HTTP 400 bad model", retryable=False)}))
    judge = _judge(backend)
    with pytest.raises(JudgeCallError, match="HTTP 400 bad model"):
        await judge.generate(PROMPT, 1, {})
    assert (judge.stats.calls, judge.stats.retries, judge.stats.errors) == (1, 0, 1)
    assert judge.limiter.limit == 8  # a client error says nothing about load


async def test_retries_stop_after_max_retries_and_keep_the_error_text() -> None:
    always = JudgeCallError("HTTP 500 upstream exploded", retryable=True, status=500)
    backend = FakeBackend(_failing(dict.fromkeys(range(100), always)))
    judge = _judge(backend, max_retries=2)
    with pytest.raises(JudgeCallError) as info:
        await judge.generate(PROMPT, 1, {})
    assert "fake:m1" in info.value.message and "HTTP 500 upstream exploded" in info.value.message
    assert (judge.stats.calls, judge.stats.retries, judge.stats.errors) == (3, 2, 1)


async def test_failed_samples_are_dropped_and_all_failed_raises() -> None:
    bad = JudgeCallError("HTTP 400 nope", retryable=False)
    backend = FakeBackend(_failing({1: bad}))
    judge = _judge(backend)
    replies = await judge.generate(PROMPT, 3, {})
    assert len(replies) == 2 and judge.stats.errors == 1
    # Failed samples are not cached: a re-run calls only the failed sample again.
    await judge.generate(PROMPT, 3, {})
    assert len(backend.calls) == 4
    worse = FakeBackend(_failing(dict.fromkeys(range(5), bad)))
    with pytest.raises(JudgeCallError, match="all 3 judge samples failed"):
        await _judge(worse).generate(PROMPT, 3, {})


async def test_a_slow_call_times_out_and_is_retried() -> None:
    backend = FakeBackend()
    backend.gate = asyncio.Event()  # never set: every call hangs
    judge = _judge(backend, timeout_s=0.005, max_retries=1)
    with pytest.raises(JudgeCallError, match="judge timeout"):
        await judge.generate(PROMPT, 1, {})
    assert (judge.stats.calls, judge.stats.retries, judge.stats.errors) == (2, 1, 1)
    assert backend.in_flight == 0 and judge.limiter.in_flight == 0


async def test_an_unexpected_backend_exception_becomes_error_text() -> None:
    def broken(i: int, messages: Any, settings: Any) -> BackendReply:
        raise KeyError("choices")

    judge = _judge(FakeBackend(broken))
    with pytest.raises(JudgeCallError, match="KeyError"):
        await judge.generate(PROMPT, 1, {})
    assert judge.stats.retries == 0


async def test_calls_in_flight_never_exceed_the_limit() -> None:
    backend = FakeBackend()
    backend.gate = asyncio.Event()
    judge = _judge(backend, limit=3)
    work = asyncio.gather(
        *(judge.generate([{"role": "user", "content": str(i)}], 2, {}) for i in range(10))
    )
    await asyncio.sleep(0.001)
    assert backend.in_flight == 3
    backend.gate.set()
    await work
    assert backend.max_in_flight == 3 and len(backend.calls) == 20


async def test_settings_are_checked() -> None:
    judge = _judge(FakeBackend())
    with pytest.raises(ConfigError, match="unknown judge generation setting 'top_k'"):
        await judge.generate(PROMPT, 1, {"top_k": 3})
    with pytest.raises(ConfigError, match="at least 1 sample"):
        await judge.generate(PROMPT, 0, {})
    assert GenerationSettings.from_mapping({"max_output_tokens": 20, "temperature": None}) == (
        GenerationSettings(max_tokens=20)
    )


# -- JudgePool -----------------------------------------------------------------------------


class _Judged(JudgedMetric):
    name: ClassVar[str] = "judged_for_pool_tests"


def _metric(**judge_options: Any) -> _Judged:
    return _Judged(JudgedOptions(judge_model_options=JudgeModelOptions(**judge_options)))


class Factory:
    """A backend factory recording what it was asked to build."""

    def __init__(self, fail: str | None = None) -> None:
        self.built: list[FakeBackend] = []
        self.fail = fail

    def __call__(
        self, model: str, options: JudgeModelOptions | None, *, timeout_s: float
    ) -> FakeBackend:
        if self.fail is not None:
            raise ConfigError(self.fail)
        backend = FakeBackend(model=model)
        self.built.append(backend)
        return backend


async def test_pool_picks_the_metric_model_else_the_default() -> None:
    factory = Factory()
    pool = JudgePool(default_model="openai:default", backend_factory=factory)
    own = pool.judge_for(_metric(judge_model="gemini-2.5-flash"))
    default = pool.judge_for(_metric())
    assert isinstance(own, Judge) and own.backend.model == "gemini-2.5-flash"
    assert isinstance(default, Judge) and default.backend.model == "openai:default"
    # One judge per model: asking again reuses it; one limiter for the one backend name.
    assert pool.judge_for(_metric()) is default
    assert len(factory.built) == 2 and len(pool.limiters) == 1
    await pool.aclose()
    assert all(b.closed for b in factory.built)


def test_pool_without_any_model_gives_none() -> None:
    assert JudgePool(backend_factory=Factory()).judge_for(_metric()) is None


def test_pool_reports_why_a_judge_cannot_be_built() -> None:
    factory = Factory(fail="the gemini judge backend needs GEMINI_API_KEY")
    pool = JudgePool(backend_factory=factory)
    reason = pool.judge_for(_metric(judge_model="gemini-2.5-flash"))
    assert isinstance(reason, str)
    assert "'gemini-2.5-flash' is not available" in reason and "GEMINI_API_KEY" in reason


def test_a_mistyped_default_model_is_a_usage_error() -> None:
    with pytest.raises(ConfigError, match="unknown judge model 'gpt4'"):
        JudgePool(default_model="gpt4")


async def test_parallelism_limit_caps_one_judge_below_the_backend_limit() -> None:
    factory = Factory()
    pool = JudgePool(default_model="openai:m", concurrency=8, backend_factory=factory)
    judge = pool.judge_for(_metric(parallelism_limit=2))
    assert isinstance(judge, Judge)
    backend = factory.built[0]
    backend.gate = asyncio.Event()
    work = asyncio.ensure_future(judge.generate([{"role": "user", "content": "x"}], 6, {}))
    await asyncio.sleep(0.001)
    assert backend.in_flight == 2
    backend.gate.set()
    await work
    assert backend.max_in_flight == 2


async def test_pool_stats_are_shared_and_summarised() -> None:
    factory = Factory()
    pool = JudgePool(default_model="openai:m", backend_factory=factory)
    judge = pool.judge_for(_metric())
    assert isinstance(judge, Judge)
    await judge.generate(PROMPT, 2, {})
    await judge.generate(PROMPT, 2, {})
    summary = pool.stats.summary()
    assert summary == {
        "judge/calls": 2,
        "judge/cache_hits": 2,
        "judge/retries": 0,
        "judge/errors": 0,
        "judge/input_tokens": 20,
        "judge/output_tokens": 4,
        "judge/cached_tokens": 0,
    }
    assert pool.stats.per_backend["fake"].calls == 2
    assert pool.stats.describe().startswith("judge: 2 calls, 2 cache hits, 0 retries")
