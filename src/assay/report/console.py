"""The terminal report of `assay eval`: a per-case table, a per-metric summary for big
runs, a summary line; the same pieces for a streamed run, counted by its `Tally`; and
the live traceback lines of `assay eval -v`. Stored runs (`assay runs`, `assay report
--compare`) are shown by `console_runs`."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from assay.core.results import CaseResult, EvalResult, MetricResult, Status
from assay.metrics.efficiency import is_efficiency
from assay.metrics.sample_split import is_unstable

if TYPE_CHECKING:
    from assay.engine.tally import Tally

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
#: after a score: the judge's samples of this item straddle the metric's threshold
UNSTABLE_MARK = "~"


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


def by_case(cases: Sequence[CaseResult]) -> list[CaseResult]:
    """The case runs grouped by case (in the order of their first runs), each case's runs
    in run order: a repeated run lists a case's runs together, not in completion order."""
    order: dict[tuple[str, str], int] = {}
    for case in sorted(cases, key=lambda c: c.run_index):
        order.setdefault((case.eval_set_id or "", case.case_id), len(order))
    return sorted(cases, key=lambda c: (order[(c.eval_set_id or "", c.case_id)], c.run_index))


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
    cell = Text(text, style=STATUS_STYLE[metric.status].replace("bold ", ""))
    if is_unstable(metric.details):
        cell.append(f" {UNSTABLE_MARK}", style="bold magenta")
    return cell


def unstable_line(result: EvalResult) -> Text | None:
    """`~ unstable: 3 judged items ...` when some judged item's samples straddled its
    metric's threshold (the summary's `judge/unstable/...` keys), else None."""
    total = result.summary.get("judge/unstable")
    if not total:
        return None
    prefix = "judge/unstable/"
    per = [
        f"{key[len(prefix) :]} {n}"
        for key, n in sorted(result.summary.items())
        if key.startswith(prefix) and n
    ]
    return Text(
        f"{UNSTABLE_MARK} unstable: {total} judged item{'' if total == 1 else 's'} whose judge"
        f" samples straddle the threshold ({', '.join(per)}); another draw may flip them",
        style="magenta",
    )


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
    previous: tuple[str | None, str] | None = None
    for case, note in zip(cases, notes, strict=True):
        cells: list[str | Text] = []
        # A case's further runs follow its first (`by_case`): its name is printed once.
        repeat = runs > 1 and previous == (case.eval_set_id, case.case_id)
        previous = (case.eval_set_id, case.case_id)
        # Ids are the user's text, never rich markup (`[/x]` in an id is printed as is).
        if multi_set:
            cells.append(Text("" if repeat else case.eval_set_id or ""))
        cells.append(Text("" if repeat else case.case_id))
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


def metric_summary_table(result: EvalResult, metrics: Sequence[str], *, width: int = 120) -> Table:
    """Per metric: threshold, mean and standard deviation, and status counts."""
    table = metric_summary_frame(metrics, width)
    for name in metrics:
        results = [c.metrics[name] for c in result.cases if name in c.metrics]
        scores = [m.score for m in results if m.score is not None]
        mean = result.summary.get(f"{name}/mean")
        if mean is None and scores:
            mean = sum(scores) / len(scores)
        thresholds = {m.threshold for m in results}
        counts = Counts(
            passed=sum(m.status is Status.PASSED for m in results),
            failed=sum(m.status is Status.FAILED for m in results),
            not_evaluated=sum(m.status is Status.NOT_EVALUATED for m in results),
        )
        add_metric_row(table, name, thresholds, mean, result.summary.get(f"{name}/std"), counts)
    return table


def add_metric_row(
    table: Table,
    name: str,
    thresholds: Collection[float | None],
    mean: float | None,
    std: float | None,
    counts: Counts,
) -> None:
    """One metric's row of the per-metric summary (a threshold shown when only one)."""
    table.add_row(
        Text(name),
        _num(next(iter(thresholds)) if len(thresholds) == 1 else None),
        _num(mean),
        _num(std),
        Text(str(counts.passed), style="green"),
        Text(str(counts.failed), style="red"),
        Text(str(counts.not_evaluated), style="yellow"),
    )


def metric_summary_frame(metrics: Sequence[str], width: int) -> Table:
    """The per-metric summary's table, no rows yet: below 100 columns its headers are
    short (`min`, `pass`, `fail`, `n.e.`), so metric names stay whole at 80 columns."""
    table = Table(title="Metrics", header_style="bold")
    longest = max((len(name) for name in metrics), default=6)
    narrow = width < 100
    columns = (
        ("metric", "min", "mean", "std", "pass", "fail", "n.e.")
        if narrow
        else ("metric", "threshold", "mean", "std", "passed", "failed", "not eval.")
    )
    for column in columns:
        if column == "metric":
            # The numbers take ~46 (narrow) or ~60 columns: a name folds only past that.
            room = width - (46 if narrow else 60)
            table.add_column(column, overflow="fold", min_width=max(6, min(longest, room)))
        else:
            table.add_column(column, justify="right", no_wrap=True)
    return table


def stack_notes(cases: Sequence[CaseResult]) -> bool:
    """True when a case's note is too long for a column: the notes go under the table."""
    return any(len(case_note(c)) > NOTE_COLUMN for c in cases)


def result_line(counts: Counts, noun: str = "case") -> Text:
    """`Result: 3 passed, 1 failed, 0 not evaluated (4 cases)`, `noun` counting them."""
    text = Text("Result: ", style="bold")
    text.append(f"{counts.passed} passed", style="green")
    text.append(", ")
    text.append(f"{counts.failed} failed", style="red" if counts.failed else "")
    text.append(", ")
    text.append(
        f"{counts.not_evaluated} not evaluated", style="yellow" if counts.not_evaluated else ""
    )
    text.append(f" ({counts.total} {noun}{'s' if counts.total != 1 else ''})")
    return text


def summary_text(result: EvalResult) -> Text:
    """`3 passed, 1 failed, 0 not evaluated (4 case runs)` plus pass@k when repeated."""
    text = result_line(
        count_statuses(result.cases), "case run" if run_count(result) > 1 else "case"
    )
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
    cases = by_case(result.cases) if runs > 1 else result.cases
    note = shared_note(cases)
    # Notes longer than a column can show go under the table, once per distinct note.
    stacked = note is None and stack_notes(cases)
    fits = table_width(cases, metrics, runs) <= console.width
    shown_metrics = metrics if fits else []
    if len(cases) <= max_case_rows:
        if not fits:
            console.print(metric_summary_table(result, metrics, width=console.width))
        console.print(
            case_table(cases, shown_metrics, runs=runs, show_notes=note is None and not stacked,
                       compact=not fits)
        )  # fmt: skip
        if stacked:
            render_notes(cases, console)
    else:
        console.print(metric_summary_table(result, metrics, width=console.width))
        failing = [c for c in cases if c.status is not Status.PASSED]
        shown = failing[:MAX_FAILING_ROWS]
        if shown:
            console.print(
                case_table(shown, shown_metrics, runs=runs, title="Cases that did not pass",
                           show_notes=note is None and not stacked, compact=not fits)
            )  # fmt: skip
            if stacked:
                render_notes(shown, console)
        note = f"{len(cases)} case runs: passing cases are not listed"
        if len(failing) > len(shown):
            note += f", and only the first {MAX_FAILING_ROWS} of {len(failing)} others"
        console.print(Text(f"{note}; write every case with --out results.json", style="dim"))
    if note is not None:
        console.print(Text(f"note (every case): {note}", style="dim"))
    if efficiency:
        console.print(efficiency_line(result, efficiency))
    unstable = unstable_line(result)
    if unstable is not None:
        console.print(unstable)
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


#: a note longer than this is not squeezed into a column: it goes under the table
NOTE_COLUMN = 40
#: cases named per stacked note
NOTE_CASES = 5


def render_notes(cases: Sequence[CaseResult], console: Console) -> None:
    """Each distinct note once, after the cases it belongs to (the first `NOTE_CASES`,
    then how many more), indented under them and wrapped at the terminal's width."""
    groups: dict[str, list[str]] = {}
    for case in cases:
        note = case_note(case)
        if note:
            names = groups.setdefault(note, [])
            if case.case_id not in names:
                names.append(case.case_id)
    if not groups:
        return
    console.print(Text("Notes", style="bold"))
    for note, names in groups.items():
        more = f" and {len(names) - NOTE_CASES} more" if len(names) > NOTE_CASES else ""
        console.print(Padding(Text(f"{', '.join(names[:NOTE_CASES])}{more}:", style="bold"),
                              (0, 0, 0, 2)))  # fmt: skip
        console.print(Padding(Text(note, style="dim"), (0, 0, 0, 4)))


def render_reasons(
    cases: Sequence[CaseResult], console: Console, *, limit: int = MAX_FAILING_ROWS
) -> None:
    """Why cases failed: one entry per case, its runs grouped (`[runs 1, 3]`) when they
    failed for the same reason, so a repeated run does not repeat a line; a line longer
    than the terminal puts the reason under the case, indented, instead of wrapping it."""
    from assay.report.analysis import analyze

    analysis = analyze(c for c in by_case(cases) if c.status is Status.FAILED or c.failure)
    if not analysis.cases:
        return
    runs = 1 + max((c.run_index for c in cases), default=0)
    grouped: dict[str, dict[str, list[int]]] = {}
    for found in analysis.cases:
        reasons = grouped.setdefault(found.case_id, {})
        reasons.setdefault(found.reason(), []).append(found.run_index + 1)
    entries = [
        (case_id, reason, run_numbers)
        for case_id, reasons in grouped.items()
        for reason, run_numbers in reasons.items()
    ]
    console.print(Text("Why cases failed", style="bold"))
    for case_id, reason, run_numbers in entries[:limit]:
        name = case_id + (f" {_runs_label(run_numbers, runs)}" if runs > 1 else "")
        line = Text(f"  {name}: ", style="bold red")
        if len(line) + len(reason) <= console.width:
            line.append(reason, style="")
            console.print(line)
        else:
            console.print(line)
            console.print(Padding(Text(reason), (0, 0, 0, 4)))
    if len(entries) > limit:
        console.print(Text(f"  … and {len(entries) - limit} more", style="dim"))
    console.print(Text(f"Failure causes: {analysis.headline()}", style="dim"))


def _runs_label(run_numbers: Sequence[int], runs: int) -> str:
    if len(run_numbers) == runs:
        return f"[all {runs} runs]"
    if len(run_numbers) == 1:
        return f"[run {run_numbers[0]}]"
    return f"[runs {', '.join(str(n) for n in run_numbers)}]"


# A streamed run: the same pieces, counted by the run's `Tally` (no per-case results kept).


def tally_summary_text(tally: Tally) -> Text:
    """`3 passed, 1 failed, 0 not evaluated (4 cases)`, as `summary_text` words it."""
    statuses = tally.statuses
    counts = Counts(
        statuses[Status.PASSED], statuses[Status.FAILED], statuses[Status.NOT_EVALUATED]
    )
    return result_line(counts)


def tally_metric_table(tally: Tally, summary: dict[str, Any], *, width: int = 120) -> Table:
    """Per metric: threshold, mean and standard deviation, and status counts."""
    names = [n for n in tally.names if not is_efficiency(n)]
    table = metric_summary_frame(names, width)
    for name in names:
        statuses = tally.metric_statuses[name]
        counts = Counts(
            statuses[Status.PASSED], statuses[Status.FAILED], statuses[Status.NOT_EVALUATED]
        )
        mean, std = summary.get(f"{name}/mean"), summary.get(f"{name}/std")
        add_metric_row(table, name, tally.thresholds[name], mean, std, counts)
    return table


def render_streamed(
    tally: Tally, summary: dict[str, object], failing: Sequence[CaseResult], console: Console
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


# `assay eval -v`: each traceback as its case run finishes.


def traceback_hint(run_id: str | None, raised: Sequence[CaseResult], counted: bool) -> str:
    """The line saying where the tracebacks of the agent's exceptions are (`raised`: case
    runs with one; `counted`: they are all of them, so their number is told)."""
    said = f"the agent raised in {len(raised)} case run(s): " if counted else "the agent raised: "
    if run_id is not None:
        shown = f"assay runs show {run_id} --case {raised[0].case_id}"
        return said + f"`{shown}` prints its traceback; -v prints each as it happens"
    return said + "-v prints each traceback as it happens (--out keeps them too)"


class TracebackPrinter:
    """A run observer (`assay eval -v`): each case run whose agent raised, printed as
    it finishes with its traceback."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def on_start(self, total: int) -> None:
        pass

    def on_case_done(self, result: CaseResult) -> None:
        if result.traceback is None:
            return
        where = f"{result.eval_set_id}/" if result.eval_set_id else ""
        self.console.print(
            Text(
                f"case {where}{result.case_id} (run {result.run_index + 1}): {result.error}",
                style="red",
            ),
            soft_wrap=True,
        )
        self.console.print(Text(result.traceback.rstrip("\n")), soft_wrap=True, highlight=False)

    def on_finish(self, result: object) -> None:
        pass
