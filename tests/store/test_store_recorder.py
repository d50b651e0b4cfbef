"""StoreRecorder: results land in the store as cases complete, in batches."""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from store_samples import row_result

from assay.core import EvalCase, EvalSet, Turn
from assay.core.results import CaseResult, EvalResult
from assay.engine import RunOptions, build_metrics, run
from assay.errors import StoreError
from assay.store import Store, StoreRecorder

# These tests are about batched writes; however slowly the machine runs them, the
# recorder must not switch to writing each slow case at once (tested on its own below).
BATCHED = math.inf


def _start(store: Store) -> str:
    return store.start_run(eval_set_ids=["rows"], metrics=["m"], config={}, agent=None, runs=1)


def _eventually(check: Callable[[], bool]) -> None:
    """Wait for a background write, without asserting how long it takes."""
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, "background write never happened"
        time.sleep(0.01)


def _summary(results: list[CaseResult]) -> EvalResult:
    return EvalResult(summary={"row_count": len(results)}, rows=[], cases=results)


def test_writes_every_batch_size_results(store: Store) -> None:
    run_id = _start(store)
    recorder = StoreRecorder(
        store, run_id, durable_after_s=BATCHED, batch_size=3, flush_interval_s=3600
    )
    recorder.on_start(7)
    results = [row_result(i) for i in range(7)]
    for r in results:
        recorder.on_case_done(r)
    # The writer thread stores what is buffered once a batch is full; below a batch
    # size (and within the interval) results wait.
    _eventually(lambda: store.get_run(run_id).case_count >= 6)
    assert recorder.pending == 7 - store.get_run(run_id).case_count
    recorder.on_finish(_summary(results))
    run_info = store.get_run(run_id)
    assert (run_info.status, run_info.case_count, run_info.total) == ("COMPLETED", 7, 7)
    assert run_info.summary == {"row_count": 7}
    assert store.case_results(run_id) == [r.to_dict() for r in results]


def test_without_on_start_batches_are_written_by_the_caller(store: Store) -> None:
    run_id = _start(store)
    recorder = StoreRecorder(
        store, run_id, durable_after_s=BATCHED, batch_size=3, flush_interval_s=3600
    )
    stored_after = []
    for i in range(7):
        recorder.on_case_done(row_result(i))
        stored_after.append(store.get_run(run_id).case_count)
    assert stored_after == [0, 0, 3, 3, 3, 6, 6]
    recorder.on_finish(_summary([]))
    assert store.get_run(run_id).case_count == 7


def test_a_slow_store_holds_back_the_run_instead_of_buffering(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = store.add_case_results

    def slow(run_id: str, results: Any, *, replace: bool = False) -> None:
        time.sleep(0.05)
        real(run_id, results, replace=replace)

    monkeypatch.setattr(store, "add_case_results", slow)
    run_id = _start(store)
    recorder = StoreRecorder(
        store, run_id, durable_after_s=BATCHED, batch_size=2, flush_interval_s=3600, backlog=2
    )
    recorder.on_start(30)
    pending_after = []
    for i in range(30):
        recorder.on_case_done(row_result(i))
        pending_after.append(recorder.pending)
    assert max(pending_after) < 4  # batch_size * backlog
    recorder.on_finish(_summary([]))
    assert store.get_run(run_id).case_count == 30


def test_timer_writes_results_while_no_case_completes(store: Store) -> None:
    run_id = _start(store)
    recorder = StoreRecorder(
        store, run_id, durable_after_s=BATCHED, batch_size=1000, flush_interval_s=0.05
    )
    recorder.on_start(2)
    recorder.on_case_done(row_result(1))
    # No further case completes, yet the result lands.
    _eventually(lambda: store.get_run(run_id).case_count == 1)
    assert recorder.pending == 0
    recorder.on_case_done(row_result(2))
    recorder.on_finish(_summary([]))
    assert store.get_run(run_id).case_count == 2


def test_mark_interrupted_writes_the_buffer(store: Store) -> None:
    run_id = _start(store)
    recorder = StoreRecorder(
        store, run_id, durable_after_s=BATCHED, batch_size=100, flush_interval_s=3600
    )
    recorder.on_start(10)
    for i in range(4):
        recorder.on_case_done(row_result(i))
    recorder.mark_interrupted()
    run_info = store.get_run(run_id)
    assert (run_info.status, run_info.case_count, run_info.summary) == ("INTERRUPTED", 4, {})
    assert run_info.finished_at is not None


def test_mark_error_keeps_the_message(store: Store) -> None:
    run_id = _start(store)
    recorder = StoreRecorder(store, run_id, durable_after_s=BATCHED)
    recorder.on_start(1)
    recorder.on_case_done(row_result(0))
    recorder.mark_error("agent module failed to import")
    run_info = store.get_run(run_id)
    assert (run_info.status, run_info.error, run_info.case_count) == (
        "ERROR",
        "agent module failed to import",
        1,
    )


def _fail_first_write(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make the store refuse the first batch; returns the sizes of attempted batches."""
    real = store.add_case_results
    attempts: list[int] = []

    def flaky(run_id: str, results: Any, *, replace: bool = False) -> None:
        attempts.append(len(results))
        if len(attempts) == 1:
            raise StoreError("store sqlite:///x.db: database is locked")
        real(run_id, results, replace=replace)

    monkeypatch.setattr(store, "add_case_results", flaky)
    return attempts


def test_failed_write_raises_and_keeps_results(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts = _fail_first_write(store, monkeypatch)
    run_id = _start(store)
    recorder = StoreRecorder(
        store, run_id, durable_after_s=BATCHED, batch_size=2, flush_interval_s=3600
    )
    recorder.on_case_done(row_result(0))
    with pytest.raises(StoreError, match="database is locked"):
        recorder.on_case_done(row_result(1))
    assert recorder.pending == 2
    recorder.on_case_done(row_result(2))  # below the batch size: buffered
    recorder.on_finish(_summary([]))
    assert attempts == [2, 3]
    assert sorted(d["case_id"] for d in store.case_results(run_id)) == ["row-0", "row-1", "row-2"]


def test_failed_background_write_is_retried(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = _fail_first_write(store, monkeypatch)
    run_id = _start(store)
    recorder = StoreRecorder(
        store, run_id, durable_after_s=BATCHED, batch_size=1000, flush_interval_s=0.05
    )
    recorder.on_start(3)
    recorder.on_case_done(row_result(0))
    _eventually(lambda: len(attempts) >= 1)
    # Either the timer or this call retries; the result is not lost either way.
    recorder.on_case_done(row_result(1))
    recorder.on_finish(_summary([]))
    assert attempts[0] == 1
    assert store.get_run(run_id).case_count == 2


def test_parameters_are_checked(store: Store) -> None:
    with pytest.raises(StoreError, match="batch_size >= 1"):
        StoreRecorder(store, "r", batch_size=0)
    with pytest.raises(StoreError, match="backlog >= 1"):
        StoreRecorder(store, "r", backlog=0)


def _recorded_case(i: int) -> EvalCase:
    question, answer = f"What is the status of order {i}?", f"Order {i} ships tomorrow."
    return EvalCase(
        id=f"order-{i}",
        reference=[Turn(id=f"t{i}", user_input=question, final_response=answer)],
        actual=[Turn(id=f"t{i}", user_input=question, final_response=f"Order {i} ships soon.")],
    )


def test_engine_run_is_stored_as_it_completes(store: Store) -> None:
    def agent(prompt: str) -> dict[str, Any]:
        return {
            "response": prompt.replace("What is the status of", "Status of"),
            "predicted_trajectory": [{"tool_name": "lookup", "tool_input": {"q": prompt}}],
        }

    evalset = EvalSet(id="orders", cases=[_recorded_case(i) for i in range(5)])
    metrics = build_metrics(names=["response_match_score", "tool_trajectory_avg_score"])
    run_id = store.start_run(
        eval_set_ids=["orders"],
        metrics=[m.name for m in metrics],
        config={"criteria": {"response_match_score": 0.8}},
        agent="tests:agent",
        runs=2,
    )
    recorder = StoreRecorder(store, run_id, durable_after_s=BATCHED, batch_size=3)
    from assay.agents import as_agent

    result = run(
        [evalset], metrics, agent=as_agent(agent), options=RunOptions(runs=2), observers=[recorder]
    )
    stored = store.get_run(run_id)
    assert (stored.status, stored.case_count, stored.total) == ("COMPLETED", 10, 10)
    assert stored.failed == sum(c.status.value == "FAILED" for c in result.cases)
    docs = {(d["case_id"], d["run_index"]): d for d in store.case_results(run_id)}
    assert docs == {(c.case_id, c.run_index): c.to_dict() for c in result.cases}
    # NaN statistics are stored as null; everything else as the engine computed it.
    expected_summary = json.loads(json.dumps(result.summary).replace("NaN", "null"))
    assert stored.summary == expected_summary


def test_interrupted_run_resumes_from_completed_cases(store: Store) -> None:
    evalset = EvalSet(id="orders", cases=[_recorded_case(i) for i in range(6)])
    metrics = build_metrics(names=["response_match_score"])
    run_id = _start(store)

    class StopAfterFour:
        seen = 0

        def on_start(self, total: int) -> None: ...

        def on_case_done(self, result: CaseResult) -> None:
            self.seen += 1
            if self.seen == 4:
                raise KeyboardInterrupt

        def on_finish(self, result: EvalResult) -> None: ...

    recorder = StoreRecorder(
        store, run_id, durable_after_s=BATCHED, batch_size=100, flush_interval_s=3600
    )
    with pytest.raises(KeyboardInterrupt):
        run([evalset], metrics, observers=[recorder, StopAfterFour()])
    recorder.mark_interrupted()
    assert (store.get_run(run_id).status, store.get_run(run_id).case_count) == ("INTERRUPTED", 4)

    done = store.completed_case_keys(run_id)
    store.reopen_run(run_id)
    resumed = run([evalset], metrics, observers=[StoreRecorder(store, run_id)], skip=done)
    assert len(resumed.cases) == 2
    final = store.get_run(run_id)
    assert (final.status, final.case_count) == ("COMPLETED", 6)
    assert sorted(d["case_id"] for d in store.case_results(run_id)) == [
        f"order-{i}" for i in range(6)
    ]


def test_slow_cases_are_each_durable_before_the_engine_goes_on(store: Store) -> None:
    run_id = _start(store)
    # durable_after_s=0: every case counts as slow (an agent run), so no batching.
    recorder = StoreRecorder(
        store, run_id, durable_after_s=0, batch_size=1000, flush_interval_s=3600
    )
    recorder.on_start(4)
    for i in range(4):
        recorder.on_case_done(row_result(i))
        assert store.get_run(run_id).case_count == i + 1
        assert recorder.pending == 0
    recorder.on_finish(_summary([row_result(i) for i in range(4)]))
    assert store.get_run(run_id).status == "COMPLETED"


# -- from the event loop: durable through the writer thread (group commits) --------------


def _spy_writes(
    store: Store, monkeypatch: pytest.MonkeyPatch, *, hold_first: threading.Event | None = None
) -> tuple[list[tuple[int, int]], threading.Event]:
    """Record (thread, batch size) of each write; the first waits for `hold_first`."""
    writes: list[tuple[int, int]] = []
    entered = threading.Event()
    original = store.add_case_results

    def add_case_results(run_id: str, batch: list[CaseResult]) -> None:
        entered.set()
        if hold_first is not None and not writes:
            assert hold_first.wait(30)
        writes.append((threading.get_ident(), len(batch)))
        original(run_id, batch)

    monkeypatch.setattr(store, "add_case_results", add_case_results)
    return writes, entered


async def test_from_the_loop_slow_results_are_grouped_and_awaited_not_written_there(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = _start(store)
    recorder = StoreRecorder(store, run_id, durable_after_s=0, batch_size=1000)
    gate = threading.Event()
    writes, entered = _spy_writes(store, monkeypatch, hold_first=gate)
    recorder.on_start(6)
    first = recorder.on_case_done(row_result(0))
    assert first is not None
    while not entered.is_set():  # the writer thread holds result 0 in its write
        await asyncio.sleep(0.01)
    rest = [recorder.on_case_done(row_result(i)) for i in range(1, 6)]
    assert not first.done() and all(f is not None and not f.done() for f in rest)
    assert store.get_run(run_id).case_count == 0  # nothing written in the loop's thread
    gate.set()
    await asyncio.gather(first, *rest)  # type: ignore[arg-type]
    assert store.get_run(run_id).case_count == 6
    assert [size for _, size in writes] == [1, 5]  # the five that waited: one transaction
    assert threading.get_ident() not in {thread for thread, _ in writes}
    recorder.on_finish(_summary([row_result(i) for i in range(6)]))
    assert store.get_run(run_id).status == "COMPLETED"


async def test_from_the_loop_a_refused_write_reaches_the_waiting_slot(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = _start(store)
    recorder = StoreRecorder(store, run_id, durable_after_s=0, batch_size=1000)
    original = store.add_case_results
    refusals = [StoreError("database is locked")]

    def add_case_results(run: str, batch: list[CaseResult]) -> None:
        if refusals:
            raise refusals.pop()
        original(run, batch)

    monkeypatch.setattr(store, "add_case_results", add_case_results)
    recorder.on_start(2)
    durable = recorder.on_case_done(row_result(0))
    assert durable is not None
    with pytest.raises(StoreError, match="database is locked"):
        await durable
    # Nothing is lost: the result went back to the buffer and is written with the next.
    assert recorder.on_case_done(row_result(1)) is None  # written here after a failure
    assert sorted(d["case_id"] for d in store.case_results(run_id)) == [
        row_result(0).case_id,
        row_result(1).case_id,
    ]
    recorder.mark_error("stopped")
