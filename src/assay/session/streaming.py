"""A streamed run: recorded Vertex rows scored batch by batch, in bounded memory.

`assay eval rows.jsonl` on recorded rows (no agent) takes this path when every input is
a row file (`formats.stream.row_file`): the rows are read lazily in batches, each batch
is scored where it runs best — in this process, or in a pool of worker processes
(`workers`; the batches come back in file order) — and every finished batch is written
at once: to the store (one transaction per batch, before the next batch is taken), to
the JSON report and the CSV (`report.json_report`), and counted into the summary
(`engine.tally.Tally`). Nothing per row is kept after it is written, so memory does not
grow with the number of rows.

The run is the one the loaded path would make — the same identity (so either path
resumes the other's interrupted run), case ids, scores, stored documents, summary and
report documents — and has the same life: a `RunSession` opens it (new or resumed),
records each batch through its recorder and marks it COMPLETED, INTERRUPTED or ERROR;
`StreamingRun` is only the executor that scores the row files batch by batch.

A malformed row stops the run after the rows before it are stored and reported; the
run is left INTERRUPTED, so once the row is fixed the same command resumes after the
stored rows.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.context
import os
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from assay.core.results import CaseResult, Status
from assay.engine.tally import Tally
from assay.errors import InputError, warn
from assay.formats._common import gc_paused
from assay.formats.row_columns import warn_misspelt_row_columns
from assay.formats.stream import LineChunk, RawBatch, RowFile
from assay.redact import redact
from assay.rows.batch import (
    BatchOutput,
    BatchSpec,
    init_worker,
    kept_case,
    kernel_available,
    score_batch,
    score_in_worker,
)
from assay.rows.plan import MAX_METRICS, RowPlan
from assay.rows.writes import WorkerWrites
from assay.session.parent_watch import check_parent, die_with_parent
from assay.session.run_session import RunIdentity, RunSession
from assay.session.sinks import StreamedReports

if TYPE_CHECKING:
    from assay.metrics.base import Metric
    from assay.report.json_report import JsonReportWriter, RowSpool
    from assay.report.junit import JUnitWriter
    from assay.store import Store

_STATUSES = (Status.PASSED, Status.FAILED, Status.NOT_EVALUATED)
BATCH_ROWS = 1000
"""Rows per batch: large enough that a worker's round trip is noise, small enough that
the batches in flight stay a few MB."""
POOL_MIN_ROWS = 10_000
"""Below this many rows a worker pool costs more (starting it) than it saves."""


def default_workers(rows: int) -> int:
    """Worker processes when none are asked for: every core for large inputs, else none."""
    return (os.cpu_count() or 1) if rows >= POOL_MIN_ROWS else 1


_PIPE_BYTES = 1 << 20


def _widened(queue: object) -> Any:
    """The queue, its pipe widened to `_PIPE_BYTES` where the system allows (Linux's
    F_SETPIPE_SZ; the default pipe is far smaller): a batch's output (megabytes) then
    crosses in a few writes instead of dozens, each of which wakes the other side."""
    try:
        import fcntl

        setsize = fcntl.F_SETPIPE_SZ  # type: ignore[attr-defined,unused-ignore]
    except (ImportError, AttributeError):
        return queue
    for end in (getattr(queue, "_reader", None), getattr(queue, "_writer", None)):
        if end is not None:
            with contextlib.suppress(OSError, ValueError):
                fcntl.fcntl(end.fileno(), setsize, _PIPE_BYTES)
    return queue


def _pool_context() -> multiprocessing.context.BaseContext:
    """The worker pool's context: fork where there is one (forked workers inherit the
    loaded modules and the metrics, and start in milliseconds instead of re-importing
    assay), the pipe of its results queue widened (`_widened`). The results are what
    is large; the pool builds its call queue without asking the context for one."""
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    base = multiprocessing.get_context(method)

    class Widened(type(base)):  # type: ignore[misc]
        def SimpleQueue(self) -> Any:
            return _widened(super().SimpleQueue())

    return Widened()  # type: ignore[no-any-return]


def _init_worker(parent: tuple[int, bool], spec: BatchSpec, writes: WorkerWrites | None) -> None:
    """Pool initializer: the worker dies with the process that forked it (kill -9
    included: `parent_watch`), then `init_worker`."""
    die_with_parent(parent[0], forked_by_main_thread=parent[1])
    init_worker(spec, writes)


def _score_in_worker(parent_pid: int, batch: RawBatch | LineChunk, number: int) -> BatchOutput:
    check_parent(parent_pid)  # no batch is started for a parent that is gone
    return score_in_worker(batch, number)


class Progress(Protocol):
    """What a streamed run reports progress to (`report.progress` has two)."""

    def on_start(self, total: int) -> None: ...
    def advance(self, done: int, passed: int, failed: int, not_evaluated: int) -> None: ...


@dataclass
class StreamOutcome:
    """What a streamed run did: its summary, counts and the first failing cases."""

    run_id: str | None
    summary: dict[str, Any]
    tally: Tally
    kept: list[CaseResult]
    """The first failing cases, or every case when `kept_all`."""
    total: int
    kept_all: bool = False
    interrupted: bool = False
    error: InputError | None = None
    written: list[Path] = field(default_factory=list)
    kept_reports: list[Path] = field(default_factory=list)
    """Reports an interrupted run left as they were (`report.atomic.keeps_earlier`)."""


def finish_reports(
    outcome: StreamOutcome,
    json_writer: JsonReportWriter | None,
    spool: RowSpool | None,
    csv_path: Path | None,
    junit: JUnitWriter | None,
) -> None:
    """Complete each report of a streamed run, each renamed into place when whole; an
    interrupted run's reports replace no report already there (those are discarded and
    listed in `outcome.kept_reports`). A report that cannot be written leaves no
    temporary file behind."""
    from assay.report.atomic import keeps_earlier
    from assay.report.json_report import write_csv_from

    def keep(target: Path | None) -> bool:
        kept = keeps_earlier(target, interrupted=outcome.interrupted)
        if kept and target is not None:
            outcome.kept_reports.append(target)
        return kept

    try:
        if json_writer is not None:
            if keep(json_writer.target):
                json_writer.discard()
            else:
                outcome.written.append(json_writer.finish(outcome.summary))
        if spool is not None and csv_path is not None and not keep(csv_path):
            outcome.written.append(write_csv_from(spool, csv_path))
        if junit is not None:
            if keep(junit.target):
                junit.discard()
            else:
                outcome.written.append(junit.finish())
    except BaseException:
        if json_writer is not None:
            json_writer.discard()
        if junit is not None:
            junit.discard()
        raise
    finally:
        if spool is not None:
            spool.close()


@dataclass(kw_only=True)
class StreamSettings:
    """What every streamed run of row files shares: where it is recorded (`store`
    None records nothing) and written, how its rows are mapped, what the console keeps
    (`keep_failing` failing cases, every case up to `keep_all_up_to`), and how it shows
    progress. `environment`: where the run is made (git commit, assay version), stored
    with a new run's config outside its identity (as `RunSession.environment`)."""

    store: Store | None = None
    mapping: dict[str, str] | None = None
    out: Path | None = None
    csv_path: Path | None = None
    junit_path: Path | None = None
    fresh: bool = False
    name: str | None = None
    case_score_metrics: tuple[str, ...] = ()
    keep_failing: int = 0
    keep_all_up_to: int = 0
    progress: Progress | None = None
    notify: Callable[[str], None] | None = None
    environment: dict[str, Any] | None = None

    def open_session(self, metrics: Sequence[Metric], identity: dict[str, Any]) -> RunSession:
        # The run's life — plan, resume, record, finish, interruption — is RunSession's,
        # as for every other run; a streamed run is its executor for row files.
        return RunSession(
            (),
            metrics,
            store=self.store,
            identity=RunIdentity(**identity),
            fresh=self.fresh,
            name=self.name,
            environment=self.environment,
        )

    def open_reports(
        self,
        run_id: str | None,
        identity: dict[str, Any],
        metrics: Sequence[Metric],
        *,
        csv_lines: bool,
    ) -> tuple[JsonReportWriter | None, RowSpool | None]:
        """The JSON report's writer (`out`) and the spool of report rows it and the CSV
        report (`csv_path`) are made from; `csv_lines`: rows may bring their CSV line
        already encoded (`RowSpool`)."""
        from assay.report.json_report import JsonReportWriter, RowSpool

        beside = self.out if self.out is not None else self.csv_path
        spool = RowSpool(beside, csv=csv_lines) if beside is not None else None
        json_writer = None
        if self.out is not None:
            json_writer = JsonReportWriter(
                self.out,
                run_id=run_id,
                eval_set_ids=identity["eval_set_ids"],
                metrics=[m.name for m in metrics],
                rows=spool,
            )
        return json_writer, spool

    def open_junit(self) -> JUnitWriter | None:
        from assay.report.junit import JUnitWriter

        return JUnitWriter(self.junit_path) if self.junit_path is not None else None


def off_fast_path(metrics: Sequence[Metric]) -> str | None:
    """What of a run of `metrics` the row kernel does not compute (`rows.plan`), naming
    the metrics scored by their own Python on each row; None when it computes them all.
    The kernel falls back metric by metric: the others stay on it."""
    if not metrics:
        return None
    plan = RowPlan.of(metrics)
    if plan is None:
        if len(metrics) > MAX_METRICS:
            return (
                f"a run of more than {MAX_METRICS} metrics is not on the row kernel: "
                "every row is scored by the reference path, a few times slower per row"
            )
        seen = [m.name for m in metrics]
        shared = next(name for i, name in enumerate(seen) if name in seen[:i])
        return (
            f"two metrics are named {shared!r}, which the row kernel does not allow: every "
            "row is scored by the reference path, a few times slower per row"
        )
    unknown = plan.in_python
    if not unknown:
        return None
    names = ", ".join(repr(n) for n in unknown)
    one = len(unknown) == 1
    what = f"metric {names} is" if one else f"metrics {names} are"
    return (
        f"{what} not computed by the row kernel: scored by {'its' if one else 'their'} own "
        "Python on each row (slower per row); the kernel computes the run's other metrics"
    )


def _warn_off_fast_path(metrics: Sequence[Metric]) -> None:
    """Say once, as an `AssayWarning`, which of the run's metrics the kernel leaves
    (where the kernel runs at all: without it, every row is the reference path's, and a
    stale kernel is said by `assay._native`)."""
    message = off_fast_path(metrics)
    if message is not None and kernel_available():
        warn(message)


@dataclass
class StreamingRun(StreamSettings):
    """One streamed run of recorded rows in `files` (see the module docstring).

    `identity` is the run's identity in the store (`eval_set_ids`, `metrics`, `config`,
    `agent`), as the loaded path computes it. `workers` None picks `default_workers`.
    """

    files: Sequence[RowFile]
    metrics: Sequence[Metric]
    identity: dict[str, Any]
    workers: int | None = None
    batch_rows: int = BATCH_ROWS

    def __post_init__(self) -> None:
        warn_misspelt_row_columns(self.files)
        self._session = self.open_session(self.metrics, self.identity)

    def run(self) -> StreamOutcome:
        total = sum(f.count_rows() for f in self.files)
        skip, previous = self._open(total)
        run_id = self._session.run_id
        tally = Tally((m.name for m in self.metrics), self.case_score_metrics)
        failing: list[CaseResult] = []
        # A small run keeps its cases, so it is shown as a loaded one is (a case table).
        keep_all = total <= self.keep_all_up_to
        keep = total if keep_all else self.keep_failing
        json_writer, spool = self.open_reports(
            run_id, self.identity, self.metrics, csv_lines=self.csv_path is not None
        )
        junit = self.open_junit()
        workers = self.workers if self.workers is not None else default_workers(total)
        if not keep_all and not self.mapping and any(f.kind == "jsonl" for f in self.files):
            _warn_off_fast_path(self.metrics)
        spec = BatchSpec(
            metrics=tuple(self.metrics),
            mapping=self.mapping,
            run_id=run_id,
            store=self.store is not None,
            cases_json=json_writer is not None,
            rows=spool is not None,
            csv=self.csv_path is not None,
            junit=junit is not None,
            eval_set_files={f.eval_set_id: str(f.path) for f in self.files},
            skip=frozenset(skip),
            case_score_metrics=self.case_score_metrics,
            keep=keep,
            keep_all=keep_all,
            cases_dir=None,
        )
        # The resumed run's results join the summary and reports (`CaseOutputs`' writer).
        resumed = StreamedReports(self.metrics, run_id, dict(spec.eval_set_files), json_writer,
                                  spool, junit, tally, keep, keep_all, agent_run=False,
                                  kept=failing)  # fmt: skip
        for case in previous:
            resumed.write(case)
        writes = self._worker_writes(workers, json_writer)
        if json_writer is not None and workers > 1 and (writes is None or writes.report is None):
            # Without a forked pool, workers write their cases to part files instead.
            spec = replace(spec, cases_dir=str(json_writer.parts_directory()))
        outcome = StreamOutcome(run_id, {}, tally, failing, total, kept_all=keep_all)
        # Case ids seen, per file (each file is its own eval set): bare strings, a
        # file's dropped when the next file starts (smaller than tuples with the set's id).
        seen: dict[str, set[str]] = {}
        done = len(previous)
        if self.progress is not None:
            self.progress.on_start(total)
        outputs = self._outputs(spec, workers, writes)
        try:
            for output in outputs:
                with gc_paused():  # a batch's bytes and rows make no cycles (see score_batch)
                    self._write(output, spec, tally, json_writer, spool, failing, seen)
                    if junit is not None:
                        set_id = Path(output.file).stem
                        for testcase in output.junit:
                            junit.add_encoded(set_id, testcase)
                del failing[keep:]
                done += output.tally.cases
                if self.progress is not None:
                    counts = tally.statuses
                    self.progress.advance(done, *(counts[s] for s in _STATUSES))
                output.raise_error()
        except InputError as exc:
            outcome.error, outcome.interrupted = exc, True
        except KeyboardInterrupt:
            outcome.interrupted = True
        except BaseException as exc:
            outputs.close()
            self._session.mark_error(redact(f"{type(exc).__name__}: {exc}"))
            if json_writer is not None:
                json_writer.discard()
            if spool is not None:
                spool.close()
            if junit is not None:
                junit.discard()
            raise
        # The pool is shut down before the run is finished: batches its workers were
        # storing are in the store when the run's counts are taken.
        outputs.close()
        outcome.summary = {**tally.summary(self.metrics), **tally.status_columns()}
        self._finish(outcome, json_writer, spool, junit)
        return outcome

    # -- the run in the store: RunSession's lifecycle --------------------------------

    def _open(self, total: int) -> tuple[set[tuple[str, str, int]], list[CaseResult]]:
        """Open the session's run (resumed or new): what it completed before."""
        self._session.open()
        run_id = self._session.run_id
        if self.store is None or run_id is None:
            return set(), []
        self.store.set_total(run_id, total)
        if self._session.resumed and self.notify is not None:
            self.notify(
                f"resuming run {run_id}: {self._session.done_before} of {total} case runs"
                " already done (--fresh starts a new run)"
            )
        busy = self._session.busy_note()
        if busy is not None and self.notify is not None:
            self.notify(busy)
        return self._session.skip, self._session.previous

    def _finish(
        self,
        outcome: StreamOutcome,
        json_writer: JsonReportWriter | None,
        spool: RowSpool | None,
        junit: JUnitWriter | None,
    ) -> None:
        if outcome.interrupted:
            self._session.mark_interrupted()
        else:
            self._session.mark_completed(outcome.summary)
        finish_reports(outcome, json_writer, spool, self.csv_path, junit)

    # -- batches ------------------------------------------------------------------------

    def _batches(self) -> Iterator[RawBatch | LineChunk]:
        for row_file in self.files:
            yield from row_file.chunks(self.batch_rows)

    def _outputs(
        self, spec: BatchSpec, workers: int, writes: WorkerWrites | None
    ) -> Generator[BatchOutput, None, None]:
        if workers <= 1:
            for batch in self._batches():
                yield score_batch(spec, batch)
            return
        parent = (os.getpid(), threading.current_thread() is threading.main_thread())
        pool = ProcessPoolExecutor(workers, mp_context=_pool_context(), initializer=_init_worker,
                                   initargs=(parent, spec, writes))  # fmt: skip
        pending: deque[Future[BatchOutput]] = deque()
        checkpoints = contextlib.ExitStack()
        try:
            batches = self._batches()
            # Two batches per worker in flight: one being scored, one waiting; the rest
            # of the file stays unread.
            for number, batch in enumerate(batches):
                pending.append(pool.submit(_score_in_worker, parent[0], batch, number))
                if number == 0 and writes is not None and writes.store is not None:
                    # The workers' writes checkpointed from a thread of this process,
                    # started once the first submit has forked them (none inherits it).
                    checkpoints.enter_context(writes.store.checkpointing())
                if len(pending) >= 2 * workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            checkpoints.close()

    def _worker_writes(
        self, workers: int, json_writer: JsonReportWriter | None
    ) -> WorkerWrites | None:
        """What the pool's workers write themselves (`WorkerWrites`): their batches to
        a store in a file or a server, their cases to the JSON report; None without a
        forked pool of workers."""
        if workers <= 1 or _pool_context().get_start_method() != "fork":
            return None
        target = None
        if self.store is not None:
            url = self.store.engine.url
            in_memory = url.get_backend_name() == "sqlite" and url.database in (
                None, "", ":memory:",
            )  # fmt: skip
            if not in_memory:  # a store in this process's memory: only it writes there
                target = self._session.encoded_writer()
        report, cases = json_writer.hand_over() if json_writer is not None else (None, 0)
        rows = json_writer.rows.hand_over() if json_writer is not None else None
        if target is None and report is None:
            return None
        store, run_id = target if target is not None else (None, None)
        context = multiprocessing.get_context("fork")
        return WorkerWrites(
            store, run_id, report, context.Value("q", cases, lock=False),
            context.Value("q", 0, lock=False), context.Value("q", 0, lock=False),
            context.Condition(), rows,
        )  # fmt: skip

    # -- writing ------------------------------------------------------------------------

    def _write(
        self,
        output: BatchOutput,
        spec: BatchSpec,
        tally: Tally,
        json_writer: JsonReportWriter | None,
        spool: RowSpool | None,
        failing: list[CaseResult],
        seen: dict[str, set[str]],
    ) -> None:
        ids = seen.get(output.file)
        if ids is None:
            seen.clear()  # the files come one after another
            ids = seen[output.file] = set()
        for case_id in output.case_ids:
            if case_id in ids:
                raise InputError(
                    "duplicate case id",
                    file=output.file,
                    case_id=case_id,
                    expected="case ids unique within an eval set",
                )
            ids.add(case_id)
        # Durable before the next batch is taken: a kill re-scores only the batches in
        # flight. A worker stores its batch itself where it can (`WorkerWrites`).
        if not output.stored:
            self._session.record_encoded(output.encoded)
        tally.merge(output.tally)
        if json_writer is not None:
            json_writer.appended(output.cases_appended)
            if output.cases_part is not None:
                json_writer.add_cases_part(output.cases_part)
            else:
                json_writer.add_encoded_cases(output.cases_json)
        if spool is not None:
            spool.appended(output.rows_appended)
            if output.rows:
                spool.add_encoded_rows(output.rows)
        for kept in output.kept:
            if len(failing) >= spec.keep:
                break  # enough to show: the rest are not rebuilt
            failing.append(kept_case(spec, output.file, kept))
