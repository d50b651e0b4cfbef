"""Terminal views of stored runs: a run's header (`assay runs show`) and a comparison."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.model.results import Status
from assay.report.compare import Change, Comparison

#: unchanged cases are counted, not listed, beyond this many rows
MAX_COMPARE_ROWS = 100

_CHANGE_STYLE = {
    Change.REGRESSED: "bold red",
    Change.WORSE: "red",
    Change.MIXED: "yellow",
    Change.CHANGED: "yellow",
    Change.IMPROVED: "bold green",
    Change.BETTER: "green",
    Change.SAME: "dim",
}
_STATUS_STYLE = {Status.PASSED: "green", Status.FAILED: "red", Status.NOT_EVALUATED: "yellow"}


def _num(value: float | None, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


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
        grid.add_row(key, value)
    return grid


def _criterion(name: str, criterion: Any) -> str:
    if isinstance(criterion, int | float) and not isinstance(criterion, bool):
        return f"{name} ≥ {criterion:g}"
    if isinstance(criterion, dict) and isinstance(criterion.get("threshold"), int | float):
        return f"{name} ≥ {criterion['threshold']:g}"
    return name


def metric_delta_table(comparison: Comparison) -> Table:
    table = Table(title="Metric means", header_style="bold")
    for column in ("metric", "base", "other", "delta", "95% interval", "cases", "verdict"):
        table.add_column(column, justify="left" if column in ("metric", "verdict") else "right",
                         overflow="fold")  # fmt: skip
    for m in comparison.metrics:
        interval = "-" if m.ci_low is None else f"[{_num(m.ci_low, True)}, {_num(m.ci_high, True)}]"
        if m.regressed:
            verdict = Text("regressed", style="bold red")
        elif m.improved:
            verdict = Text("improved", style="bold green")
        elif not m.gated:
            verdict = Text("informational", style="dim")
        else:
            verdict = Text("within noise", style="dim")
        table.add_row(
            m.name, _num(m.base_mean), _num(m.other_mean), _num(m.delta, True), interval,
            str(m.paired), verdict,
        )  # fmt: skip
    return table


def case_delta_table(comparison: Comparison, *, max_rows: int = MAX_COMPARE_ROWS) -> Table:
    """Changed cases, regressions first, with each metric's delta and the new reason."""
    changed = [c for c in comparison.cases if c.change is not Change.SAME]
    table = Table(title="Cases", header_style="bold")
    for column in ("case", "change", "base", "other", "deltas", "why (other run)"):
        table.add_column(column, overflow="fold")
    for case in changed[:max_rows]:
        name = case.case_id if not case.eval_set_id else f"{case.eval_set_id}/{case.case_id}"
        deltas = ", ".join(f"{k} {v:+.2f}" for k, v in case.deltas.items() if v)
        table.add_row(
            name,
            Text(case.change.value, style=_CHANGE_STYLE[case.change]),
            Text(case.base.status.value, style=_STATUS_STYLE[case.base.status]),
            Text(case.other.status.value, style=_STATUS_STYLE[case.other.status]),
            deltas,
            Text(case.other.reason or "", style="dim"),
        )
    return table


def render_comparison(
    comparison: Comparison, console: Console, *, labels: Sequence[str] | None = None
) -> None:
    """Print one comparison: metric deltas, changed cases (regressions first), a verdict."""
    base, other = labels or (comparison.base_id or "base", comparison.other_id or "other")
    console.print(Text(f"{other} against {base}", style="bold"))
    console.print(metric_delta_table(comparison))
    changed = [c for c in comparison.cases if c.change is not Change.SAME]
    if changed:
        console.print(case_delta_table(comparison))
        if len(changed) > MAX_COMPARE_ROWS:
            console.print(
                Text(f"… {len(changed) - MAX_COMPARE_ROWS} more changed cases (--json has all)",
                     style="dim")
            )  # fmt: skip
    same = len(comparison.cases) - len(changed)
    console.print(Text(f"{same} cases unchanged", style="dim"))
    for label, missing in (
        (f"only in {base}", comparison.only_in_base),
        (f"only in {other}", comparison.only_in_other),
    ):
        if missing:
            shown = ", ".join(f"{s}/{c}" if s else c for s, c in missing[:10])
            more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            console.print(Text(f"{len(missing)} cases {label}: {shown}{more}", style="dim"))
    verdict = Text("Regression: " if comparison.has_regression else "No regression: ",
                   style="bold red" if comparison.has_regression else "bold green")  # fmt: skip
    verdict.append(comparison.summary(), style="")
    console.print(verdict)
