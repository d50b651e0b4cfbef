"""One batch of a streamed run, scored start to finish where it runs (often a worker).

`score_batch` turns a batch of raw rows into everything the run's writers need — the
store's encoded rows, the report's case objects and rows as JSON bytes, a `Tally` of
the summary's inputs, the first failing cases for the console (every case of a small
run) — so the process that owns the files and the store only copies bytes. The output
holds no per-case objects beyond the cases asked for.
"""

from __future__ import annotations

import gc
import os
import signal
from collections import _count_elements  # type: ignore[attr-defined]
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from assay._malloc import keep_freed_memory
from assay.engine.tally import Tally
from assay.errors import InputError
from assay.formats._common import gc_paused
from assay.formats.stream import LineChunk, RawBatch, batch_cases, may_hold_big_int
from assay.model.results import CaseResult, Status
from assay.report.json_stream import CasesPart, cases_text, csv_line, rows_text, write_cases_part
from assay.report.junit import EncodedTestcase, testcase_xml
from assay.session.lean_encode import (
    encoded_calls,
    report_case,
    report_csv_line,
    report_row,
    store_row,
)
from assay.session.lean_rows import EncodedMetric, plain_row
from assay.session.lean_score import LeanPlan
from assay.store import EncodedCase, encode_case

if TYPE_CHECKING:
    from assay.metrics.base import Metric
    from assay.model.core import EvalCase
    from assay.store import Store


@dataclass(frozen=True)
class BatchSpec:
    """What every batch of a run is scored with (sent to each worker once)."""

    metrics: tuple[Metric, ...]
    mapping: dict[str, str] | None = None
    run_id: str | None = None
    store: bool = True
    cases_json: bool = True
    rows: bool = True
    csv: bool = False
    """Whether the rows are sent as CSV lines too (a `--csv` report)."""
    junit: bool = False
    eval_set_files: dict[str, str] = field(default_factory=dict)
    skip: frozenset[tuple[str, str, int]] = frozenset()
    case_score_metrics: tuple[str, ...] = ()
    keep: int = 0
    """How many failing cases to send back whole (for the console)..."""
    keep_all: bool = False
    """... or every case (a run small enough to show a case table for)."""
    cases_dir: str | None = None
    """Where a worker process writes its batches' report cases (`write_cases_part`),
    so they reach the report without passing through the process writing it."""


KeptRow = tuple[int, int, bytes]
"""A failing lean row the console may show: its index, line number and text. Only the
first few failing cases of a run are shown, so the process showing them rebuilds their
`CaseResult` (`kept_case`) only while it still needs some."""


@dataclass
class BatchOutput:
    """A scored batch, in the order of its rows."""

    file: str
    start: int
    case_ids: list[str]
    tally: Tally
    encoded: list[EncodedCase] = field(default_factory=list)
    cases_json: list[bytes] = field(default_factory=list)
    cases_part: CasesPart | None = None
    """`cases_json` written to a part file by the worker (`BatchSpec.cases_dir`)."""
    rows: list[tuple[tuple[str, ...], bytes, bytes | None]] = field(default_factory=list)
    """Per report row: its shape, its JSON line and (`BatchSpec.csv`) its CSV line."""
    junit: list[EncodedTestcase] = field(default_factory=list)
    kept: list[CaseResult | KeptRow] = field(default_factory=list)
    """The failing cases to show, whole or (a lean row) as the row to rebuild them from."""
    # The distinct row shapes, so each is one object (pickled once per batch).
    shapes: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    # An InputError does not survive pickling with its location: sent as its parts.
    error: tuple[str, str | None, str | None, str | None, str | None] | None = None
    stored: bool = False
    """`encoded` was stored by the worker itself (`WorkerWrites`), and not sent back."""
    cases_appended: int = 0
    """How many cases the worker appended to the JSON report itself (`WorkerWrites`)."""
    rows_appended: int = 0
    """How many rows the worker appended to the report's row spool itself."""

    def raise_error(self) -> None:
        if self.error is not None:
            detail, file, case_id, path, expected = self.error
            raise InputError(detail, file=file, case_id=case_id, path=path, expected=expected)


def score_batch(spec: BatchSpec, batch: RawBatch | LineChunk) -> BatchOutput:
    """Build, score and encode the cases of `batch` (see the module docstring)."""
    # The rows, cases and results of a batch make no reference cycles: the collector's
    # passes over them found nothing and cost ~40 % of the batch's CPU (measured).
    with gc_paused():
        if isinstance(batch, LineChunk):
            scanned = _score_chunk(spec, batch)
            if scanned is not None:
                return scanned
            batch = batch.batch()
        return _score_batch(spec, batch)


def _score_chunk(spec: BatchSpec, chunk: LineChunk) -> BatchOutput | None:
    """A chunk of JSON lines scored by the row kernel, which splits its lines and
    scores them in C, handing each row it leaves to the lean path (and that to the
    ordinary one) in its place; None when the kernel cannot take the run."""
    plan = _lean_plan(spec, chunk)
    kernel = _kernel_for(plan)
    if plan is None or kernel is None or spec.skip or spec.junit or spec.case_score_metrics:
        return None
    out = BatchOutput(
        chunk.file, chunk.start, [], Tally((m.name for m in spec.metrics), spec.case_score_metrics)
    )
    counts = _LeanCounts()
    set_id = Path(chunk.file).stem
    set_file = spec.eval_set_files.get(set_id)
    names: dict[str, str] = {}
    position, lineno, offset = 0, chunk.first_line, 0
    while True:
        position, lineno, offset, left_line, left_offset, raw = kernel.scan(
            chunk.data, position, lineno, offset, chunk.start, set_id, spec.run_id, set_file,
            spec.store, spec.cases_json, spec.rows, spec.csv, spec.keep, out, counts.statuses,
            counts.metrics,
        )  # fmt: skip
        if raw is None:
            break
        # A row the kernel leaves: the lean path's, or the ordinary one's, in its place.
        rows = RawBatch(chunk.file, "jsonl", chunk.start, [])
        if _add_lean(spec, plan, out, rows, set_id, left_offset, left_line, raw, names, counts,
                     kernel=False):  # fmt: skip
            continue
        one = RawBatch(chunk.file, "jsonl", chunk.start + left_offset, [(left_line, raw)])
        cases, error = batch_cases(one, spec.mapping)
        _add_cases(spec, out, cases)
        if error is not None:
            out.error = (error.detail, error.file, error.case_id, error.path, error.expected)
            break
    out.tally.add_counted(counts.statuses, [(m.result, n) for m, n in counts.metrics.items()])
    return out


def _score_batch(spec: BatchSpec, batch: RawBatch) -> BatchOutput:
    metrics = list(spec.metrics)
    out = BatchOutput(
        batch.file, batch.start, [], Tally((m.name for m in metrics), spec.case_score_metrics)
    )
    plan = _lean_plan(spec, batch)
    if plan is None:
        cases, error = batch_cases(batch, spec.mapping)
        _add_cases(spec, out, cases)
        if error is not None:
            out.error = (error.detail, error.file, error.case_id, error.path, error.expected)
        return out
    # Row by row: a plain row takes the lean path, any other the ordinary one.
    names: dict[str, str] = {}
    set_id = Path(batch.file).stem
    # The lean rows' results are tallied by kind: their metrics' encoded results repeat.
    counts = _LeanCounts() if not spec.case_score_metrics else None
    for offset, (lineno, raw) in enumerate(batch.rows):
        if _add_lean(spec, plan, out, batch, set_id, offset, lineno, raw, names, counts):
            continue
        one = RawBatch(batch.file, batch.kind, batch.start + offset, [(lineno, raw)])
        cases, error = batch_cases(one, spec.mapping)
        _add_cases(spec, out, cases)
        if error is not None:
            out.error = (error.detail, error.file, error.case_id, error.path, error.expected)
            break
    if counts is not None:
        out.tally.add_counted(counts.statuses, [(m.result, n) for m, n in counts.metrics.items()])
    return out


class _LeanCounts:
    """A batch's lean rows counted by status and by encoded metric result."""

    __slots__ = ("metrics", "statuses")

    def __init__(self) -> None:
        self.statuses: dict[Status, int] = dict.fromkeys(Status, 0)
        self.metrics: dict[EncodedMetric, int] = {}


def _lean_plan(spec: BatchSpec, batch: RawBatch | LineChunk) -> LeanPlan | None:
    """The lean plan of the spec's metrics, when its batches can take the lean path:
    JSON lines without a column mapping, and no case table (it needs every case result
    whole)."""
    kind = batch.kind if isinstance(batch, RawBatch) else "jsonl"
    if kind != "jsonl" or spec.mapping or spec.keep_all:
        return None
    global _PLAN
    cached = _PLAN
    if cached is None or cached[0] is not spec:
        # One run's spec at a time (a worker serves one run; so does a process).
        plan = LeanPlan.of(spec.metrics)
        cached = _PLAN = (spec, plan, _row_kernel(plan))
    return cached[1]


def _kernel_for(plan: LeanPlan | None) -> Any:
    """The row kernel made with `plan` (`_lean_plan`), if it is still the one kept."""
    cached = _PLAN
    return cached[2] if plan is not None and cached is not None and cached[1] is plan else None


_PLAN: tuple[BatchSpec, LeanPlan | None, Any] | None = None


def _row_kernel(plan: LeanPlan | None) -> Any:
    """The compiled row kernel of `plan` (`session.row_kernel`), when assay was
    installed with it and it knows the plan's metrics; else None (the lean path)."""
    if plan is None:
        return None
    try:
        from assay.session.row_kernel import RowKernel
    except ImportError:  # not compiled (no C compiler, ASSAY_PURE_PYTHON=1, ...)
        return None
    return RowKernel.of(plan)


def _add_lean(
    spec: BatchSpec,
    plan: LeanPlan,
    out: BatchOutput,
    batch: RawBatch,
    set_id: str,
    offset: int,
    lineno: int,
    raw: bytes | dict[str, Any],
    names: dict[str, str],
    counts: _LeanCounts | None,
    *,
    kernel: bool = True,
) -> bool:
    """Score and encode one row on the lean path (by the row kernel where there is one,
    unless `kernel` is False); False when the row is not plain (or anything about it is
    unusual: it then takes the ordinary path, which reports it)."""
    if type(raw) is not bytes or (not batch.no_big_ints and may_hold_big_int(raw)):
        return False
    row_kernel = _kernel_for(plan) if kernel else None
    if row_kernel is not None and not spec.skip:
        # The same results and bytes as below, in one pass of C (`session.row_kernel`).
        set_file = spec.eval_set_files.get(set_id)
        done = row_kernel.row(raw, batch.start + offset, set_id, spec.run_id, set_file,
                              spec.store, spec.cases_json, spec.rows, spec.csv)  # fmt: skip
        if done is not None:
            try:
                testcase = (
                    _lean_testcase(spec, done, batch, offset, lineno, raw) if spec.junit else None
                )
            except Exception:  # as on the lean path: the ordinary path decides
                return False
            _add_scored(spec, out, batch, offset, lineno, raw, counts, done,
                        done.stored, done.case_json,
                        None if done.line is None else (done.shape, done.line), done.csv,
                        testcase)  # fmt: skip
            return True
    try:
        row = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    lean = plain_row(row, batch.start + offset, names)
    if lean is None:
        return False
    if spec.skip and (set_id, lean.case_id, 0) in spec.skip:
        out.case_ids.append(lean.case_id)
        return True  # done by the run being resumed
    try:
        plan.score(lean)
        calls = encoded_calls(lean) if spec.store or spec.cases_json else None
        encoded = store_row(lean, set_id, calls) if spec.store else None
        case_json = (
            report_case(lean, set_id, spec.run_id, spec.eval_set_files.get(set_id), calls)
            if spec.cases_json
            else None
        )
        row = report_row(lean, set_id) if spec.rows else None
        csv_bytes = report_csv_line(lean, set_id) if spec.csv else None
        testcase = _lean_testcase(spec, lean, batch, offset, lineno, raw) if spec.junit else None
    except Exception:  # a metric or an encoder objects: the ordinary path decides
        return False
    _add_scored(spec, out, batch, offset, lineno, raw, counts, lean, encoded, case_json, row,
                csv_bytes, testcase)  # fmt: skip
    return True


def _add_scored(
    spec: BatchSpec,
    out: BatchOutput,
    batch: RawBatch,
    offset: int,
    lineno: int,
    raw: bytes,
    counts: _LeanCounts | None,
    lean: Any,
    encoded: EncodedCase | None,
    case_json: bytes | None,
    row: tuple[tuple[str, ...], bytes] | None,
    csv_bytes: bytes | None,
    testcase: EncodedTestcase | None,
) -> None:
    """Add a row scored on the lean path or by the kernel (`lean`: its `case_id`,
    `status` and `metrics`) to the batch's output."""
    if lean.status is not Status.PASSED and len(out.kept) < spec.keep:
        out.kept.append((batch.start + offset, lineno, raw))
    out.case_ids.append(lean.case_id)
    if counts is not None:
        counts.statuses[lean.status] += 1
        _count_elements(counts.metrics, lean.metrics)
    else:
        out.tally.add_row(lean.status, [m.result for m in lean.metrics])
    if encoded is not None:
        out.encoded.append(encoded)
    if testcase is not None:
        out.junit.append(testcase)
    if case_json is not None:
        out.cases_json.append(case_json)
    if row is not None:
        out.rows.append((row[0], row[1], csv_bytes))


def _lean_testcase(
    spec: BatchSpec, lean: Any, batch: RawBatch, offset: int, lineno: int, raw: bytes
) -> EncodedTestcase:
    """The row's JUnit `<testcase>`, by the JUnit report's own code: a passing row's
    needs only its id (no time, no message); a failing one's names its failed metrics
    and the failure analysis of the whole case result, rebuilt the ordinary way for it."""
    set_id = Path(batch.file).stem
    if lean.status is Status.PASSED:
        return testcase_xml(CaseResult(lean.case_id, Status.PASSED), set_id)
    case = kept_case(spec, batch.file, (batch.start + offset, lineno, raw))
    return testcase_xml(case, set_id)


def _add_cases(spec: BatchSpec, out: BatchOutput, cases: list[EvalCase]) -> None:
    """Score and encode `cases` the ordinary way (built `CaseResult`s)."""
    from assay.engine.aggregate import case_rows
    from assay.report.json_report import case_to_adk
    from assay.report.json_stream import dumps

    set_id = Path(out.file).stem
    metrics = list(spec.metrics)
    encode = encode_case if spec.store else None
    set_file = spec.eval_set_files.get(set_id)
    for case in cases:
        out.case_ids.append(case.id)
        if spec.skip and (set_id, case.id, 0) in spec.skip:
            continue  # done by the run being resumed
        result = _score_recorded(case, metrics, eval_set_id=set_id)
        out.tally.add(result)
        if encode is not None:
            out.encoded.append(encode(result))
        if spec.cases_json:
            out.cases_json.append(
                dumps(case_to_adk(result, run_id=spec.run_id, eval_set_file=set_file))
            )
        if spec.rows:
            for row in case_rows(result, metrics, False):
                # One tuple per distinct shape: pickled once per batch, not once per row.
                shape = tuple(row)
                line = dumps(row) + b"\n"
                out.rows.append((out.shapes.setdefault(shape, shape), line, _csv(spec, line)))
        if spec.junit:
            out.junit.append(testcase_xml(result, set_id))
        if spec.keep_all or (len(out.kept) < spec.keep and result.status is not Status.PASSED):
            out.kept.append(result)


def _csv(spec: BatchSpec, line: bytes) -> bytes | None:
    """The CSV line of a row from its JSON line, as the report's CSV is made from the
    JSON lines; None when it cannot be encoded (the CSV is then made at the end, which
    reports it)."""
    if not spec.csv:
        return None
    try:
        return csv_line(orjson.loads(line))
    except (ValueError, TypeError):
        return None


def kept_case(spec: BatchSpec, file: str, kept: CaseResult | KeptRow) -> CaseResult:
    """The case result of a kept failing case (rebuilt the ordinary way from its row)."""
    if isinstance(kept, CaseResult):
        return kept
    index, lineno, raw = kept
    cases, error = batch_cases(RawBatch(file, "jsonl", index, [(lineno, raw)]), spec.mapping)
    if error is not None:  # the row was read once already: it cannot fail now
        raise error
    return _score_recorded(cases[0], list(spec.metrics), eval_set_id=Path(file).stem)


# -- in a worker process -------------------------------------------------------------


@dataclass
class WorkerWrites:
    """What the workers of a pool write themselves, in file order: each batch to the
    store, its cases to the JSON report and its rows to the report's row spool.

    Each batch is stored by the worker that scored it, in one transaction, before the
    worker takes new work, and its report cases are appended to the report (`--out`)
    there and then: the process writing the rest of the reports no longer spends its
    time in the store nor copies ~5 KB a case, and a batch is durable as soon as it is
    scored. The rows (~1.6 KB each) are appended with the cases, so they are neither
    pickled back nor written by that process either (~0.7 s of its CPU on 100,000
    rows). The batches are stored in the order of the file, each after the one before
    it (`stored_turn` holds the number of the next batch to store), and appended to the
    report in that order too (`appended_turn`): two turns, so that one worker appends
    its batch's cases and rows while the next batch is being stored. The store and the
    report hold what the ordinary order writes: a duplicate case id is refused in the
    later batch, a batch's cases are appended only once it is stored, and a batch that
    stops the run (a malformed row, a batch the store or the file refused) stops every
    later batch from being written (its turns become -1). What a worker did not write is sent
    back, and the reports' process writes it or reports why it cannot.

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

    def write_in_turn(self, number: int, out: BatchOutput) -> None:
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
            except Exception:  # the reports' process stores it, or says why not
                pass
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
        except Exception:  # the reports' process appends them, or says why not
            pass
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


_SPEC: BatchSpec | None = None
_WORKER_WRITES: WorkerWrites | None = None
_COLLECT_EVERY = 32
"""A worker collects cyclic garbage itself once every this many batches (see
`init_worker`)."""
_batches_since_collect = 0


def _score_recorded(case: EvalCase, metrics: list[Metric], *, eval_set_id: str) -> CaseResult:
    # The engine's scoring of a whole case, imported where a row takes the ordinary path:
    # a run of plain rows does not load the run pipeline (its judges, agents, ...).
    from assay.engine.runner import score_recorded

    return score_recorded(case, metrics, eval_set_id=eval_set_id)


def init_worker(spec: BatchSpec, writes: WorkerWrites | None = None) -> None:
    """Pool initializer: keep the spec (and what the worker writes itself); Ctrl-C is
    the parent's to handle."""
    global _SPEC, _WORKER_WRITES
    _SPEC = spec
    _WORKER_WRITES = writes
    if writes is not None and writes.store is not None:
        # The parent's pooled connections are its own: this process opens new ones.
        writes.store.engine.dispose(close=False)
    # What the worker inherited (modules, metrics) is never garbage: out of the
    # collector's passes.
    gc.freeze()
    # A batch's rows, cases and results make no reference cycles, so the collector runs
    # paused while one is scored (`score_batch`); but each time it was enabled again it
    # walked the batch's output, still alive then, which cost ~0.1 s of CPU per worker
    # on 100,000 rows and found nothing. The worker collects every `_COLLECT_EVERY`
    # batches instead, between batches, when the last one's output is gone.
    gc.disable()
    keep_freed_memory()  # a batch's buffers of a few MB: not fresh pages each time
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def score_in_worker(batch: RawBatch | LineChunk, number: int = -1) -> BatchOutput:
    """Score batch `number` of the run (see `WorkerWrites`) in a worker process."""
    global _batches_since_collect
    assert _SPEC is not None, "init_worker was not called"
    writes = _WORKER_WRITES if number >= 0 else None
    _batches_since_collect += 1
    if _batches_since_collect >= _COLLECT_EVERY:
        _batches_since_collect = 0
        gc.collect()  # anything cyclic a batch left (see `init_worker`)
    try:
        out = score_batch(_SPEC, batch)
    except BaseException:
        if writes is not None:
            writes.give_up_turn(number)
        raise
    if writes is not None:
        writes.write_in_turn(number, out)
    if _SPEC.cases_dir is not None and out.cases_json:
        # The cases go to the report by a file the parent appends in the kernel: no
        # pickling, pipe or copy through the parent for ~5 KB a case.
        part = write_cases_part(_SPEC.cases_dir, out.cases_json)
        if part is not None:
            out.cases_part, out.cases_json = part, []
    return out
