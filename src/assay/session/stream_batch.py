"""One batch of a streamed run, scored start to finish where it runs (often a worker).

`score_batch` turns a batch of raw rows into everything the run's writers need — the
store's encoded rows, the report's case objects and rows as JSON bytes, a `Tally` of
the summary's inputs, the first failing cases for the console (every case of a small
run) — so the process that owns the files and the store only copies bytes. The output
holds no per-case objects beyond the cases asked for.
"""

from __future__ import annotations

import gc
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from assay.engine.runner import score_recorded
from assay.engine.tally import Tally
from assay.errors import InputError
from assay.formats._common import gc_paused
from assay.formats.stream import RawBatch, batch_cases
from assay.model.results import CaseResult, Status
from assay.report.junit_stream import EncodedTestcase, testcase_xml
from assay.store import EncodedCase, encode_case

if TYPE_CHECKING:
    from assay.metrics.base import Metric


@dataclass(frozen=True)
class BatchSpec:
    """What every batch of a run is scored with (sent to each worker once)."""

    metrics: tuple[Metric, ...]
    mapping: dict[str, str] | None = None
    run_id: str | None = None
    store: bool = True
    cases_json: bool = True
    rows: bool = True
    junit: bool = False
    eval_set_files: dict[str, str] = field(default_factory=dict)
    skip: frozenset[tuple[str, str, int]] = frozenset()
    case_score_metrics: tuple[str, ...] = ()
    keep: int = 0
    """How many failing cases to send back whole (for the console)..."""
    keep_all: bool = False
    """... or every case (a run small enough to show a case table for)."""


@dataclass
class BatchOutput:
    """A scored batch, in the order of its rows."""

    file: str
    start: int
    case_ids: list[str]
    tally: Tally
    encoded: list[EncodedCase] = field(default_factory=list)
    cases_json: list[bytes] = field(default_factory=list)
    rows: list[tuple[tuple[str, ...], bytes]] = field(default_factory=list)
    junit: list[EncodedTestcase] = field(default_factory=list)
    kept: list[CaseResult] = field(default_factory=list)
    # An InputError does not survive pickling with its location: sent as its parts.
    error: tuple[str, str | None, str | None, str | None, str | None] | None = None

    def raise_error(self) -> None:
        if self.error is not None:
            detail, file, case_id, path, expected = self.error
            raise InputError(detail, file=file, case_id=case_id, path=path, expected=expected)


def score_batch(spec: BatchSpec, batch: RawBatch) -> BatchOutput:
    """Build, score and encode the cases of `batch` (see the module docstring)."""
    # The rows, cases and results of a batch make no reference cycles: the collector's
    # passes over them found nothing and cost ~40 % of the batch's CPU (measured).
    with gc_paused():
        return _score_batch(spec, batch)


def _score_batch(spec: BatchSpec, batch: RawBatch) -> BatchOutput:
    from assay.engine.aggregate import case_rows
    from assay.report.json_report import case_to_adk
    from assay.report.json_stream import dumps

    cases, error = batch_cases(batch, spec.mapping)
    set_id = Path(batch.file).stem
    metrics = list(spec.metrics)
    out = BatchOutput(
        batch.file, batch.start, [], Tally((m.name for m in metrics), spec.case_score_metrics)
    )
    if error is not None:
        out.error = (error.detail, error.file, error.case_id, error.path, error.expected)
    encode = encode_case if spec.store else None
    set_file = spec.eval_set_files.get(set_id)
    shapes: dict[tuple[str, ...], tuple[str, ...]] = {}
    for case in cases:
        out.case_ids.append(case.id)
        if spec.skip and (set_id, case.id, 0) in spec.skip:
            continue  # done by the run being resumed
        result = score_recorded(case, metrics, eval_set_id=set_id)
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
                out.rows.append((shapes.setdefault(shape, shape), dumps(row) + b"\n"))
        if spec.junit:
            out.junit.append(testcase_xml(result, set_id))
        if spec.keep_all or (len(out.kept) < spec.keep and result.status is not Status.PASSED):
            out.kept.append(result)
    return out


# -- in a worker process -------------------------------------------------------------

_SPEC: BatchSpec | None = None


def init_worker(spec: BatchSpec) -> None:
    """Pool initializer: keep the spec; Ctrl-C is the parent's to handle."""
    global _SPEC
    _SPEC = spec
    # What the worker inherited (modules, metrics) is never garbage: out of the
    # collector's passes.
    gc.freeze()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def score_in_worker(batch: RawBatch) -> BatchOutput:
    assert _SPEC is not None, "init_worker was not called"
    return score_batch(_SPEC, batch)
