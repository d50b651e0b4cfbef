"""What the workers of a pool write themselves (`WorkerWrites`), in file order."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.exc import SQLAlchemyError

from assay.errors import StoreError
from assay.report.json_report import cases_text, rows_text

if TYPE_CHECKING:
    from assay.store import EncodedCase, Store


class ScoredBatch(Protocol):
    """What a worker writes of a scored batch (`rows.batch.BatchOutput`), and what it
    marks as written."""

    encoded: list[EncodedCase]
    cases_json: list[bytes]
    rows: list[tuple[tuple[str, ...], bytes, bytes | None]]
    error: tuple[str, str | None, str | None, str | None, str | None] | None
    stored: bool
    cases_appended: int
    rows_appended: int


@dataclass
class WorkerWrites:
    """What the workers of a pool write themselves, in file order: each batch to the
    store, its cases to the JSON report and its rows to the report's row spool.

    Each batch is stored by the worker that scored it, in one transaction, before the
    worker takes new work, and its report cases are appended to the report (`--out`)
    there and then: the process writing the rest of the reports no longer spends its
    time in the store nor copies a case's few KB, and a batch is durable as soon as it
    is scored. The rows are appended with the cases, so they are neither pickled back
    nor written by that process either (bench/README.md). The batches are stored in
    the order of the file, each after the one before it (`stored_turn` holds the
    number of the next batch to store), and appended to the report in that order too
    (`appended_turn`): two turns, so that one worker appends its batch's cases and rows
    while the next batch is being stored. The store and the report hold what the
    ordinary order writes: a duplicate case id is refused in the later batch, a batch's
    cases are appended only once it is stored, and a batch that stops the run (a
    malformed row, a batch the store or the file refused) stops every later batch from
    being written (its turns become -1). What a worker did not write is sent back, and
    the reports' process writes it or reports why it cannot.

    Shared with the workers by inheritance: a forked pool only.
    """

    store: Store | None
    run_id: str | None
    report: str | None
    """The JSON report's file while it is written (`JsonReportWriter.hand_over`)."""
    cases: Any  # multiprocessing Value('q'): cases in the report so far
    stored_turn: Any  # multiprocessing Value('q'): the next batch to store; -1: none
    appended_turn: Any  # multiprocessing Value('q'): the next batch to append; -1: none
    ready: Any  # multiprocessing Condition over the turns
    rows: str | None = None
    """The report's row spool while rows are appended to it (`RowSpool.hand_over`);
    None: the rows are sent back (the CSV report numbers them by their shapes)."""
    _fds: dict[str, tuple[int, int]] = field(default_factory=dict)
    """(pid, descriptor) of each file appended to, per process."""

    def write_in_turn(self, number: int, out: ScoredBatch) -> None:
        """Store `out` (batch `number`) once the batches before it are stored, then
        append its cases once theirs are appended, unless one of them stopped the run.
        The turns are held, not the lock: while this worker writes, the other can wait
        for, or take, the turn after it."""
        stored = False  # by this worker
        in_store = False  # stored, or there is no store: its cases may be appended
        if self._take_turn(self.stored_turn, number):
            try:
                if self.store is not None and self.run_id is not None:
                    if out.encoded:
                        self.store.add_encoded(self.run_id, out.encoded)
                    stored = True
            except (StoreError, SQLAlchemyError, OSError):
                pass  # the reports' process stores it, or says why not
            finally:
                in_store = stored or self.store is None
                self._pass_turn(self.stored_turn, number, in_store and out.error is None)
        if stored:
            out.stored, out.encoded = True, []
        if not self._take_turn(self.appended_turn, number):
            return
        rows = out.rows if self.rows is not None else []
        appended = False
        try:
            if in_store and self.report is not None and (out.cases_json or rows):
                self._append(out.cases_json, rows)
                appended = True
        except OSError:
            pass  # the reports' process appends them, or says why not
        finally:
            whole = in_store and (appended or self.report is None or not (out.cases_json or rows))
            self._pass_turn(self.appended_turn, number, whole and out.error is None)
        if appended:
            out.cases_appended, out.cases_json = len(out.cases_json), []
            if rows:
                out.rows_appended, out.rows = len(rows), []

    def give_up_turn(self, number: int) -> None:
        """Batch `number` failed in the worker: no batch after it is written."""
        for turn in (self.stored_turn, self.appended_turn):
            if self._take_turn(turn, number):
                self._pass_turn(turn, number, False)

    def _take_turn(self, turn: Any, number: int) -> bool:
        """Wait until batch `number` has `turn`; False when a batch before it stopped
        the run, or the run is gone (this worker orphaned)."""
        with self.ready:
            while turn.value != number:
                if turn.value < 0:
                    return False
                if not self.ready.wait(timeout=1.0) and os.getppid() == 1:
                    return False
        return True

    def _pass_turn(self, turn: Any, number: int, go_on: bool) -> None:
        """Give `turn` to the batch after `number`, or stop every later one."""
        with self.ready:
            turn.value = number + 1 if go_on else -1
            self.ready.notify_all()

    def _append(self, cases: list[bytes], rows: list[tuple[Any, bytes, Any]]) -> None:
        """Append the batch's cases to the report and its rows to the row spool, all
        or nothing."""
        writes: list[tuple[str, bytes]] = []  # made whole before anything is written
        if cases:
            assert self.report is not None
            head = b"\n" if self.cases.value == 0 else b",\n"
            writes.append((self.report, cases_text(cases, head)))
        if rows:
            assert self.rows is not None
            writes.append((self.rows, rows_text([r[1] for r in rows])))
        appended: list[tuple[int, int]] = []  # (descriptor, size before)
        try:
            for path, data in writes:
                appended.append(self._append_to(path, data))
        except BaseException:
            for fd, size in appended:
                os.ftruncate(fd, size)  # a cut batch would break the report
            raise
        self.cases.value += len(cases)

    def _append_to(self, path: str, data: bytes) -> tuple[int, int]:
        """Append `data` to the file at `path`, whole or (an error) cut back to its size
        before; that descriptor and size."""
        pid = os.getpid()
        opened = self._fds.get(path)
        if opened is None or opened[0] != pid:
            opened = self._fds[path] = (
                pid, os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC),
            )  # fmt: skip
        fd = opened[1]
        size = os.fstat(fd).st_size
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            os.ftruncate(fd, size)
            raise
        return fd, size
