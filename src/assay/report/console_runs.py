"""Terminal views of stored runs: a run's header (`assay runs show`) and a comparison."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from assay.model.results import Status
from assay.report.compare import CaseDelta, Change, Comparison, MetricDelta

#: changed cases listed at most (`--json` has them all); unchanged ones are only counted
MAX_COMPARE_ROWS = 100

_CHANGE_STYLE = {
    Change.REGRESSED: "bold red",
    Change.WORSE: "red",
    Change.MIXED: "yellow",
    Change.CHANGED: "yellow",
    Change.UNSTABLE: "magenta",
    Change.IMPROVED: "bold green",
    Change.BETTER: "green",
    Change.UNCHANGED: "dim",
}
_STATUS_STYLE = {Status.PASSED: "green", Status.FAILED: "red", Status.NOT_EVALUATED: "yellow"}


def _num(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.3f}"


def run_header(info: Any) -> Table:
    """Key facts of a stored run (`assay.store.RunInfo`) as a two-column grid."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    criteria = info.config.get("criteria", {}) if isinstance(info.config, dict) else {}
    rows = [
        ("run", info.id + (f"  ({info.name})" if info.name else "")),
        ("status", info.status + (f": {info.error}" if info.error else "")),
        ("created", str(info.created_at)[:19]),
        ("finished", str(info.finished_at)[:19] if info.finished_at else "-"),
        ("eval sets", ", ".join(info.eval_set_ids)),
        ("agent", info.agent or "- (recorded responses)"),
        ("metrics", ", ".join(_criterion(n, criteria.get(n)) for n in info.metrics)),
        ("runs per case", str(info.runs)),
        (
            "case runs",
            f"{info.case_count} stored ({info.passed} passed, {info.failed} failed, "
            f"{info.not_evaluated} not evaluated)",
        ),
    ]
    for key, value in rows:
        grid.add_row(key, Text(value))  # the user's names and ids, never rich markup
    return grid


def _criterion(name: str, criterion: object) -> str:
    if isinstance(criterion, int | float) and not isinstance(criterion, bool):
        return f"{name} ≥ {criterion:g}"
    if isinstance(criterion, dict) and isinstance(criterion.get("threshold"), int | float):
        return f"{name} ≥ {criterion['threshold']:g}"
    return name


#: below this many columns the narrow layouts apply (low-value columns dropped)
WIDE = 100


def _delta(value: float | None) -> str:
    """A signed delta for people: 0 for no change (never -0.00), else 3 decimals, or two
    significant digits where 3 decimals would round it to zero."""
    if value is None or not math.isfinite(value):
        return "-"
    if value == 0:
        return "0"
    shown = f"{value:+.3f}"
    return shown if float(shown) != 0 else f"{value:+.2g}"


def _verdict(m: MetricDelta) -> Text:
    style = {"regressed": "bold red", "improved": "bold green"}.get(m.verdict, "dim")
    return Text(m.verdict, style=style)


def metric_delta_table(comparison: Comparison, *, width: int = 120) -> Table:
    """Metric means of both runs, the delta, its 95% interval and the verdict; at fewer
    than `WIDE` columns the paired-case count and direction columns are dropped."""
    wide = width >= WIDE
    table = Table(
        title="Metric means",
        header_style="bold",
        box=box.SIMPLE_HEAD,
        title_justify="left",
        show_edge=False,
        padding=(0, 1 if wide else 0, 0, 0),
    )
    longest = max((len(m.name) for m in comparison.metrics), default=6)
    # The numbers take up to ~48 columns; the name gets the rest before it folds.
    table.add_column("metric", overflow="fold", min_width=max(6, min(longest, width - 48)))
    for column in ("base", "other", "delta", "95% interval"):
        table.add_column(column, justify="right", no_wrap=True)
    if wide:
        table.add_column("cases", justify="right", no_wrap=True)
        table.add_column("better", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for m in comparison.metrics:
        interval = "-" if m.ci_low is None else f"[{_delta(m.ci_low)}, {_delta(m.ci_high)}]"
        row: list[str | Text] = [Text(m.name), _num(m.base_mean), _num(m.other_mean),
                                 _delta(m.delta), interval]  # fmt: skip
        if wide:
            row += [str(m.paired), m.direction]
        table.add_row(*row, _verdict(m))
    return table


def _case_details(case: CaseDelta) -> Text | None:
    """What goes under a case's row: the gating metrics that moved, and why the other
    run did not pass."""
    lines = []
    moved = [f"{name} {_delta(case.deltas[name])}" for name in (*case.worse, *case.better)]
    if moved:
        lines.append(Text(", ".join(moved)))
    if case.other.reason and case.other.status is not Status.PASSED:
        lines.append(Text("why: " + case.other.reason, style="dim"))
    return Text("\n").join(lines) if lines else None


def _case_row(cells: Sequence[Text | str], status_width: int) -> Table:
    grid = Table.grid(padding=(0, 1, 0, 0), expand=True)
    grid.add_column(ratio=1, overflow="fold")
    grid.add_column(width=9, no_wrap=True)
    grid.add_column(width=status_width, no_wrap=True)
    grid.add_column(width=status_width, no_wrap=True)
    grid.add_row(*cells)
    return grid


def render_changed_cases(
    comparison: Comparison, console: Console, *, max_rows: int = MAX_COMPARE_ROWS
) -> None:
    """Changed cases, regressions first: one row each (case, change, both statuses), and
    under it, indented and wrapped at the terminal's width, what moved and why."""
    changed = comparison.changed[:max_rows]
    if not changed:
        return
    status_width = max(len(s.value) for c in changed for s in (c.base.status, c.other.status))
    console.print(Text("Changed cases", style="bold"))
    header = [Text(h, style="bold") for h in ("case", "change", "base", "other")]
    console.print(_case_row(header, status_width))
    for case in changed:
        console.print(
            _case_row(
                [
                    Text(case.key, style="bold"),
                    Text(case.change.value, style=_CHANGE_STYLE[case.change]),
                    Text(case.base.status.value, style=_STATUS_STYLE[case.base.status]),
                    Text(case.other.status.value, style=_STATUS_STYLE[case.other.status]),
                ],
                status_width,
            )
        )
        details = _case_details(case)
        if details is not None:
            console.print(Padding(details, (0, 0, 0, 4)))


def _run_label(run_id: str | None, name: str | None, fallback: str) -> str:
    label = run_id or fallback
    return f"{label} ({name})" if name else label


def render_comparison(
    comparison: Comparison, console: Console, *, labels: Sequence[str] | None = None
) -> None:
    """Print one comparison: metric deltas, changed cases (regressions first), a verdict."""
    base, other = labels or (
        _run_label(comparison.base_id, comparison.base_name, "base"),
        _run_label(comparison.other_id, comparison.other_name, "other"),
    )
    head = Text("Run ", style="bold")
    head.append(other, style="bold cyan")
    head.append(" against base ", style="bold")
    head.append(base, style="bold cyan")
    console.print(head)
    console.print(metric_delta_table(comparison, width=console.width))
    changed = comparison.changed
    if changed:
        render_changed_cases(comparison, console)
        if len(changed) > MAX_COMPARE_ROWS:
            console.print(
                Text(f"… {len(changed) - MAX_COMPARE_ROWS} more changed cases (--json has all)",
                     style="dim")
            )  # fmt: skip
    counts = comparison.counts()
    shown = ", ".join(f"{n} {change}" for change, n in counts.items() if n)
    console.print(Text(f"Cases: {shown or 'none in common'}", style="dim"))
    for label, missing in (
        (f"only in {base}", comparison.only_in_base),
        (f"only in {other}", comparison.only_in_other),
    ):
        if missing:
            console.print(Text(f"{len(missing)} cases {label}:", style="dim"))
            console.print(refusal_list([f"{s}/{c}" if s else c for s, c in missing]))
    verdict = Text("Regression: " if comparison.has_regression else "No regression: ",
                   style="bold red" if comparison.has_regression else "bold green")  # fmt: skip
    verdict.append(comparison.summary(), style="")
    console.print(verdict)


#: a long list (cases refused, cases only in one run) shows at most this many items
MAX_LISTED = 20


def refusal_list(items: Sequence[str], *, limit: int = MAX_LISTED, indent: int = 2) -> Text:
    """Items one per line, at most `limit` of them, then "and N more"."""
    pad = " " * indent
    lines = [pad + item for item in items[:limit]]
    if len(items) > limit:
        lines.append(f"{pad}and {len(items) - limit} more")
    return Text("\n".join(lines))
