"""The judge reply cache: memory, and the store's judge_cache table behind a write buffer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from assay.errors import StoreError
from assay.judges import Judge, JudgePool, MemoryReplyCache, StoreReplyCache
from assay.judges.types import BackendReply, GenerationSettings
from assay.metrics.judged.base import JudgeModelOptions
from assay.store import Store, judge_cache_key


@pytest.fixture
def store(tmp_path: Path) -> Any:
    db = Store.open(f"sqlite:///{tmp_path / 'assay.db'}")
    yield db
    db.close()


def test_memory_cache_round_trip() -> None:
    cache = MemoryReplyCache()
    cache.put("a", backend="openai", model="m", reply="yes")
    assert cache.get_many(["a", "b"]) == {"a": "yes"}
    assert cache.write_errors == []


async def test_store_cache_writes_in_the_background_and_survives_reopening(
    store: Store, tmp_path: Path
) -> None:
    cache = StoreReplyCache(store.judge_cache)
    for i in range(150):  # more than one write batch
        cache.put(f"k{i}", backend="openai", model="m", reply=f"r{i}")
    # Pending writes are readable at once.
    assert cache.get_many(["k0", "k149", "nope"]) == {"k0": "r0", "k149": "r149"}
    await cache.flush()
    assert store.judge_cache.get("k149") == "r149"
    reopened = Store.open(f"sqlite:///{tmp_path / 'assay.db'}")
    try:
        fresh = StoreReplyCache(reopened.judge_cache)
        assert len(fresh.get_many([f"k{i}" for i in range(150)])) == 150
    finally:
        reopened.close()


async def test_store_cache_treats_foreign_values_as_misses(store: Store) -> None:
    store.judge_cache.put("odd", backend="x", model="y", reply={"not": "text"})
    cache = StoreReplyCache(store.judge_cache)
    assert cache.get_many(["odd"]) == {}
    cache.put("odd", backend="x", model="y", reply="text now")
    await cache.flush()
    assert store.judge_cache.get("odd") == "text now"


class _BrokenCache:
    """A judge_cache whose writes fail, as a full disk or a lost database would."""

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        return {}

    def put_many(self, entries: Iterable[tuple[str, str, str, Any]]) -> None:
        raise StoreError("database is locked")


async def test_failed_cache_writes_are_counted_not_fatal() -> None:
    cache = StoreReplyCache(_BrokenCache())  # type: ignore[arg-type]
    cache.put("a", backend="openai", model="m", reply="yes")
    cache.put("b", backend="openai", model="m", reply="no")
    await cache.flush()
    assert cache.write_errors == ["database is locked", "database is locked"]


class _EchoBackend:
    backend = "openai"
    model = "echo"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, messages: Any, settings: GenerationSettings) -> BackendReply:
        self.calls += 1
        await asyncio.sleep(0)
        return BackendReply("yes", 3, 1)

    async def aclose(self) -> None:
        return None


async def test_a_pool_on_a_store_reuses_replies_across_runs(store: Store) -> None:
    prompt = [{"role": "user", "content": "same question"}]
    backend = _EchoBackend()

    def factory(model: str, options: JudgeModelOptions | None, *, timeout_s: float) -> Any:
        return backend

    for run in range(2):
        pool = JudgePool(store=store, default_model="openai:echo", backend_factory=factory)
        judge = pool.judge("openai:echo")
        assert isinstance(judge, Judge)
        assert await judge.generate(prompt, 2, {"temperature": 0.0}) == ["yes", "yes"]
        await pool.aclose()
        assert pool.stats.calls == (2 if run == 0 else 0)
        assert pool.stats.cache_hits == (0 if run == 0 else 2)
    assert backend.calls == 2
    # The key is the store's own judge_cache_key over the request.
    key = judge_cache_key(
        backend="openai", model="echo", prompt=prompt, sample=1, settings={"temperature": 0.0}
    )
    assert store.judge_cache.get(key) == "yes"


class _ServedBackend(_EchoBackend):
    """An echo backend at a named endpoint, replying with `reply`."""

    def __init__(self, endpoint: str, reply: str = "yes") -> None:
        super().__init__()
        self.endpoint = endpoint
        self.reply = reply

    async def complete(self, messages: Any, settings: GenerationSettings) -> BackendReply:
        self.calls += 1
        return BackendReply(self.reply)


def _pool_judge(backend: Any, cache: MemoryReplyCache) -> Judge:
    def factory(model: str, options: JudgeModelOptions | None, *, timeout_s: float) -> Any:
        return backend

    judge = JudgePool(cache=cache, backend_factory=factory).judge("openai:echo")
    assert isinstance(judge, Judge)
    return judge


async def test_each_part_of_the_judge_identity_changes_the_key() -> None:
    base: dict[str, Any] = {
        "backend": "openai",
        "model": "m",
        "prompt": [{"role": "user", "content": "q"}],
        "sample": 0,
        "settings": {"temperature": 0.0},
        "endpoint": "http://a/v1/",
        "prompt_version": "correctness.v1",
    }
    variants = [
        {"backend": "anthropic"},
        {"model": "m2"},
        {"prompt": [{"role": "user", "content": "q2"}]},
        {"sample": 1},
        {"settings": {"temperature": 0.5}},
        {"endpoint": "http://b/v1/"},
        {"prompt_version": "correctness.v2"},
    ]
    keys = {judge_cache_key(**base)} | {judge_cache_key(**{**base, **v}) for v in variants}
    assert len(keys) == len(variants) + 1


async def test_the_same_model_at_another_endpoint_is_asked_again() -> None:
    cache = MemoryReplyCache()
    prompt = [{"role": "user", "content": "q"}]
    here, there = _ServedBackend("http://127.0.0.1:1/v1/"), _ServedBackend("http://10.0.0.1/v1/")
    assert await _pool_judge(here, cache).generate(prompt, 1) == ["yes"]
    assert await _pool_judge(here, cache).generate(prompt, 1) == ["yes"]
    assert here.calls == 1
    assert await _pool_judge(there, cache).generate(prompt, 1) == ["yes"]
    assert there.calls == 1


async def test_replies_the_caller_cannot_parse_are_not_cached_nor_read() -> None:
    cache = MemoryReplyCache()
    prompt = [{"role": "user", "content": "q"}]

    def parses(text: str) -> bool:
        return text == "yes"

    broken = _ServedBackend("http://x/", reply="garbage")
    judge = _pool_judge(broken, cache)
    assert await judge.generate(prompt, 2, accept=parses) == ["garbage", "garbage"]
    assert len(cache) == 0
    # A reply cached before (e.g. by an older version) that no longer parses is a miss.
    cache.put(judge.cache_key(prompt, 0, GenerationSettings()), backend="openai", model="echo",
              reply="garbage")  # fmt: skip
    fixed = _ServedBackend("http://x/", reply="yes")
    judge = _pool_judge(fixed, cache)
    assert await judge.generate(prompt, 2, accept=parses) == ["yes", "yes"]
    assert fixed.calls == 2
    assert await judge.generate(prompt, 2, accept=parses) == ["yes", "yes"]
    assert fixed.calls == 2


async def test_a_rendered_prompt_carries_its_version_into_the_key() -> None:
    from assay.metrics.judged.asking import ask
    from assay.metrics.judged.prompts import get_prompt

    cache = MemoryReplyCache()
    backend = _ServedBackend("http://x/")
    judge = _pool_judge(backend, cache)
    messages = get_prompt("correctness").render(
        request="q", response="r", expected_kind="a reference answer", expected="e"
    )
    assert messages.prompt_version == "correctness.v1"
    await ask(judge, messages, 1, {})
    assert cache.get_many([judge.cache_key(messages, 0, GenerationSettings(), "correctness.v1")])
    assert not cache.get_many([judge.cache_key(messages, 0, GenerationSettings())])
