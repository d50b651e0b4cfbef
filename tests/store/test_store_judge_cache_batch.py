"""`JudgeCache.put_many`: many replies in one transaction, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from assay.errors import StoreError
from assay.store import Store


def test_put_many_inserts_replaces_and_keeps_the_last_of_a_key(store: Store) -> None:
    cache = store.judge_cache
    cache.put("old", backend="openai", model="m", reply="before")
    cache.put_many(
        [
            ("old", "openai", "m", "after"),  # an existing key is replaced
            ("a", "gemini", "g", "yes"),
            ("b", "openai", "m", {"text": "structured"}),
            ("a", "gemini", "g", "no"),  # the same key twice in one batch: the last wins
        ]
    )
    assert cache.get_many(["old", "a", "b"]) == {
        "old": "after",
        "a": "no",
        "b": {"text": "structured"},
    }
    cache.put_many([])  # nothing to write is fine
    cache.put_many((f"k{i}", "openai", "m", f"r{i}") for i in range(600))
    assert len(cache.get_many([f"k{i}" for i in range(600)])) == 600


def test_put_many_refuses_a_none_reply_and_writes_nothing(store: Store) -> None:
    with pytest.raises(StoreError, match="cannot be None"):
        store.judge_cache.put_many([("x", "openai", "m", "ok"), ("y", "openai", "m", None)])
    assert store.judge_cache.get_many(["x", "y"]) == {}
