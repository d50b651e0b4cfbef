"""Where a finished run goes besides the store: report files, other tools' logs.

A `RunSink` is handed the finished run once, by its `RunSession`, after the store has
marked it COMPLETED (or INTERRUPTED: only sinks with `partial` set get an interrupted
run's partial result, so a half run never lands in MLflow or ADK's eval history). The
session calls its sinks in order; each returns the lines saying what it wrote, and a
sink that writes files adds them to `FinishedRun.artifacts`, so later sinks (MLflow)
can attach the reports. The sinks of other tools live with those tools
(`assay.interop.sinks`); `ReportFiles` (JSON, JUnit, CSV, HTML) lives here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from assay.model.core import EvalSet
    from assay.model.results import EvalResult


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
