"""The judge cache's `CacheReader`: the lookups of a judged run over one held connection."""

from __future__ import annotations

from assay.models.cache import StoreReplyCache
from assay.store import Store


def test_a_held_reader_sees_replies_committed_after_it_opened(store: Store) -> None:
    reader = store.judge_cache.reader()
    try:
        assert reader.get_many(["k1"]) == {}
        # Written through another store on the same database (another process would
        # be the same): each lookup is its own statement, so it sees the new reply.
        with Store.open(store.url) as other:
            other.judge_cache.put("k1", backend="openai", model="m", reply="yes")
        assert reader.get_many(["k1", "k2"]) == {"k1": "yes"}
        store.judge_cache.put("k2", backend="openai", model="m", reply="no")
        assert reader.get_many(["k2", "k1", "k2"]) == {"k1": "yes", "k2": "no"}
    finally:
        reader.close()


def test_more_keys_than_one_statement_binds_are_looked_up_in_chunks(store: Store) -> None:
    keys = [f"key-{i:04d}" for i in range(1_200)]
    store.judge_cache.put_many((k, "openai", "m", f"reply {k}") for k in keys[::3])
    reader = store.judge_cache.reader()
    try:
        found = reader.get_many(keys)
    finally:
        reader.close()
    assert found == {k: f"reply {k}" for k in keys[::3]}


async def test_the_run_cache_gives_its_connection_back_when_flushed(store: Store) -> None:
    pool = store.engine.pool
    before = pool.checkedout()  # type: ignore[attr-defined]
    cache = StoreReplyCache(store.judge_cache)
    assert cache.get_many(["absent"]) == {}
    assert pool.checkedout() == before + 1  # type: ignore[attr-defined]  # held for the run
    cache.put("absent", backend="openai", model="m", reply="now here")
    await cache.flush()
    assert pool.checkedout() == before  # type: ignore[attr-defined]
    assert StoreReplyCache(store.judge_cache).get_many(["absent"]) == {"absent": "now here"}
