"""One batch of a streamed run, scored start to finish where it runs (often a worker).

`score_batch` turns a batch of raw rows into everything the run's writers need — the
store's encoded rows, the report's case objects and rows as JSON bytes, a `Tally` of
the summary's inputs, the first failing cases for the console (every case of a small
run) — so the process that owns the files and the store only copies bytes. The output
holds no per-case objects beyond the cases asked for.

Two tiers score a row: the row kernel (`rows.kernel`, compiled) for every plain JSON
line it reads, and the reference path (the ordinary reader, metrics and writers:
`_add_cases`) for every other row, and for every row when the kernel is not compiled.
"""

from __future__ import annotations

import gc
import signal
from collections import _count_elements  # type: ignore[attr-defined]
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from assay._malloc import keep_freed_memory
from assay.core.results import CaseResult, Status
from assay.engine.tally import Tally
from assay.errors import InputError
from assay.formats._common import gc_paused
from assay.formats.stream import LineChunk, RawBatch, batch_cases, may_hold_big_int
from assay.report.json_report import CasesPart, csv_line, write_cases_part
from assay.report.junit import EncodedTestcase, testcase_xml
from assay.rows.plan import RowPlan
from assay.rows.writes import WorkerWrites
from assay.store import EncodedCase, encode_case

if TYPE_CHECKING:
    from assay.core.cases import EvalCase
    from assay.metrics.base import Metric
    from assay.rows.kernel import EncodedMetric, KernelRow, RowKernel


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
"""A failing kernel row the console may show: its index, line number and text. Only the
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
    """The failing cases to show, whole or (a kernel row) as the row to rebuild them from."""
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
    # passes over them found nothing and cost much of the batch's CPU (bench/README.md).
    with gc_paused():
        if isinstance(batch, LineChunk):
            scanned = _score_chunk(spec, batch)
            if scanned is not None:
                return scanned
            batch = batch.batch()
        return _score_batch(spec, batch)


def _score_chunk(spec: BatchSpec, chunk: LineChunk) -> BatchOutput | None:
    """A chunk of JSON lines scored by the row kernel, which splits its lines and
    scores them in C, handing each row it leaves to the reference path in its place;
    None when the kernel cannot take the run."""
    kernel = _kernel(spec, chunk)
    if kernel is None or spec.skip or spec.junit or spec.case_score_metrics:
        return None
    out = BatchOutput(
        chunk.file, chunk.start, [], Tally((m.name for m in spec.metrics), spec.case_score_metrics)
    )
    counts = _KernelCounts()
    set_id = Path(chunk.file).stem
    set_file = spec.eval_set_files.get(set_id)
    position, lineno, offset = 0, chunk.first_line, 0
    while True:
        position, lineno, offset, left_line, left_offset, raw = kernel.scan(
            chunk.data, position, lineno, offset, chunk.start, set_id, spec.run_id, set_file,
            spec.store, spec.cases_json, spec.rows, spec.csv, spec.keep, out, counts.statuses,
            counts.metrics,
        )  # fmt: skip
        if raw is None:
            break
        # A row the kernel leaves: the reference path's.
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
    kernel = _kernel(spec, batch)
    if kernel is None:
        cases, error = batch_cases(batch, spec.mapping)
        _add_cases(spec, out, cases)
        if error is not None:
            out.error = (error.detail, error.file, error.case_id, error.path, error.expected)
        return out
    # Row by row: a row the kernel reads is its own, any other the reference path's.
    set_id = Path(batch.file).stem
    # The kernel's rows' results are tallied by kind: their metrics' encoded results repeat.
    counts = _KernelCounts() if not spec.case_score_metrics else None
    for offset, (lineno, raw) in enumerate(batch.rows):
        if _add_kernel_row(spec, kernel, out, batch, set_id, offset, lineno, raw, counts):
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


class _KernelCounts:
    """A batch's kernel rows counted by status and by encoded metric result."""

    __slots__ = ("metrics", "statuses")

    def __init__(self) -> None:
        self.statuses: dict[Status, int] = dict.fromkeys(Status, 0)
        self.metrics: dict[EncodedMetric, int] = {}


def _kernel(spec: BatchSpec, batch: RawBatch | LineChunk) -> RowKernel | None:
    """The row kernel of the spec's metrics, when its batches can take it: JSON lines
    without a column mapping, no case table (it needs every case result whole), the
    kernel compiled and current (`assay._native`), and a plan of the run's metrics."""
    kind = batch.kind if isinstance(batch, RawBatch) else "jsonl"
    if kind != "jsonl" or spec.mapping or spec.keep_all:
        return None
    global _KERNEL
    cached = _KERNEL
    if cached is None or cached[0] is not spec:
        # One run's spec at a time (a worker serves one run; so does a process).
        cached = _KERNEL = (spec, _row_kernel(RowPlan.of(spec.metrics)))
    return cached[1]


_KERNEL: tuple[BatchSpec, RowKernel | None] | None = None


def _row_kernel(plan: RowPlan | None) -> RowKernel | None:
    """The compiled row kernel of `plan` (`rows.kernel`), when assay was installed
    with it (and it is current); else None (the reference path)."""
    if plan is None:
        return None
    try:
        from assay.rows.kernel import RowKernel
    except ImportError:  # not compiled (no C compiler, ASSAY_PURE_PYTHON=1, stale, ...)
        return None
    return RowKernel.of(plan)


def kernel_available() -> bool:
    """Whether the row kernel is compiled and current here (`assay._native`)."""
    try:
        import assay.rows.kernel  # noqa: F401
    except ImportError:
        return False
    return True


def _add_kernel_row(
    spec: BatchSpec,
    kernel: RowKernel,
    out: BatchOutput,
    batch: RawBatch,
    set_id: str,
    offset: int,
    lineno: int,
    raw: bytes | dict[str, Any],
    counts: _KernelCounts | None,
) -> bool:
    """Score and write one row by the row kernel; False when it does not read it (the
    reference path then takes it, and reports what is unusual about it)."""
    if type(raw) is not bytes or (not batch.no_big_ints and may_hold_big_int(raw)):
        return False
    set_file = spec.eval_set_files.get(set_id)
    done = kernel.row(raw, batch.start + offset, set_id, spec.run_id, set_file,
                      spec.store, spec.cases_json, spec.rows, spec.csv)  # fmt: skip
    if done is None:
        return False
    if spec.skip and (set_id, done.case_id, 0) in spec.skip:
        out.case_ids.append(done.case_id)
        return True  # done by the run being resumed
    testcase = _kernel_testcase(spec, done, batch, offset, lineno, raw) if spec.junit else None
    if done.status is not Status.PASSED and len(out.kept) < spec.keep:
        out.kept.append((batch.start + offset, lineno, raw))
    out.case_ids.append(done.case_id)
    if counts is not None:
        counts.statuses[done.status] += 1
        _count_elements(counts.metrics, done.metrics)
    else:
        out.tally.add_row(done.status, [m.result for m in done.metrics])
    if done.stored is not None:
        out.encoded.append(done.stored)
    if testcase is not None:
        out.junit.append(testcase)
    if done.case_json is not None:
        out.cases_json.append(done.case_json)
    if done.shape is not None and done.line is not None:
        out.rows.append((done.shape, done.line, done.csv))
    return True


def _kernel_testcase(
    spec: BatchSpec, done: KernelRow, batch: RawBatch, offset: int, lineno: int, raw: bytes
) -> EncodedTestcase:
    """The row's JUnit `<testcase>`, by the JUnit report's own code: a passing row's
    needs only its id (no time, no message); a failing one's names its failed metrics
    and the failure analysis of the whole case result, rebuilt the reference way for it."""
    set_id = Path(batch.file).stem
    if done.status is Status.PASSED:
        return testcase_xml(CaseResult(done.case_id, Status.PASSED), set_id)
    case = kept_case(spec, batch.file, (batch.start + offset, lineno, raw))
    return testcase_xml(case, set_id)


def _add_cases(spec: BatchSpec, out: BatchOutput, cases: list[EvalCase]) -> None:
    """Score and encode `cases` the ordinary way (built `CaseResult`s)."""
    from assay.engine.aggregate import case_rows
    from assay.report.json_report import case_to_adk, dumps

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
    # walked the batch's output, still alive then, and found nothing (bench/README.md).
    # The worker collects every `_COLLECT_EVERY` batches instead, between batches, when
    # the last one's output is gone.
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
        # pickling, pipe or copy through the parent for a case's few KB.
        part = write_cases_part(_SPEC.cases_dir, out.cases_json)
        if part is not None:
            out.cases_part, out.cases_json = part, []
    return out
