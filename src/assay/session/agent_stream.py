"""A streamed agent run: Vertex rows read lazily, each sent to the agent, in bounded memory.

`assay eval rows.jsonl --agent ...` (`cli.eval_stream`, `run`: its own event loop) and
`assay.evaluate` / `await assay.aevaluate(rows_path, agent=...)` (`api_stream`, `arun`:
the caller's loop) take this path when every input is a row file and nothing needs
every case at once. The run's scheduler (`engine.schedule`, the loaded run's too)
keeps the agent's slots full: rows are read ahead as slots free, at most `read_ahead`
case runs at a time (the window, `READ_AHEAD` × concurrency by default) — never in
batches whose slowest case idles the other slots. Each finished case run is scored and
stored through the run's `CaseOutputs` at once (a slow one durable before its slot
takes new work, as a loaded run stores it), then written to the reports (`--out`,
`--csv`, `--junit`), counted into the summary and dropped. The reports are written in
file order, as the loaded and the recorded streamed runs write them: a case run that
finishes before an earlier one waits in the window, which is the reorder buffer's
bound too — when the earliest case run is slow, reading stops once the window is full
of finished ones behind it.

The run is the loaded path's: the same identity (either resumes the other's
interrupted run), case ids, scores, stored documents, reports and summary; a malformed
row stops the reading, the case runs before it finish and are stored and reported, and
the run is left INTERRUPTED (fix the row and run the command again to resume).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Awaitable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from assay.agents.base import Agent, app_details_of
from assay.core.results import CaseResult, Status
from assay.engine.case_run import CaseJob, CaseRunContext, evaluate_case_run
from assay.engine.judging import JudgeRunOptions, run_registry
from assay.engine.options import RunOptions
from assay.engine.schedule import Schedule
from assay.engine.tally import Tally
from assay.errors import InputError
from assay.formats.row_columns import warn_misspelt_row_columns
from assay.formats.stream import RowFile, batch_cases
from assay.models.registry import registry_in_context
from assay.redact import redact
from assay.session.sinks import CaseOutputs, StreamedReports
from assay.session.streaming import StreamOutcome, StreamSettings, finish_reports

if TYPE_CHECKING:
    from assay.engine import RunObserver
    from assay.metrics.base import Metric

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
        reports = self._reports(run_id, total if keep_all else self.keep_failing, keep_all)
        for case in previous:  # the resumed run's results join the summary and reports
            reports.write(case)
        self._done = len(previous)
        outcome = StreamOutcome(run_id, {}, reports.tally, reports.kept, total, kept_all=keep_all)
        to_do = max(total - self._session.done_before, 0)
        # The store, then the observers, told as the engine tells them: the runs to do.
        outputs = self._session.case_outputs(self.observers, reports=reports)
        if self.progress is not None:
            self.progress.on_start(total)
        schedule = self._schedule(outputs)
        try:
            outputs.on_start(to_do)
            # The agent's models find their pacing in the registry.
            with registry_in_context(run_registry(self.judges, self.options.concurrency)):
                await schedule.run(self._read(self._jobs()))
        except (KeyboardInterrupt, asyncio.CancelledError):
            outcome.interrupted = True
            # What finished before the stop is stored: it joins the partial reports.
            for _, result in schedule.held():
                outputs.in_order(result)
            self._end(outcome, reports)
            raise
        except BaseException as exc:
            self._session.mark_error(redact(f"{type(exc).__name__}: {exc}"))
            reports.discard()
            raise
        self._end(outcome, reports)
        return outcome

    def _end(self, outcome: StreamOutcome, reports: StreamedReports) -> None:
        if self._error is not None:
            outcome.error, outcome.interrupted = self._error, True
        outcome.summary = reports.summary()
        self._finish(outcome, reports)
        self.outcome = outcome

    # -- the window ------------------------------------------------------------------

    def _schedule(self, outputs: CaseOutputs) -> Schedule[CaseJob, CaseResult]:
        """`concurrency` slots of the run's scheduler, each taking the next row while
        the window has room; each result is stored and shown as it completes (before
        its slot takes new work: a kill re-runs only the case runs in flight), and
        written to the reports in file order."""
        ctx = CaseRunContext(
            self.metrics, self.agent, self.options, None, app_details_of(self.agent)
        )

        def done(_index: int, result: CaseResult) -> Awaitable[None] | None:
            return outputs.on_case_done(result)

        def released(_index: int, result: CaseResult) -> None:
            outputs.in_order(result)
            self._done += 1
            if self.progress is not None:
                assert outputs.reports is not None
                counts = outputs.reports.tally.statuses
                self.progress.advance(self._done, *(counts[s] for s in _STATUSES))

        return Schedule(
            lambda job: evaluate_case_run(job, ctx),
            workers=max(1, self.options.concurrency),
            done=done,
            in_order=released,
            window=self.window,
        )

    def _read(self, jobs: Iterator[CaseJob]) -> Iterator[CaseJob]:
        """`jobs` until a malformed row: it stops the reading, the case runs before it
        still finish, and the outcome carries it."""
        try:
            yield from jobs
        except InputError as exc:
            self._error = exc

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

    def _reports(self, run_id: str | None, keep: int, keep_all: bool) -> StreamedReports:
        json_writer, spool = self.open_reports(run_id, self.identity, self.metrics, csv_lines=False)
        junit = self.open_junit()
        return StreamedReports(
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

    def _finish(self, outcome: StreamOutcome, reports: StreamedReports) -> None:
        if outcome.interrupted:
            self._session.mark_interrupted()
        else:
            self._session.mark_completed(outcome.summary)
        finish_reports(outcome, reports.json, reports.spool, self.csv_path, reports.junit)
