"""A worker of a streamed run's pool keeps the cyclic garbage collector off, which
otherwise walked each batch's output when it came back on and found nothing, and
collects itself between batches, every `_COLLECT_EVERY` of them
(`rows.batch.init_worker`)."""

from __future__ import annotations

import gc
import json
import multiprocessing
import weakref

import pytest

from assay.formats.stream import RawBatch
from assay.metrics.registry import build_metric
from assay.rows import batch as stream_batch
from assay.rows.batch import BatchSpec, init_worker, score_in_worker

ROW = json.dumps({"prompt": "p", "response": "a b", "reference": "a b"}).encode()


class _Node:
    me: _Node


def _cycle_across_batches(batches: int) -> tuple[bool, list[bool]]:
    """In the worker: whether the collector is on, and, after each of `batches`
    batches, whether a cycle dropped before the first is still alive."""
    node = _Node()
    node.me = node
    alive = weakref.ref(node)
    del node
    seen = []
    for number in range(batches):
        batch = RawBatch("rows.jsonl", "jsonl", number, [(number + 1, ROW)])
        assert score_in_worker(batch).tally.cases == 1
        seen.append(alive() is not None)
    return gc.isenabled(), seen


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="forked pools only"
)
def test_a_worker_collects_between_batches_not_during_them() -> None:
    spec = BatchSpec(metrics=(build_metric("response_match_score", 0.5),), store=False)
    context = multiprocessing.get_context("fork")
    with context.Pool(1, initializer=init_worker, initargs=(spec,)) as pool:
        enabled, alive = pool.apply(_cycle_across_batches, (stream_batch._COLLECT_EVERY + 1,))
    assert not enabled
    every = stream_batch._COLLECT_EVERY
    # Alive until a collection: at the latest the one before the worker's 32nd batch.
    assert alive[0]
    assert not alive[every - 1]
    assert alive.index(False) <= every - 1
