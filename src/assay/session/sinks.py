"""Where a run's case results go: every output of each case, then the finished run.

`CaseOutputs` is the one path a finished case run takes to every output, whichever
driver ran it (`RunSession` through the engine, `session.agent_stream`): as it
completes, the session's collector, the store (durable before anyone shows it), then
the observers (progress, a viewer, the caller's); in file order, a streamed run's
reports (`StreamedReports`: the JSON report, the CSV spool, JUnit, the summary's tally).

A `RunSink` is handed the finished run once, by its `RunSession`, after the store has
marked it COMPLETED (or INTERRUPTED: only sinks with `partial` set get an interrupted
run's partial result, so a half run never lands in MLflow or ADK's eval history). The
session calls its sinks in order; each returns the lines saying what it wrote, and a
sink that writes files adds them to `FinishedRun.artifacts`, so later sinks (MLflow)
can attach the reports. The sinks of other tools live with those tools
(`assay.interop.sinks`); `ReportFiles` (JSON, JUnit, CSV, HTML) lives here.
"""

from __future__ import annotations

from array import array
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from assay.core.results import CaseResult, Status
from assay.engine.aggregate import agent_columns, case_latencies, case_rows, row_count

if TYPE_CHECKING:
    from assay.core.cases import EvalSet
    from assay.core.results import EvalResult
    from assay.engine.runner import RunObserver
    from assay.engine.tally import Tally
    from assay.metrics.base import Metric
    from assay.report.json_report import JsonReportWriter, RowSpool
    from assay.report.junit import JUnitWriter


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


@dataclass
class StreamedReports:
    """A streamed run's reports and what it counts, fed each case run in file order.

    `keep` failing case runs are kept for the outcome (every one with `keep_all`).
    `agent_run` False: recorded rows (a streamed run's resumed cases), no agent columns.
    """

    metrics: Sequence[Metric]
    run_id: str | None
    set_files: dict[str, str]
    json: JsonReportWriter | None
    spool: RowSpool | None
    junit: JUnitWriter | None
    tally: Tally
    keep: int
    keep_all: bool
    agent_run: bool = True
    agent: AgentTally = field(default_factory=AgentTally)
    kept: list[CaseResult] = field(default_factory=list)

    def write(self, case: CaseResult) -> None:
        from assay.report.json_report import case_to_adk

        self.tally.add(case)
        if self.agent_run:
            self.agent.add(case)
        set_id = case.eval_set_id or ""
        if self.json is not None:
            self.json.add_case(
                case_to_adk(case, run_id=self.run_id, eval_set_file=self.set_files.get(set_id))
            )
        if self.spool is not None:
            for row in case_rows(case, self.metrics, self.agent_run):
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


class CaseOutputs:
    """Every output of a run's finished case runs (a `RunObserver`; the module docstring).

    `recorder`: the store's (None when nothing is recorded). `observers`: told after the
    store, in order. `collected`: a list to keep every case run in (a loaded run's
    partial result after an interrupt), None to keep none (a streamed run's memory is
    bounded). `reports`: a streamed run's reports, fed by `in_order`.
    """

    def __init__(
        self,
        recorder: RunObserver | None = None,
        observers: Sequence[RunObserver] = (),
        *,
        collected: list[CaseResult] | None = None,
        reports: StreamedReports | None = None,
    ) -> None:
        self.collected = collected
        self.reports = reports
        # The recorder first: a result is stored before anyone shows it.
        self._told: tuple[RunObserver, ...] = (
            *((recorder,) if recorder is not None else ()),
            *observers,
        )
        self.written = 0
        """Case runs written to the reports (`in_order`)."""

    def on_start(self, total: int) -> None:
        """The case runs still to do (the store's writer starts)."""
        for observer in self._told:
            observer.on_start(total)

    def on_case_done(self, result: CaseResult) -> Awaitable[None] | None:
        """A case run completed: kept, stored, then shown (in completion order).

        When the recorder stores it from the writer thread (its awaitable), the others
        hear of it once it is durable, in the awaitable this returns."""
        if self.collected is not None:
            self.collected.append(result)
        for i, observer in enumerate(self._told):
            stored = observer.on_case_done(result)
            if stored is not None:
                return self._tell_when_stored(stored, result, self._told[i + 1 :])
        return None

    async def _tell_when_stored(
        self, stored: Awaitable[None], result: CaseResult, rest: Sequence[RunObserver]
    ) -> None:
        await stored
        for observer in rest:
            later = observer.on_case_done(result)
            if later is not None:
                await later

    def in_order(self, result: CaseResult) -> None:
        """A case run's turn in file order: the streamed reports and the summary."""
        if self.reports is not None:
            self.reports.write(result)
        self.written += 1

    def on_finish(self, result: EvalResult) -> None:
        """The run completed: the store marks it so, then the observers hear it."""
        for observer in self._told:
            observer.on_finish(result)


@dataclass
class FinishedRun:
    """A run as its sinks see it."""

    result: EvalResult
    evalsets: Sequence[EvalSet]
    interrupted: bool = False
    artifacts: list[Path] = field(default_factory=list)
    """Files the sinks before this one wrote (reports), in order."""


def kept_line(path: Path) -> str:
    """What an interrupted run says of a report it left as it was."""
    return f"kept {path} as it was: an interrupted run does not replace a report"


def interrupted_line(done: int, total: int, *, stored: bool) -> str:
    """What an interrupted `assay eval` kept, and how to go on."""
    if stored:
        return (
            f"interrupted: {done} of {total} case runs completed and stored; run the same"
            " command again to resume"
        )
    return (
        f"interrupted: {done} of {total} case runs completed; nothing was stored (--no-store):"
        " run the same command again to start over"
    )


class RunSink(Protocol):
    """Takes a finished run somewhere; returns one line per thing written."""

    @property
    def partial(self) -> bool:
        """Whether an interrupted run's partial result is delivered too."""
        ...

    def deliver(self, run: FinishedRun) -> list[str]: ...


@dataclass(frozen=True)
class ReportFiles:
    """The report files of a run: JSON (ADK-compatible), JUnit XML, CSV and HTML.

    Written for interrupted runs too (what completed). `eval_set_files` names each eval
    set's source file in the JSON report; `name`, `agent`, `config` and `runs` head the
    HTML report.
    """

    out: Path | None = None
    junit: Path | None = None
    csv_path: Path | None = None
    html: Path | None = None
    eval_set_files: Mapping[str, str] | None = None
    name: str | None = None
    agent: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    runs: int = 1
    partial: bool = True

    def deliver(self, run: FinishedRun) -> list[str]:
        from assay.report import write_reports
        from assay.report.atomic import keeps_earlier

        # An interrupted run's partial reports replace no report already there.
        targets = (self.out, self.junit, self.csv_path, self.html)
        kept = [p for p in targets if keeps_earlier(p, interrupted=run.interrupted)]

        def wanted(path: Path | None) -> Path | None:
            return None if path in kept else path

        written = write_reports(
            run.result,
            out=wanted(self.out),
            junit=wanted(self.junit),
            csv_path=wanted(self.csv_path),
            eval_set_ids=[e.id for e in run.evalsets],
            eval_set_files=dict(self.eval_set_files) if self.eval_set_files else None,
        )
        if wanted(self.html) is not None:
            written.append(self._write_html(run))
        run.artifacts.extend(written)
        return [f"wrote {path}" for path in written] + [kept_line(p) for p in kept if p]

    def _write_html(self, run: FinishedRun) -> Path:
        from assay.report.html import git_commit, write_html
        from assay.report.html.data import RunFacts

        facts = RunFacts(
            name=self.name,
            eval_set_ids=[e.id for e in run.evalsets],
            agent=self.agent,
            config=dict(self.config),
            runs=self.runs,
        )
        return write_html(run.result, self.html or "report.html", run=facts, commit=git_commit())
