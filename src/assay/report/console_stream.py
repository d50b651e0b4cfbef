"""The terminal report of a streamed run, from its tally (no per-case results kept).

The same pieces as `render_results` for a big run: the per-metric summary, the first
failing cases, the summary line — counted by the run's `Tally` instead of from cases.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.engine.tally import Tally
from assay.metrics.efficiency import is_efficiency
from assay.model.results import CaseResult, Status
from assay.report.console import (
    MAX_FAILING_ROWS,
    _num,
    case_table,
    metric_summary_frame,
    render_notes,
    stack_notes,
    table_width,
)


def tally_summary_text(tally: Tally) -> Text:
    """`3 passed, 1 failed, 0 not evaluated (4 cases)`, as `summary_text` words it."""
    passed, failed = tally.statuses[Status.PASSED], tally.statuses[Status.FAILED]
    not_evaluated = tally.statuses[Status.NOT_EVALUATED]
    text = Text("Result: ", style="bold")
    text.append(f"{passed} passed", style="green")
    text.append(", ")
    text.append(f"{failed} failed", style="red" if failed else "")
    text.append(", ")
    text.append(f"{not_evaluated} not evaluated", style="yellow" if not_evaluated else "")
    total = tally.cases
    text.append(f" ({total} case{'s' if total != 1 else ''})")
    return text


def tally_metric_table(tally: Tally, summary: dict[str, Any], *, width: int = 120) -> Table:
    """Per metric: threshold, mean and standard deviation, and status counts."""
    names = [n for n in tally.names if not is_efficiency(n)]
    table = metric_summary_frame(names, width)
    for name in tally.names:
        if is_efficiency(name):
            continue
        thresholds = tally.thresholds[name]
        counts = tally.metric_statuses[name]
        table.add_row(
            Text(name),
            _num(next(iter(thresholds)) if len(thresholds) == 1 else None),
            _num(summary.get(f"{name}/mean")),
            _num(summary.get(f"{name}/std")),
            Text(str(counts[Status.PASSED]), style="green"),
            Text(str(counts[Status.FAILED]), style="red"),
            Text(str(counts[Status.NOT_EVALUATED]), style="yellow"),
        )
    return table


def render_streamed(
    tally: Tally, summary: dict[str, Any], failing: Sequence[CaseResult], console: Console
) -> None:
    """Print the metric summary, the first failing cases and the summary line."""
    console.print(tally_metric_table(tally, summary, width=console.width))
    metrics = [n for n in tally.names if not is_efficiency(n)]
    fits = table_width(failing, metrics, 1) <= console.width
    if failing:
        stacked = stack_notes(failing)
        console.print(
            case_table(failing, metrics if fits else [], runs=1, title="Cases that did not pass",
                       compact=not fits, show_notes=not stacked)
        )  # fmt: skip
        if stacked:
            render_notes(failing, console)
    not_passing = tally.cases - tally.statuses[Status.PASSED]
    note = f"{tally.cases} case runs: passing cases are not listed"
    if not_passing > len(failing):
        note += f", and only the first {len(failing)} of {not_passing} others"
    console.print(Text(f"{note}; write every case with --out results.json", style="dim"))
    console.print(tally_summary_text(tally))


__all__ = ["MAX_FAILING_ROWS", "render_streamed", "tally_metric_table", "tally_summary_text"]
