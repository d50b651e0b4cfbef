"""A streamed agent run: Vertex rows read lazily, each sent to the agent, in bounded memory.

`assay eval rows.jsonl --agent ...` (`cli.eval_stream`, `run`: its own event loop) and
`assay.evaluate` / `await assay.aevaluate(rows_path, agent=...)` (`api_stream`, `arun`:
the caller's loop) take this path when every input is a row file and nothing needs
every case at once. The agent's slots are kept full:
rows are read ahead as slots free, at most `read_ahead` case runs at a time (the
window, `READ_AHEAD` × concurrency by default) — never in batches whose slowest case
idles the other slots. Each finished case run is scored and stored through the run's
`RunSession` at once (a slow one durable before its slot takes new work, as a loaded
run stores it), then written to the reports (`--out`, `--csv`, `--junit`), counted into
the summary and dropped. The reports are written in file order, as the loaded and the
recorded streamed runs write them: a case run that finishes before an earlier one waits
in the window, which is the reorder buffer's bound too — when the earliest case run is
slow, reading stops once the window is full of finished ones behind it.

The run is the loaded path's: the same identity (either resumes the other's
interrupted run), case ids, scores, stored documents, reports and summary; a malformed
row stops the reading, the case runs before it finish and are stored and reported, and
the run is left INTERRUPTED (fix the row and run the command again to resume).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from array import array
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.agents.base import Agent, app_details_of
from assay.engine.aggregate import agent_columns, case_latencies, case_rows, row_count
from assay.engine.case_run import CaseJob, CaseRunContext, evaluate_case_run
from assay.engine.judging import JudgeRunOptions, run_registry
from assay.engine.options import RunOptions
from assay.engine.tally import Tally
from assay.errors import InputError
from assay.formats.row_columns import warn_misspelt_row_columns
from assay.formats.stream import RowFile, batch_cases
from assay.model.results import CaseResult, Status
from assay.models.registry import registry_in_context
from assay.redact import redact
from assay.session.streaming import StreamOutcome, StreamSettings, finish_reports

if TYPE_CHECKING:
    from assay.engine import RunObserver
    from assay.metrics.base import Metric
    from assay.report.json_stream import JsonReportWriter, RowSpool
    from assay.report.junit import JUnitWriter

READ_AHEAD = 4
"""Case runs read ahead per slot: enough that a slot never waits for reading, few
enough that the window (rows, cases and results waiting to be written in order) stays
small whatever the file's size."""
BATCH_ROWS = 100
"""Rows read and built into cases at a time: a few windows' worth, so the run holds at
most this many rows besides the window, and an awaiting caller's event loop is held
only briefly per read (ten times as many rows at a time stalled it several times longer
at p99 for the same CPU per row: bench/README.md)."""
_STATUSES = (Status.PASSED, Status.FAILED, Status.NOT_EVALUATED)


class AgentTally:
    """An agent run's latency and failure columns, row by row, as numbers only."""

    def __init__(self) -> None:
        self.latencies: array[float] = array("d")
        self.failures: array[float] = array("d")

    def add(self, case: CaseResult) -> None:
        self.latencies.extend(case_latencies(case))
        self.failures.extend([float(case.failure)] * row_count(case))

    def columns(self) -> dict[str, Any]:
        return agent_columns(self.latencies, self.failures)


@contextmanager
def _sigterm_cancels(task: asyncio.Task[None]) -> Iterator[None]:
    """When the caller made SIGTERM an interrupt (the CLI does), it cancels the run at
    its next await instead, as asyncio.run does for Ctrl-C: the CLI's handler raises
    KeyboardInterrupt wherever the main thread is, which can be inside a result's store
    write (written, yet taken back and written again). A process that left SIGTERM
    alone is still ended by it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGTERM)
    if not callable(previous):
        yield
        return
    try:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    except (NotImplementedError, RuntimeError):  # no loop signal handlers (Windows)
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, previous)


@dataclass
class _Slot:
    """One case run of the window: its job, then its result until it is written."""

    job: CaseJob
    result: CaseResult | None = None


@dataclass
class _Writers:
    """The run's report writers and what it counts, fed in file order."""

    metrics: Sequence[Metric]
    run_id: str | None
    set_files: dict[str, str]
    json: JsonReportWriter | None
    spool: RowSpool | None
    junit: JUnitWriter | None
    tally: Tally
    keep: int
    keep_all: bool
    agent: AgentTally = field(default_factory=AgentTally)
    kept: list[CaseResult] = field(default_factory=list)

    def write(self, case: CaseResult) -> None:
        from assay.report.json_report import case_to_adk

        self.tally.add(case)
        self.agent.add(case)
        set_id = case.eval_set_id or ""
        if self.json is not None:
            self.json.add_case(
                case_to_adk(case, run_id=self.run_id, eval_set_file=self.set_files.get(set_id))
            )
        if self.spool is not None:
            for row in case_rows(case, self.metrics, True):
                self.spool.add(row)
        if self.junit is not None:
            self.junit.add_case(case, set_id)
        if self.keep_all or (len(self.kept) < self.keep and case.status is not Status.PASSED):
            self.kept.append(case)

    def summary(self) -> dict[str, Any]:
        # `summarize`'s key order: rows and metrics, the agent's columns, the statuses.
        return {
            **self.tally.summary(self.metrics),
            **self.agent.columns(),
            **self.tally.status_columns(),
        }

    def discard(self) -> None:
        if self.json is not None:
            self.json.discard()
        if self.spool is not None:
            self.spool.close()
        if self.junit is not None:
            self.junit.discard()


@dataclass
class AgentStreamingRun(StreamSettings):
    """One streamed agent run of `files` (see the module docstring).

    `identity` is the run's identity in the store, as the loaded path computes it;
    `options` the run options (`concurrency`, `timeout_s`, tool behaviour, run method;
    one run per case); `judges` only paces the models the agent calls through assay's
    model registry (no judged metric streams). `observers` are told as the engine tells
    them: the case runs to do, then each result once stored, as it finishes (the caller
    hands them the end result: `on_finish`).
    """

    files: Sequence[RowFile]
    metrics: Sequence[Metric]
    agent: Agent
    identity: dict[str, Any]
    options: RunOptions = field(default_factory=RunOptions)
    judges: JudgeRunOptions | None = None
    read_ahead: int | None = None
    observers: Sequence[RunObserver] = ()

    def __post_init__(self) -> None:
        warn_misspelt_row_columns(self.files)
        self._session = self.open_session(self.metrics, self.identity)
        self._done = 0
        self._error: InputError | None = None
        self._reading = False
        self.outcome: StreamOutcome | None = None
        """What the run did, once it ended (also when `arun` was cancelled)."""

    @property
    def window(self) -> int:
        """Case runs read ahead (in flight or finished and waiting to be written)."""
        return self.read_ahead or READ_AHEAD * max(1, self.options.concurrency)

    def run(self) -> StreamOutcome:
        """`arun` on its own event loop (the CLI): Ctrl-C, or SIGTERM where the caller
        made it an interrupt, leaves the run INTERRUPTED and returns its outcome."""

        async def owned() -> StreamOutcome:
            main = asyncio.current_task()
            assert main is not None
            # Only the owner of the loop may take over a signal (`_sigterm_cancels`).
            with _sigterm_cancels(main):
                return await self.arun()

        try:
            return asyncio.run(owned())
        except (KeyboardInterrupt, asyncio.CancelledError):
            # `arun` finished the run as interrupted before the interrupt reached here;
            # raised before it opened the run, there is nothing to report.
            if self.outcome is None:
                raise
            return self.outcome

    async def arun(self) -> StreamOutcome:
        """The run in the caller's event loop (`assay.aevaluate` awaits it; no loop of
        its own, no signal taken over). Cancelled, the case runs that finished are
        stored and reported, the run is marked INTERRUPTED (resumable), `outcome` says
        so, and the cancellation goes on to the caller, as `RunSession.arun` does. A
        malformed row is not an interrupt of the caller: the outcome carries it."""
        total = sum(f.count_rows() for f in self.files)
        self._session.open()
        run_id = self._session.run_id
        previous = self._session.previous
        if self._session.resumed and self.notify is not None:
            self.notify(
                f"resuming run {run_id}: {self._session.done_before} of {total} case runs"
                " already done (--fresh starts a new run)"
            )
        busy = self._session.busy_note()
        if busy is not None and self.notify is not None:
            self.notify(busy)
        keep_all = total <= self.keep_all_up_to
        writers = self._writers(run_id, total if keep_all else self.keep_failing, keep_all)
        for case in previous:  # the resumed run's results join the summary and reports
            writers.write(case)
        self._done = len(previous)
        outcome = StreamOutcome(run_id, {}, writers.tally, writers.kept, total, kept_all=keep_all)
        to_do = max(total - self._session.done_before, 0)
        self._session.start_recording(to_do)
        if self.progress is not None:
            self.progress.on_start(total)
        window: deque[_Slot] = deque()
        try:
            for observer in self.observers:  # as the engine tells them: the runs to do
                observer.on_start(to_do)
            await self._drive(window, writers)
        except (KeyboardInterrupt, asyncio.CancelledError):
            outcome.interrupted = True
            self._end(outcome, writers, window)
            raise
        except BaseException as exc:
            self._session.mark_error(redact(f"{type(exc).__name__}: {exc}"))
            writers.discard()
            raise
        self._end(outcome, writers, window)
        return outcome

    def _end(self, outcome: StreamOutcome, writers: _Writers, window: deque[_Slot]) -> None:
        if outcome.interrupted:
            # What finished before the stop is stored: it joins the partial reports.
            for slot in window:
                if slot.result is not None:
                    writers.write(slot.result)
        window.clear()
        if self._error is not None:
            outcome.error, outcome.interrupted = self._error, True
        outcome.summary = writers.summary()
        self._finish(outcome, writers)
        self.outcome = outcome

    # -- the window ------------------------------------------------------------------

    async def _drive(self, window: deque[_Slot], writers: _Writers) -> None:
        """`concurrency` slots, each taking the next row while the window has room;
        the slot that finishes the window's head writes it and what finished behind it,
        in file order. A slot goes straight on to its next row (no task or wake-up per
        case run: the loaded path's `LocalExecutor` runs its slots the same way)."""
        registry = run_registry(self.judges, self.options.concurrency)
        ctx = CaseRunContext(
            self.metrics, self.agent, self.options, None, app_details_of(self.agent)
        )
        jobs = self._jobs()
        room = asyncio.Condition()
        size = self.window

        def next_job() -> CaseJob | None:
            if self._reading:
                try:
                    return next(jobs)
                except StopIteration:
                    self._reading = False
                except InputError as exc:  # the case runs before it still finish
                    self._error, self._reading = exc, False
            return None

        async def slot() -> None:
            while True:
                if len(window) >= size:
                    async with room:
                        await room.wait_for(lambda: len(window) < size)
                job = next_job()
                if job is None:
                    return
                entry = _Slot(job)
                window.append(entry)
                entry.result = await evaluate_case_run(job, ctx)
                # Stored before this slot takes new work: a kill re-runs only the case
                # runs in flight (a fast agent's results are written in batches, as a
                # loaded run's are).
                self._session.record(entry.result)
                for observer in self.observers:  # stored first, then shown, as loaded
                    observer.on_case_done(entry.result)
                if window[0] is entry:
                    while window and window[0].result is not None:
                        self._write(window.popleft(), writers)
                    async with room:
                        room.notify_all()

        self._reading = True
        # The agent's models find their pacing in the registry.
        with registry_in_context(registry):
            try:
                async with asyncio.TaskGroup() as group:
                    for _ in range(max(1, self.options.concurrency)):
                        group.create_task(slot())
            except BaseExceptionGroup as grouped:  # a store that refuses a result
                raise grouped.exceptions[0] from None

    def _write(self, slot: _Slot, writers: _Writers) -> None:
        assert slot.result is not None
        writers.write(slot.result)
        self._done += 1
        if self.progress is not None:
            counts = writers.tally.statuses
            self.progress.advance(self._done, *(counts[s] for s in _STATUSES))

    def _jobs(self) -> Iterator[CaseJob]:
        """The case runs still to do, in file order, read a batch of rows at a time."""
        skip = self._session.skip
        for row_file in self.files:
            set_id = row_file.eval_set_id
            # Each file is its own eval set (both callers refuse two files of one id):
            # its ids are checked on their own and dropped after it, a bare string a
            # row (a tuple with the set's id costs an object more per row).
            seen: set[str] = set()
            for batch in row_file.batches(BATCH_ROWS):
                cases, error = batch_cases(batch, self.mapping)
                for case in cases:
                    if case.id in seen:
                        raise InputError(
                            "duplicate case id",
                            file=batch.file,
                            case_id=case.id,
                            expected="case ids unique within an eval set",
                        )
                    seen.add(case.id)
                    if (set_id, case.id, 0) not in skip:
                        yield CaseJob(set_id, case, 0)
                if error is not None:
                    raise error

    # -- the reports and the run's end -------------------------------------------------

    def _writers(self, run_id: str | None, keep: int, keep_all: bool) -> _Writers:
        json_writer, spool = self.open_reports(run_id, self.identity, self.metrics, csv_lines=False)
        junit = self.open_junit()
        return _Writers(
            metrics=self.metrics,
            run_id=run_id,
            set_files={f.eval_set_id: str(f.path) for f in self.files},
            json=json_writer,
            spool=spool,
            junit=junit,
            tally=Tally((m.name for m in self.metrics), self.case_score_metrics),
            keep=keep,
            keep_all=keep_all,
        )

    def _finish(self, outcome: StreamOutcome, writers: _Writers) -> None:
        if outcome.interrupted:
            self._session.mark_interrupted()
        else:
            self._session.mark_completed(outcome.summary)
        finish_reports(outcome, writers.json, writers.spool, self.csv_path, writers.junit)
