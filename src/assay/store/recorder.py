"""`StoreRecorder`: a run observer that saves case results as the cases complete."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any

from assay.core.results import CaseResult, EvalResult
from assay.errors import StoreError
from assay.store.schema import RunStatus
from assay.store.store import Store

if TYPE_CHECKING:
    from assay.store._bulk import EncodedCase

#: a slot waiting for result k to be durable: (k, its loop, the future it awaits)
_Waiter = tuple[int, asyncio.AbstractEventLoop, asyncio.Future[None]]

# How often the writer thread looks at the clock when nothing wakes it.
_TICK_S = 0.25
# Cases slower than this on average (an agent, a judge) are each written before the
# engine goes on; faster ones (scoring recorded rows) are written in batches.
DURABLE_AFTER_S = 0.005


class StoreRecorder:
    """Writes completed case results to a store in batches (a `RunObserver`).

    A writer thread stores a batch once `batch_size` results wait, or once
    `flush_interval_s` passed since the last write, so results land while the run goes
    on even when cases are slow. The engine's thread only appends to a buffer; the
    database work overlaps with it (SQLite and PostgreSQL release the GIL while they
    write). If the writer falls `backlog` batches behind, the engine's thread writes
    itself, which keeps memory bounded.

    Slow case runs are durable one by one: once cases take `durable_after_s` or more on
    average since `on_start` (an agent or a judge runs), each result is written in
    `on_case_done` itself, before the slot that finished it takes new work — so a
    SIGKILL loses only the case runs in flight, never a paid-for one.
    `durable_after_s=0` writes every result that way. Called from a running event loop
    (the engine's slots), `on_case_done` returns a future instead of writing there: the
    writer thread writes the result, with every other one that finished meanwhile in
    one transaction (a group commit), while the loop goes on with the other slots'
    judge calls; the future is done once it is durable (or holds the StoreError), and
    the slot awaits it before taking new work.

    `on_finish` writes the rest and marks the run COMPLETED; callers catching
    KeyboardInterrupt (or another error) call `mark_interrupted` (or `mark_error`).
    Results are never dropped: a failed write puts its batch back, and the next
    `on_case_done`, `flush` or `on_finish` writes it again in the caller's thread,
    raising StoreError if the store still refuses it.
    """

    def __init__(
        self,
        store: Store,
        run_id: str,
        *,
        batch_size: int = 500,
        flush_interval_s: float = 1.0,
        backlog: int = 4,
        durable_after_s: float = DURABLE_AFTER_S,
    ) -> None:
        if batch_size < 1 or flush_interval_s <= 0 or backlog < 1:
            raise StoreError(
                "StoreRecorder needs batch_size >= 1, flush_interval_s > 0 and backlog >= 1"
            )
        self._store = store
        self._run_id = run_id
        self._batch_size = batch_size
        self._interval = flush_interval_s
        self._max_pending = batch_size * backlog
        self._buffer: list[CaseResult] = []
        # Guards the buffer; the writer thread waits on it for work.
        self._wake = threading.Condition()
        # Held across taking a batch and writing it, so batches land in order.
        self._write_lock = threading.Lock()
        self._last_write = time.monotonic()
        self._background_failed = False
        self._stop = threading.Event()
        self._writer: threading.Thread | None = None
        self._durable_after = durable_after_s
        self._started: float | None = None  # set by on_start
        self._results_seen = 0
        # Results are written in the order they were received: result k (0-based) is
        # durable once `_written > k`. Slots waiting for theirs: (k, loop, future).
        self._taken = 0
        self._written = 0
        self._durable_waiters: list[_Waiter] = []

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def pending(self) -> int:
        """Results received but not yet written."""
        with self._wake:
            return len(self._buffer)

    def on_start(self, total: int) -> None:
        self._store.set_total(self._run_id, total)
        self._last_write = self._started = time.monotonic()
        if self._writer is None:
            self._stop.clear()
            self._writer = threading.Thread(
                target=self._write_in_background, name=f"assay-store-{self._run_id}", daemon=True
            )
            self._writer.start()

    def on_case_done(self, result: CaseResult) -> Awaitable[None] | None:
        self._results_seen += 1
        slow = self._started is not None and (
            time.monotonic() - self._started >= self._durable_after * self._results_seen
        )
        loop = _running_loop() if slow and self._writer is not None else None
        with self._wake:
            self._buffer.append(result)
            index = self._taken
            self._taken += 1
            waiting = len(self._buffer)
            if loop is not None and not self._background_failed:
                # Durable before the slot goes on, written by the writer thread.
                durable: asyncio.Future[None] = loop.create_future()
                self._durable_waiters.append((index, loop, durable))
                self._wake.notify()
                return durable
            if waiting >= self._batch_size:
                self._wake.notify()
        if slow:
            self.flush()  # durable before the caller goes on (see the class docstring)
        elif self._writer is None and (waiting >= self._batch_size or self._interval_passed()):
            self.flush()  # no writer thread (on_start was not called): write here
        elif waiting >= self._max_pending or self._background_failed:
            self.flush()
        return None

    def on_finish(self, result: EvalResult) -> None:
        self.mark_completed(result.summary)

    def mark_completed(self, summary: dict[str, Any]) -> None:
        """Write what is buffered and mark the run COMPLETED with `summary`."""
        self._finish(RunStatus.COMPLETED, summary=summary)

    def add_encoded(self, encoded: Sequence[EncodedCase]) -> None:
        """Store results already encoded (by a streamed run's worker) now, after
        anything buffered: durable when this returns."""
        self.flush()
        with self._write_lock:
            self._store.add_encoded(self._run_id, encoded)

    def mark_interrupted(self) -> None:
        """Write what is buffered and mark the run INTERRUPTED (it can be resumed)."""
        self._finish(RunStatus.INTERRUPTED, summary=None)

    def mark_error(self, message: str) -> None:
        """Write what is buffered and mark the run ERROR with `message`."""
        self._finish(RunStatus.ERROR, summary=None, error=message)

    def flush(self) -> None:
        """Write every buffered result now (StoreError if the store refuses them)."""
        self._write_pending()
        # A failed background write put its batch back; it has now been written.
        self._background_failed = False

    def close(self) -> None:
        """Stop the writer thread without writing (`on_finish` and `mark_*` call this)."""
        self._stop.set()
        with self._wake:
            self._wake.notify()
        writer, self._writer = self._writer, None
        if writer is not None and writer is not threading.current_thread():
            writer.join()

    def _finish(
        self, status: RunStatus, *, summary: dict[str, Any] | None, error: str | None = None
    ) -> None:
        self.close()
        try:
            self.flush()
        finally:
            self._store.finish_run(self._run_id, summary=summary, status=status, error=error)

    def _interval_passed(self) -> bool:
        return time.monotonic() - self._last_write >= self._interval

    def _due(self) -> bool:
        # Called with self._wake held.
        return len(self._buffer) >= self._batch_size or (
            bool(self._buffer) and (bool(self._durable_waiters) or self._interval_passed())
        )

    def _settle_waiters(self, error: BaseException | None = None) -> None:
        """Finish the futures of the results now durable (all of them with `error`)."""
        with self._wake:
            if error is None:
                ready = [w for w in self._durable_waiters if w[0] < self._written]
                self._durable_waiters = [w for w in self._durable_waiters if w[0] >= self._written]
            else:
                ready, self._durable_waiters = self._durable_waiters, []
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for _, loop, future in ready:
            by_loop.setdefault(loop, []).append(future)
        for loop, futures in by_loop.items():  # one wake-up of each loop per write
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, futures, error)

    def _write_pending(self) -> None:
        with self._write_lock:
            with self._wake:
                batch, self._buffer = self._buffer, []
            if not batch:
                return
            try:
                self._store.add_case_results(self._run_id, batch)
            except BaseException:
                with self._wake:
                    self._buffer[:0] = batch
                raise
            finally:
                self._last_write = time.monotonic()
            with self._wake:
                self._written += len(batch)
        if self._durable_waiters:
            self._settle_waiters()

    def _write_in_background(self) -> None:
        while not self._stop.is_set():
            with self._wake:
                if not self._due():
                    self._wake.wait(_TICK_S)
                due = self._due() and not self._stop.is_set()
            if not due:
                continue
            try:
                self._write_pending()
            except StoreError as exc:
                # The batch is back in the buffer; the caller's next call writes it
                # again and raises if the store still refuses it (a slot waiting for
                # its result gets the error). Pause rather than hammer a store that
                # just failed.
                self._background_failed = True
                self._settle_waiters(exc)
                self._stop.wait(_TICK_S)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _resolve(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for future in futures:
        if future.done():  # the slot was cancelled meanwhile
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)
