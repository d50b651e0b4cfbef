"""CES resources (evaluations, datasets, personas) and the judge reply cache."""

from __future__ import annotations

import pytest

from assay.errors import StoreError
from assay.store import (
    EtagMismatchError,
    ResourceConflictError,
    ResourceNotFoundError,
    Store,
    judge_cache_key,
)

EVALUATION = {
    "displayName": "Refund for a late order",
    "golden": {"turns": [{"steps": [{"userInput": {"text": "Where is my order?"}}]}]},
    "tags": ["refunds"],
}


def test_put_creates_and_get_reads(store: Store) -> None:
    created = store.resources.put(
        "shop", "evaluations", "eval-1", display_name="Refund for a late order", body=EVALUATION
    )
    assert created.body == EVALUATION
    assert created.create_time == created.update_time
    assert len(created.etag) == 16
    assert store.resources.get("shop", "evaluations", "eval-1") == created
    assert store.resources.get("shop", "evaluations", "eval-2") is None
    assert store.resources.get("other-app", "evaluations", "eval-1") is None


def test_update_changes_etag_and_update_time_only(store: Store) -> None:
    first = store.resources.put("shop", "personas", "p1", display_name="Novice", body={"a": 1})
    second = store.resources.put(
        "shop", "personas", "p1", display_name="Novice user", body={"a": 2}, etag=first.etag
    )
    assert second.etag != first.etag
    assert second.create_time == first.create_time
    assert second.update_time >= first.update_time
    assert (second.display_name, second.body) == ("Novice user", {"a": 2})


def test_stale_etag_is_rejected_and_nothing_changes(store: Store) -> None:
    first = store.resources.put("shop", "personas", "p1", display_name="Novice", body={"v": 1})
    store.resources.put("shop", "personas", "p1", display_name="Novice", body={"v": 2})
    with pytest.raises(EtagMismatchError, match="stale etag"):
        store.resources.put(
            "shop", "personas", "p1", display_name="Novice", body={"v": 3}, etag=first.etag
        )
    current = store.resources.get("shop", "personas", "p1")
    assert current is not None and current.body == {"v": 2}


def test_etag_for_a_missing_resource_is_not_found(store: Store) -> None:
    with pytest.raises(ResourceNotFoundError, match="no evaluations 'ghost' in app 'shop'"):
        store.resources.put(
            "shop", "evaluations", "ghost", display_name="Ghost", body={}, etag="0123456789abcdef"
        )


def test_display_names_are_unique_within_app_and_kind(store: Store) -> None:
    store.resources.put("shop", "evaluations", "e1", display_name="Late order", body={})
    with pytest.raises(ResourceConflictError, match="display name 'Late order' is already used"):
        store.resources.put("shop", "evaluations", "e2", display_name="Late order", body={})
    assert store.resources.get("shop", "evaluations", "e2") is None
    # Same name in another app, or for another kind, is fine.
    store.resources.put("bank", "evaluations", "e2", display_name="Late order", body={})
    store.resources.put("shop", "evaluationDatasets", "d1", display_name="Late order", body={})


def test_list_is_per_app_and_kind_in_creation_order(store: Store) -> None:
    for rid in ("b", "a", "c"):
        store.resources.put("shop", "evaluationDatasets", rid, display_name=f"set {rid}", body={})
    store.resources.put("shop", "personas", "x", display_name="x", body={})
    listed = store.resources.list_resources("shop", "evaluationDatasets")
    assert [r.id for r in listed] == ["b", "a", "c"]
    assert store.resources.list_resources("bank", "evaluationDatasets") == []
    page = store.resources.list_resources("shop", "evaluationDatasets", offset=1, limit=1)
    assert [r.id for r in page] == ["a"]
    rest = store.resources.list_resources("shop", "evaluationDatasets", offset=2, limit=5)
    assert [r.id for r in rest] == ["c"]
    # An offset without a limit: everything after it (SQLite and PostgreSQL say "no
    # limit" differently).
    tail = store.resources.list_resources("shop", "evaluationDatasets", offset=1)
    assert [r.id for r in tail] == ["a", "c"]
    # The bodies-only read sees the same resources, in the same order and scope.
    store.resources.put(
        "shop", "evaluationDatasets", "a", display_name="set a", body={"evaluations": ["e1"]}
    )
    assert store.resources.bodies("shop", "evaluationDatasets") == [
        ("b", {}),
        ("a", {"evaluations": ["e1"]}),
        ("c", {}),
    ]
    assert store.resources.bodies("bank", "evaluationDatasets") == []
    assert [i for i, _ in store.resources.bodies("shop", "personas")] == ["x"]


def test_delete_checks_etag(store: Store) -> None:
    made = store.resources.put("shop", "evaluations", "e1", display_name="E", body={})
    with pytest.raises(EtagMismatchError):
        store.resources.delete("shop", "evaluations", "e1", etag="ffffffffffffffff")
    store.resources.delete("shop", "evaluations", "e1", etag=made.etag)
    assert store.resources.get("shop", "evaluations", "e1") is None
    with pytest.raises(ResourceNotFoundError):
        store.resources.delete("shop", "evaluations", "e1")


def test_unknown_kind_and_empty_display_name_are_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="unknown resource kind 'evaluation'"):
        store.resources.get("shop", "evaluation", "e1")
    with pytest.raises(StoreError, match="non-empty display name"):
        store.resources.put("shop", "personas", "p", display_name="", body={})


def test_judge_cache_key_covers_every_input() -> None:
    base = {
        "backend": "openai",
        "model": "gpt-4o-mini",
        "prompt": [{"role": "user", "content": "Rate this answer"}],
        "sample": 0,
        "settings": {"temperature": 0.0, "max_tokens": 512},
    }
    key = judge_cache_key(**base)  # type: ignore[arg-type]
    assert len(key) == 64
    reordered = dict(base, settings={"max_tokens": 512, "temperature": 0.0})
    assert judge_cache_key(**reordered) == key  # type: ignore[arg-type]
    for name, value in [
        ("backend", "gemini"),
        ("model", "gpt-4o"),
        ("prompt", "Rate this answer"),
        ("sample", 1),
        ("settings", {"temperature": 0.7, "max_tokens": 512}),
    ]:
        assert judge_cache_key(**dict(base, **{name: value})) != key  # type: ignore[arg-type]


def test_judge_cache_put_get_replace_and_clear(store: Store) -> None:
    cache = store.judge_cache
    key = judge_cache_key(backend="openai", model="m", prompt="p", sample=0, settings={})
    assert cache.get(key) is None
    reply = {"text": "Score: 4\nThe answer is correct.", "usage": {"output_tokens": 9}}
    cache.put(key, backend="openai", model="m", reply=reply)
    assert cache.get(key) == reply
    cache.put(key, backend="openai", model="m", reply={"text": "Score: 5"})
    assert cache.get(key) == {"text": "Score: 5"}
    other = judge_cache_key(backend="openai", model="m", prompt="p", sample=1, settings={})
    cache.put(other, backend="openai", model="m", reply="plain text reply")
    assert cache.get_many([key, other, "missing"]) == {
        key: {"text": "Score: 5"},
        other: "plain text reply",
    }
    assert cache.clear() == 2
    assert cache.get(key) is None


def test_judge_cache_get_many_handles_large_batches(store: Store) -> None:
    keys = [f"{i:064x}" for i in range(1200)]
    for k in keys[::100]:
        store.judge_cache.put(k, backend="b", model="m", reply={"k": k})
    found = store.judge_cache.get_many(keys)
    assert found == {k: {"k": k} for k in keys[::100]}


def test_judge_cache_refuses_none_reply(store: Store) -> None:
    with pytest.raises(StoreError, match="cannot be None"):
        store.judge_cache.put("k", backend="b", model="m", reply=None)


def test_create_many_is_all_or_nothing_and_keeps_the_order(store: Store) -> None:
    items = [(f"id{i}", f"name {i}", {"n": i}) for i in range(250)]
    made = store.resources.create_many("shop", "evaluations", items[::-1])
    assert [r.id for r in made] == [i for i, _, _ in items[::-1]]
    listed = store.resources.list_resources("shop", "evaluations")
    assert [r.id for r in listed] == [i for i, _, _ in items[::-1]]  # the order given
    assert listed[0].body == {"n": 249}
    # One clash (a display name taken) and none of the batch is created.
    clash = [("new1", "fresh", {}), ("new2", "name 3", {})]
    with pytest.raises(ResourceConflictError):
        store.resources.create_many("shop", "evaluations", clash)
    assert store.resources.get("shop", "evaluations", "new1") is None
    assert store.resources.create_many("shop", "evaluations", []) == []
