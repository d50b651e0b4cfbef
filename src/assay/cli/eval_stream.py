"""`assay eval` over row files, streamed: the agent's runs, and what every streamed run
prints and exits with.

`cli.eval` asks `session.plan` whether a run of row files streams and runs recorded
rows itself (`session.streaming`); an agent's runs over them go through
`run_agent_streamed` (`session.agent_stream`). Both end in `report_streamed`: the case
table of a small run or the per-metric summary and first failing cases of a big one,
the lines saying what was written, and the exit code (gates included) a loaded run of
the same data would give.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rich.text import Text

from assay.cli.common import EXIT_INTERRUPTED, stderr_console, stdout_console
from assay.core.results import Status
from assay.session.sinks import interrupted_line, kept_line

if TYPE_CHECKING:
    from assay.agents.base import Agent
    from assay.engine import RunOptions
    from assay.engine.judge_options import JudgeRunOptions
    from assay.formats.stream import RowFile
    from assay.interop.sinks import SinkOptions
    from assay.metrics.base import Metric
    from assay.session.streaming import StreamOutcome
    from assay.store import Store


class StreamedRequest(Protocol):
    """What a streamed run reads of an `assay eval` invocation (`cli.eval._Request`)."""

    @property
    def agent(self) -> str | None: ...
    @property
    def options(self) -> RunOptions: ...
    @property
    def judges(self) -> JudgeRunOptions: ...
    @property
    def mapping(self) -> dict[str, str] | None: ...
    @property
    def fresh(self) -> bool: ...
    @property
    def name(self) -> str | None: ...
    @property
    def quiet(self) -> bool: ...
    @property
    def verbose(self) -> bool: ...
    @property
    def sinks(self) -> SinkOptions | None: ...
    @property
    def min_pass_rate(self) -> float | None: ...
    @property
    def min_means(self) -> dict[str, float]: ...


def run_agent_streamed(
    req: StreamedRequest,
    agent: Agent,
    files: list[RowFile],
    metrics: list[Metric],
    identity: dict[str, Any],
    *,
    db: Store | None,
    progress: Any,
    out: Path | None,
    csv_path: Path | None,
    junit: Path | None,
) -> StreamOutcome:
    """Run `agent` (loaded from `req.agent`) over `files` streamed."""
    from assay.session.agent_stream import AgentStreamingRun

    err = stderr_console()
    # What is alive now (modules, the agent, the metrics) lives until the process ends:
    # out of the collector's passes, which otherwise re-walk it while millions of
    # short-lived objects come and go (about a third of the collector's time, measured).
    gc.freeze()
    observers = []
    if req.verbose:
        from assay.report.console import TracebackPrinter

        observers.append(TracebackPrinter(err))
    return AgentStreamingRun(
        files,
        metrics,
        agent,
        identity,
        options=req.options,
        judges=req.judges,
        observers=observers,
        **stream_settings(req, db=db, progress=progress, out=out, csv_path=csv_path, junit=junit),
    ).run()


def stream_settings(
    req: StreamedRequest,
    *,
    db: Store | None,
    progress: Any,
    out: Path | None,
    csv_path: Path | None,
    junit: Path | None,
) -> dict[str, Any]:
    """The `session.streaming.StreamSettings` of an `assay eval` invocation, shared by its
    streamed runs of recorded rows and of an agent."""
    from assay.report.console import MAX_CASE_ROWS, MAX_FAILING_ROWS
    from assay.report.html import run_environment

    err = stderr_console()
    return {
        "store": db,
        "mapping": req.mapping,
        "out": out,
        "csv_path": csv_path,
        "junit_path": junit,
        "fresh": req.fresh,
        "name": req.name,
        "case_score_metrics": tuple(req.min_means),
        # The first failing cases, for the console's table of them: not with --quiet,
        # which prints only the summary line (rebuilding them costs the run pipeline).
        "keep_failing": 0 if req.quiet else MAX_FAILING_ROWS,
        "keep_all_up_to": MAX_CASE_ROWS,
        "progress": progress,
        "notify": lambda line: err.print(Text(line, style="yellow"), soft_wrap=True),
        "environment": run_environment(),
    }


def report_streamed(req: StreamedRequest, outcome: StreamOutcome, metrics: Sequence[Metric]) -> int:
    """Print a streamed run's results and return its exit code (see the module docstring)."""
    from assay.engine.aggregate import build_result
    from assay.report import render_results, summary_text
    from assay.report.console import render_streamed, tally_summary_text
    from assay.report.gates import failed_gates_of, gate_exit_code, report_gates

    err = stderr_console()
    console = stdout_console()
    result = None
    if outcome.kept_all:  # a small run: shown and gated as a loaded one
        result = build_result(outcome.kept, metrics, agent_run=req.agent is not None)
        result.run_id = outcome.run_id
    if result is not None:
        if req.quiet:
            console.print(summary_text(result))
        else:
            render_results(result, console)
    elif req.quiet:
        console.print(tally_summary_text(outcome.tally))
    else:
        render_streamed(outcome.tally, outcome.summary, outcome.kept, console)
    for path in outcome.written:
        err.print(Text(f"wrote {path}", style="dim"))
    for path in outcome.kept_reports:
        err.print(Text(kept_line(path), style="dim"), soft_wrap=True)
    done = outcome.tally.cases
    if outcome.error is not None:
        where = "stored and reported" if outcome.run_id is not None else "reported"
        err.print(
            Text(
                f"{done} rows before the malformed one were scored and {where}; fix the row"
                " and run the same command again"
                + (" to resume after them" if outcome.run_id is not None else ""),
                style="bold yellow",
            )
        )
        raise outcome.error
    if outcome.interrupted:
        stored = outcome.run_id is not None
        line = interrupted_line(done, outcome.total, stored=stored)
        err.print(Text(line, style="bold yellow"), soft_wrap=True)
        return EXIT_INTERRUPTED
    if outcome.run_id is not None and not req.quiet:
        err.print(Text(f"run {outcome.run_id} stored", style="dim"))
    raised = [c for c in outcome.kept if c.traceback is not None]
    if raised and not req.quiet and not req.verbose:
        from assay.report.console import traceback_hint

        hint = traceback_hint(outcome.run_id, raised, counted=outcome.kept_all)
        err.print(Text(hint, style="dim"), soft_wrap=True)
    if req.min_pass_rate is not None or req.min_means:
        if result is not None:
            return gate_exit_code(result, req.min_pass_rate, req.min_means, err)
        tally = outcome.tally
        failures = failed_gates_of(
            tally.statuses[Status.PASSED],
            done,
            tally.case_scores,
            sorted(m.name for m in metrics),
            min_pass_rate=req.min_pass_rate,
            min_means=req.min_means,
        )
        return report_gates(failures, err)
    return 0 if done and outcome.tally.statuses[Status.PASSED] == done else 1
