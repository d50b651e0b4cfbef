"""The store's ledger of judge batches (`--judge-batch`, issue #38), on SQLite and
PostgreSQL: a batch is open until marked collected, per judge (backend, endpoint, model),
and a batch id is recorded once."""

from __future__ import annotations

import pytest

from assay.errors import StoreError
from assay.store import Store

JUDGE = {"backend": "openai", "endpoint": "http://127.0.0.1:1/v1/", "model": "m"}


def test_a_batch_is_open_until_collected_and_only_for_its_judge(store: Store) -> None:
    batches = store.judge_batches
    assert batches.open_batches(**JUDGE) == {}
    batches.record("batch_1", keys=["k1", "k2"], **JUDGE)
    batches.record("batch_2", keys=["k3"], **JUDGE)
    batches.record("batch_3", keys=["k4"], **{**JUDGE, "model": "other"})
    assert batches.open_batches(**JUDGE) == {"batch_1": ["k1", "k2"], "batch_2": ["k3"]}
    assert batches.open_batches(**{**JUDGE, "endpoint": "http://elsewhere/v1/"}) == {}
    batches.mark_collected(["batch_1"])
    batches.mark_collected([])
    assert batches.open_batches(**JUDGE) == {"batch_2": ["k3"]}
    assert batches.open_batches(**{**JUDGE, "model": "other"}) == {"batch_3": ["k4"]}


def test_a_batch_id_is_recorded_once(store: Store) -> None:
    store.judge_batches.record("batch_1", keys=["k1"], **JUDGE)
    with pytest.raises(StoreError):
        store.judge_batches.record("batch_1", keys=["k2"], **JUDGE)
    assert store.judge_batches.open_batches(**JUDGE) == {"batch_1": ["k1"]}
