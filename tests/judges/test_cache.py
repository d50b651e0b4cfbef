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
