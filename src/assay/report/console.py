"""The terminal report: a per-case table, a per-metric summary for big runs, a summary line."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.metrics.efficiency import is_efficiency
from assay.model.results import CaseResult, EvalResult, MetricResult, Status

#: above this many case runs the table shows a per-metric summary and failing cases only
MAX_CASE_ROWS = 50
#: at most this many failing cases are listed in a big run (the JSON report has them all)
MAX_FAILING_ROWS = 200

STATUS_STYLE = {
    Status.PASSED: "bold green",
    Status.FAILED: "bold red",
    Status.NOT_EVALUATED: "bold yellow",
}
NO_AGENT_MARKER = "no agent given"


@dataclass(frozen=True, slots=True)
class Counts:
    passed: int
    failed: int
    not_evaluated: int

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.not_evaluated


def count_statuses(cases: Sequence[CaseResult]) -> Counts:
    return Counts(
        passed=sum(c.status is Status.PASSED for c in cases),
        failed=sum(c.status is Status.FAILED for c in cases),
        not_evaluated=sum(c.status is Status.NOT_EVALUATED for c in cases),
    )


def metric_order(result: EvalResult) -> list[str]:
    """The run's metrics in request order, then any others the cases carry."""
    names: dict[str, None] = dict.fromkeys(result.metrics)
    for case in result.cases:
        for name in case.metrics:
            names.setdefault(name, None)
    return list(names)


def run_count(result: EvalResult) -> int:
    return 1 + max((c.run_index for c in result.cases), default=0)


def pass_at_k(result: EvalResult) -> tuple[int, float, float] | None:
    """(k, pass@k, pass^k) over the distinct cases of a repeated run, else None.

    pass@k: share of cases with at least one passing run; pass^k: share where all
    runs passed.
    """
    k = run_count(result)
    if k < 2 or not result.cases:
        return None
    groups: dict[tuple[str, str], list[bool]] = {}
    for case in result.cases:
        groups.setdefault((case.eval_set_id or "", case.case_id), []).append(
            case.status is Status.PASSED
        )
    n = len(groups)
    any_pass = sum(any(v) for v in groups.values()) / n
    all_pass = sum(all(v) for v in groups.values()) / n
    return k, any_pass, all_pass


def _num(value: float | None) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:.2f}"


def metric_cell(metric: MetricResult | None) -> Text:
    """`score / threshold`, coloured by the metric's status."""
    if metric is None:
        return Text("")
    if metric.status is None:
        return Text(_num(metric.score), style="dim")
    if metric.score is None:
        return Text("n/a", style=STATUS_STYLE[Status.NOT_EVALUATED])
    text = _num(metric.score)
    if metric.threshold is not None:
        text += f" / {_num(metric.threshold)}"
    return Text(text, style=STATUS_STYLE[metric.status].replace("bold ", ""))


def case_note(case: CaseResult) -> str:
    """A short reason for a case that did not pass on scores alone."""
    if case.error:
        return case.error
    if case.status is Status.NOT_EVALUATED:
        reasons = {
            m.explanation
            for m in case.metrics.values()
            if m.status is Status.NOT_EVALUATED and m.explanation
        }
        return "; ".join(sorted(reasons))
    return ""


def shared_note(cases: Sequence[CaseResult]) -> str | None:
    """The note every case has, when they all have the same one (printed once)."""
    notes = {case_note(c) for c in cases}
    if len(cases) > 1 and len(notes) == 1:
        only = notes.pop()
        return only or None
    return None


def case_table(
    cases: Sequence[CaseResult],
    metrics: Sequence[str],
    *,
    runs: int,
    title: str | None = None,
    show_notes: bool = True,
    compact: bool = False,
) -> Table:
    """One row per case run; `compact` lists failed metrics instead of a column each."""
    multi_set = len({c.eval_set_id for c in cases}) > 1
    notes = [case_note(c) if show_notes else "" for c in cases]
    table = Table(title=title, show_lines=False, header_style="bold")
    if multi_set:
        table.add_column("eval set", overflow="fold")
    longest = max((len(c.case_id) for c in cases), default=4)
    # Compact tables (narrow terminals) let the case id fold rather than crowd the rest.
    table.add_column("case", overflow="fold", min_width=None if compact else min(longest, 30))
    if runs > 1:
        table.add_column("run", justify="right")
    table.add_column("status", no_wrap=True)
    for name in metrics:
        table.add_column(name, justify="right", overflow="fold")
    if compact:
        table.add_column("failed metrics", overflow="fold", ratio=1)
    if any(notes):
        table.add_column("note", overflow="fold", max_width=60, ratio=1)
    for case, note in zip(cases, notes, strict=True):
        cells: list[str | Text] = []
        if multi_set:
            cells.append(case.eval_set_id or "")
        cells.append(case.case_id)
        if runs > 1:
            cells.append(str(case.run_index + 1))
        cells.append(Text(case.status.value, style=STATUS_STYLE[case.status]))
        cells.extend(metric_cell(case.metrics.get(name)) for name in metrics)
        if compact:
            failed = [
                f"{m.name} {_num(m.score)}"
                for m in case.metrics.values()
                if m.status is Status.FAILED
            ]
            cells.append(Text(", ".join(failed), style="red"))
        if any(notes):
            cells.append(Text(note, style="dim"))
        table.add_row(*cells)
    return table


def metric_summary_table(result: EvalResult, metrics: Sequence[str]) -> Table:
    """Per metric: threshold, mean and standard deviation, and status counts."""
    table = Table(title="Metrics", header_style="bold")
    for column in ("metric", "threshold", "mean", "std", "passed", "failed", "not eval."):
        if column == "metric":
            table.add_column(column, overflow="fold", ratio=1)
        else:
            table.add_column(column, justify="right", overflow="fold")
    for name in metrics:
        results = [c.metrics[name] for c in result.cases if name in c.metrics]
        scores = [m.score for m in results if m.score is not None]
        mean = result.summary.get(f"{name}/mean")
        if mean is None and scores:
            mean = sum(scores) / len(scores)
        thresholds = {m.threshold for m in results}
        threshold = thresholds.pop() if len(thresholds) == 1 else None
        table.add_row(
            name,
            _num(threshold),
            _num(mean),
            _num(result.summary.get(f"{name}/std")),
            Text(str(sum(m.status is Status.PASSED for m in results)), style="green"),
            Text(str(sum(m.status is Status.FAILED for m in results)), style="red"),
            Text(str(sum(m.status is Status.NOT_EVALUATED for m in results)), style="yellow"),
        )
    return table


def summary_text(result: EvalResult) -> Text:
    """`3 passed, 1 failed, 0 not evaluated (4 case runs)` plus pass@k when repeated."""
    counts = count_statuses(result.cases)
    text = Text("Result: ", style="bold")
    text.append(f"{counts.passed} passed", style="green")
    text.append(", ")
    text.append(f"{counts.failed} failed", style="red" if counts.failed else "")
    text.append(", ")
    text.append(
        f"{counts.not_evaluated} not evaluated", style="yellow" if counts.not_evaluated else ""
    )
    noun = "case run" if run_count(result) > 1 else "case"
    text.append(f" ({counts.total} {noun}{'s' if counts.total != 1 else ''})")
    repeated = pass_at_k(result)
    if repeated is not None:
        k, at_k, all_k = repeated
        text.append(f"; pass@{k} {at_k:.2f}, pass^{k} {all_k:.2f}", style="bold")
    return text


def needs_agent_hint(result: EvalResult) -> bool:
    """True when cases were skipped because no agent ran and they had no recorded turns."""
    return any(NO_AGENT_MARKER in case_note(c) for c in result.cases)


def table_width(cases: Sequence[CaseResult], metrics: Sequence[str], runs: int) -> int:
    """About how many columns the full case table needs (borders and padding included)."""
    widths = [max((len(c.case_id) for c in cases), default=4), len("NOT_EVALUATED")]
    if len({c.eval_set_id for c in cases}) > 1:
        widths.append(max(len(c.eval_set_id or "") for c in cases))
    if runs > 1:
        widths.append(3)
    widths.extend(max(len(name), len("0.00 / 0.00")) for name in metrics)
    return sum(w + 3 for w in widths) + 1


def render_results(
    result: EvalResult, console: Console, *, max_case_rows: int = MAX_CASE_ROWS
) -> None:
    """Print the case table (or metric summary + failing cases), reasons and summary line.

    When the metric columns do not fit the console's width they move into a per-metric
    summary, and the case table keeps the status and the failed metrics (never cropped).
    """
    # ADK's efficiency metrics come with every ADK-config eval: one line, not four columns.
    efficiency = [m for m in metric_order(result) if is_efficiency(m)]
    metrics = [m for m in metric_order(result) if not is_efficiency(m)]
    runs = run_count(result)
    cases = result.cases
    note = shared_note(cases)
    fits = table_width(cases, metrics, runs) <= console.width
    shown_metrics = metrics if fits else []
    if len(cases) <= max_case_rows:
        if not fits:
            console.print(metric_summary_table(result, metrics))
        console.print(
            case_table(cases, shown_metrics, runs=runs, show_notes=note is None, compact=not fits)
        )
    else:
        console.print(metric_summary_table(result, metrics))
        failing = [c for c in cases if c.status is not Status.PASSED]
        shown = failing[:MAX_FAILING_ROWS]
        if shown:
            console.print(
                case_table(shown, shown_metrics, runs=runs, title="Cases that did not pass",
                           show_notes=note is None, compact=not fits)
            )  # fmt: skip
        note = f"{len(cases)} case runs: passing cases are not listed"
        if len(failing) > len(shown):
            note += f", and only the first {MAX_FAILING_ROWS} of {len(failing)} others"
        console.print(Text(f"{note}; write every case with --out results.json", style="dim"))
    if note is not None:
        console.print(Text(f"note (every case): {note}", style="dim"), soft_wrap=True)
    if efficiency:
        console.print(efficiency_line(result, efficiency), soft_wrap=True)
    render_reasons(result.cases, console)
    console.print(summary_text(result))
    if needs_agent_hint(result):
        console.print(
            Text(
                "Hint: some cases have no recorded response and no agent ran; pass "
                "--agent module:attr to run one, or give data with recorded responses.",
                style="yellow",
            )
        )


_EFFICIENCY_LABELS = {
    "tool_call_count_v1": ("tool calls", ""),
    "inference_call_count_v1": ("model calls", ""),
    "token_usage_v1": ("tokens", ""),
    "invocation_duration_v1": ("duration", " s"),
}


def efficiency_line(result: EvalResult, names: Sequence[str]) -> Text:
    """`Efficiency per invocation: tool calls 1.2 · model calls n/a · …` (case means averaged)."""
    parts = []
    for name in names:
        label, unit = _EFFICIENCY_LABELS.get(name, (name, ""))
        scores = [
            score
            for c in result.cases
            if name in c.metrics and (score := c.metrics[name].score) is not None
        ]
        value = f"{sum(scores) / len(scores):,.2f}{unit}" if scores else "n/a"
        parts.append(f"{label} {value}")
    return Text("Efficiency per invocation (informational): " + " · ".join(parts), style="dim")


def render_reasons(
    cases: Sequence[CaseResult], console: Console, *, limit: int = MAX_FAILING_ROWS
) -> None:
    """One line per failed case run with its reason from the failure analysis."""
    from assay.report.analysis import analyze

    analysis = analyze(c for c in cases if c.status is Status.FAILED or c.failure)
    if not analysis.cases:
        return
    runs = 1 + max((c.run_index for c in cases), default=0)
    console.print(Text("Why cases failed", style="bold"))
    for found in analysis.cases[:limit]:
        name = found.case_id + (f" [run {found.run_index + 1}]" if runs > 1 else "")
        line = Text(f"  {name}: ", style="bold red")
        line.append(found.reason(), style="")
        console.print(line, soft_wrap=True)
    if len(analysis.cases) > limit:
        console.print(Text(f"  … and {len(analysis.cases) - limit} more", style="dim"))
    console.print(Text(f"Failure causes: {analysis.headline()}", style="dim"), soft_wrap=True)


def runs_table(infos: Sequence[Any]) -> Table:
    """Stored runs (`assay.store.RunInfo`), one row each; ids are never cut."""
    table = Table(title="Runs", header_style="bold")
    columns = ("id", "name", "created", "status", "eval sets", "agent", "cases", "passed",
               "failed", "not evaluated")  # fmt: skip
    for column in columns:
        if column == "id":
            # A run is named by its id in every other command: always print it whole.
            table.add_column(column, no_wrap=True, min_width=16)
        else:
            right = columns.index(column) >= 6
            table.add_column(column, justify="right" if right else "left", overflow="fold")
    for info in infos:
        table.add_row(
            info.id,
            info.name or "",
            str(info.created_at)[:19],
            info.status,
            ", ".join(info.eval_set_ids),
            info.agent or "",
            str(info.case_count),
            Text(str(info.passed), style="green"),
            Text(str(info.failed), style="red" if info.failed else ""),
            Text(str(info.not_evaluated), style="yellow" if info.not_evaluated else ""),
        )
    return table
