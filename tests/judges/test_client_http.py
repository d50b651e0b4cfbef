"""The real openai SDK path through `JudgePool` against the stand-in server on 127.0.0.1.

Retries on 429 and 500 (the server counts the requests), the adaptive limit, timeouts,
garbage bodies, the cache across runs, and votes through a real judged metric. Back-off
waits use a fake clock, so only the HTTP round trips take real time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.core import EvalCase, EvalSet, Status, Turn
from assay.engine import arun
from assay.judges import Judge, JudgeCallError, JudgePool
from assay.metrics.judged.base import JudgeModelOptions
from assay.metrics.registry import build_metric
from assay.store import Store
from assay.testing.judge_server import JudgeServer, Script, StandinReply

PROMPT = [
    {"role": "system", "content": "You grade answers."},
    {"role": "user", "content": "Is 2 + 2 = 4? Answer yes or no."},
]


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


@pytest.fixture
def server() -> Iterator[JudgeServer]:
    with JudgeServer("yes") as running:
        yield running


def _pool(server: JudgeServer, script: Script, **kw: Any) -> tuple[JudgePool, Judge, FakeTime]:
    server.set_script(script)
    t = FakeTime()
    pool = JudgePool(clock=t.clock, sleep=t.sleep, **kw)
    judge = pool.judge("openai:judge-m", JudgeModelOptions(base_url=server.openai_base_url))
    return pool, judge, t


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


async def test_a_reply_comes_back_with_its_tokens(server: JudgeServer) -> None:
    pool, judge, _ = _pool(server, StandinReply("yes", input_tokens=12, output_tokens=1))
    try:
        assert await judge.generate(PROMPT, 1, {"temperature": 0.0}) == ["yes"]
    finally:
        await pool.aclose()
    (request,) = server.requests
    assert request.model == "judge-m"
    assert [dict(m) for m in request.messages] == PROMPT
    assert request.temperature == 0.0
    assert (pool.stats.calls, pool.stats.input_tokens, pool.stats.output_tokens) == (1, 12, 1)


async def test_429_is_retried_after_retry_after_and_shrinks_the_limit(
    server: JudgeServer,
) -> None:
    script = [StandinReply.rate_limited(retry_after=3), "yes"]
    pool, judge, t = _pool(server, script, concurrency=8)
    try:
        assert await judge.generate(PROMPT, 1, {}) == ["yes"]
    finally:
        await pool.aclose()
    assert len(server.requests) == 2
    assert (pool.stats.calls, pool.stats.retries, pool.stats.errors) == (2, 1, 0)
    assert t.sleeps and t.sleeps[0] >= 3  # the server's Retry-After was honoured
    assert judge.limiter.limit == 4  # halved by the 429 (then one success: no recovery yet)


async def test_500s_are_retried_then_given_up_with_the_error_text(server: JudgeServer) -> None:
    script = [StandinReply.server_error(500, "the model crashed")] * 10
    pool, judge, _ = _pool(server, script, max_retries=2)
    try:
        with pytest.raises(JudgeCallError) as info:
            await judge.generate(PROMPT, 1, {})
    finally:
        await pool.aclose()
    assert len(server.requests) == 3  # one call and two retries
    assert "500" in info.value.message
    assert (pool.stats.retries, pool.stats.errors) == (2, 1)


async def test_a_slow_reply_times_out(server: JudgeServer) -> None:
    pool, judge, _ = _pool(server, StandinReply("late", delay=2.0), timeout_s=0.2, max_retries=1)
    try:
        with pytest.raises(JudgeCallError, match=r"timeout|timed out"):
            await judge.generate(PROMPT, 1, {})
    finally:
        await pool.aclose()
    assert len(server.requests) == 2
    assert pool.stats.errors == 1


async def test_a_garbage_body_is_an_error_with_its_text(server: JudgeServer) -> None:
    pool, judge, _ = _pool(server, StandinReply.garbage("<html>bad gateway"), max_retries=0)
    try:
        with pytest.raises(JudgeCallError) as info:
            await judge.generate(PROMPT, 1, {})
    finally:
        await pool.aclose()
    assert info.value.message
    assert pool.stats.errors == 1


async def test_some_samples_failing_are_dropped(server: JudgeServer) -> None:
    bad = StandinReply(status=400, text="bad request")
    pool, judge, _ = _pool(server, ["yes", bad, "no"])
    try:
        replies = await judge.generate(PROMPT, 3, {})
    finally:
        await pool.aclose()
    assert sorted(replies) == ["no", "yes"]
    assert (pool.stats.calls, pool.stats.errors) == (3, 1)


async def test_a_second_run_on_the_store_makes_no_request(
    server: JudgeServer, tmp_path: Path
) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'assay.db'}")
    try:
        for run in range(2):
            pool, judge, _ = _pool(server, "yes", store=store)
            try:
                assert await judge.generate(PROMPT, 3, {"temperature": 1.0}) == ["yes"] * 3
            finally:
                await pool.aclose()
            assert pool.stats.cache_hits == (0 if run == 0 else 3)
        assert len(server.requests) == 3
        # --no-cache: every sample is called again.
        pool, judge, _ = _pool(server, "yes", store=store, use_cache=False)
        try:
            await judge.generate(PROMPT, 3, {"temperature": 1.0})
        finally:
            await pool.aclose()
        assert len(server.requests) == 6
    finally:
        store.close()


def _case() -> EvalSet:
    case = EvalCase(
        id="spider",
        actual=[Turn(user_input="How many legs does a spider have?", final_response="Eight.")],
        reference=[Turn(user_input="How many legs does a spider have?", final_response="8")],
    )
    return EvalSet(id="s", cases=[case])


@pytest.mark.parametrize(
    ("replies", "score"),
    [
        (["yes", "yes", "no"], 1.0),  # majority
        (["yes", "no", "not json at all"], 0.0),  # unparseable left out; the tie is negative
        (["no", "no", "yes"], 0.0),
    ],
)
async def test_votes_through_a_real_metric(
    server: JudgeServer, replies: list[str], score: float
) -> None:
    texts = [
        r if r.startswith("not") else json.dumps({"rationale": "because", "rating": r})
        for r in replies
    ]
    server.set_script(texts)
    pool = JudgePool(default_model="openai:judge-m", concurrency=1)
    metric = build_metric(
        "correctness",
        {"judge_model_options": {"num_samples": 3, "base_url": server.openai_base_url}},
    )
    try:
        result = await arun([_case()], [metric], judges=pool)
    finally:
        await pool.aclose()
    outcome = result.cases[0].metrics["correctness"]
    assert outcome.score == score
    assert outcome.status is (Status.PASSED if score == 1.0 else Status.FAILED)
    assert result.summary["judge/calls"] == 3


def test_evaluate_takes_the_judge_and_caches_in_its_store(
    server: JudgeServer, tmp_path: Path
) -> None:
    from assay.api import evaluate

    server.set_script(json.dumps({"rationale": "matches", "rating": "yes"}))
    rows = [
        {"request": "2 + 2?", "response": "4", "expected_response": "four"},
        {"request": "3 + 3?", "response": "6", "expected_response": "six"},
    ]
    store = f"sqlite:///{tmp_path / 'assay.db'}"
    metrics = {"correctness": {"judge_model_options": {"base_url": server.openai_base_url}}}
    kw: dict[str, Any] = {"format": "mlflow", "judge": "openai:j", "store": store}
    first = evaluate(rows, metrics, judge_concurrency=2, **kw)
    assert first.summary["correctness/mean"] == 1.0
    assert first.summary["judge/calls"] == 2
    second = evaluate(rows, metrics, **kw)
    assert (second.summary["judge/calls"], second.summary["judge/cache_hits"]) == (0, 2)
    third = evaluate(rows, metrics, use_cache=False, **kw)
    assert third.summary["judge/calls"] == 2
    assert len(server.requests) == 4
