"""Terminal views of stored runs: the list (`assay runs list`), a run's header and one
of its cases (`assay runs show`, `--case`), and a comparison (`assay report --compare`).

A case is named by its id or `SET/ID`; every run of it (`--runs N`) is shown, each
with its status, error, metric scores and, when the agent raised, its traceback (the
agent's own frames, as the engine kept them). Tracebacks are printed as they are:
never wrapped, never read as markup.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from assay.core.results import CaseResult, Status
from assay.errors import ConfigError, did_you_mean
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


#: below this many columns the runs table drops its low-value columns
RUNS_WIDE = 120
#: run ids are shown as unique prefixes of at least this many characters
MIN_ID_PREFIX = 8


def short_ids(ids: Sequence[str], unique: Callable[[str], bool] | None = None) -> dict[str, str]:
    """Each id's shortest prefix (at least `MIN_ID_PREFIX` characters) that no other of
    `ids` starts with and, when given, that `unique(prefix)` accepts (the store resolves
    it to this id alone): a prefix every command takes in place of the full id."""
    found: dict[str, str] = {}
    for run_id in ids:
        size = min(MIN_ID_PREFIX, len(run_id))
        while size < len(run_id) and (
            any(o != run_id and o.startswith(run_id[:size]) for o in ids)
            or (unique is not None and not unique(run_id[:size]))
        ):
            size += 1
        found[run_id] = run_id[:size]
    return found


#: the runs table's columns that give way when the terminal is too narrow, first first;
#: the id, the status and the counts always stay
_RUNS_DROPPABLE = ("agent", "name", "cases", "created", "eval sets")
_RUNS_FLEXIBLE = ("name", "eval sets", "agent")


def runs_table(
    infos: Sequence[Any], *, width: int = RUNS_WIDE, short: dict[str, str] | None = None
) -> Table:
    """Stored runs (`assay.store.RunInfo`), one row each, ids as unique prefixes (`short`).
    Below `RUNS_WIDE` columns the counts share one `pass/fail/n.e.` column and the date
    loses its year; columns that still do not fit give way (`_RUNS_DROPPABLE`); long text
    is cut with an ellipsis, never folded over lines. The id and the status stay whole."""
    short = short or {}
    wide = width >= RUNS_WIDE
    columns: dict[str, list[str | Text]] = {"id": [short.get(i.id, i.id) for i in infos]}
    if any(info.name for info in infos):
        columns["name"] = [Text(info.name or "") for info in infos]  # never markup
    columns["created"] = [str(i.created_at)[:19] if wide else str(i.created_at)[5:16]
                          for i in infos]  # fmt: skip
    columns["status"] = [info.status for info in infos]
    columns["eval sets"] = [Text(", ".join(info.eval_set_ids)) for info in infos]
    columns["agent"] = [Text(info.agent or "") for info in infos]
    columns["cases"] = [str(info.case_count) for info in infos]
    counts = [
        (
            Text(str(info.passed), style="green"),
            Text(str(info.failed), style="red" if info.failed else ""),
            Text(str(info.not_evaluated), style="yellow" if info.not_evaluated else ""),
        )
        for info in infos
    ]
    if wide:
        for index, header in enumerate(("passed", "failed", "not eval.")):
            columns[header] = [c[index] for c in counts]
    else:
        columns["pass/fail/n.e."] = [Text("/").join(c) for c in counts]
    longest = {h: max([len(h), *(len(str(v)) for v in vs)]) for h, vs in columns.items()}

    def needed(names: Sequence[str]) -> int:  # each column takes 2 more: padding, divider
        return sum(min(longest[n], 12) if n in _RUNS_FLEXIBLE else longest[n] for n in names) \
            + 2 * len(names)  # fmt: skip

    shown = list(columns)
    for name in _RUNS_DROPPABLE:
        if name in shown and (needed(shown) > width or (name == "agent" and not wide)):
            shown.remove(name)
    # The flexible columns share what is left, the shortest first.
    left = width - needed([n for n in shown if n not in _RUNS_FLEXIBLE])
    widths = {n: longest[n] for n in shown}
    flexible = sorted((n for n in shown if n in _RUNS_FLEXIBLE), key=lambda n: longest[n])
    for taken, name in enumerate(flexible):
        widths[name] = max(
            min(longest[name], 8), min(longest[name], left // (len(flexible) - taken) - 2)
        )
        left -= widths[name] + 2
    table = Table(title="Runs", title_justify="left", header_style="bold",
                  box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1, 0, 0))  # fmt: skip
    numeric = {"cases", "passed", "failed", "not eval.", "pass/fail/n.e."}
    for name in shown:
        table.add_column(name, no_wrap=True, overflow="ellipsis", width=widths[name],
                         justify="right" if name in numeric else "left")  # fmt: skip
    for row in range(len(infos)):
        table.add_row(*(columns[name][row] for name in shown))
    return table


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


# One case of a stored run (`assay runs show RUN --case ID`).


def select_case(cases: Sequence[CaseResult], ref: str) -> list[CaseResult]:
    """The case runs `ref` names (an id, or `SET/ID`), in run order; ConfigError (exit 2)
    naming the closest id when none matches."""
    matched = [c for c in cases if c.case_id == ref]
    if not matched and "/" in ref:
        set_id, _, case_id = ref.partition("/")
        matched = [c for c in cases if c.case_id == case_id and (c.eval_set_id or "") == set_id]
    if matched:
        return sorted(matched, key=lambda c: (c.eval_set_id or "", c.run_index))
    ids = list(dict.fromkeys(c.case_id for c in cases))
    raise ConfigError(
        f"--case {ref!r}: no such case in this run{did_you_mean(ref, ids)}; its cases:\n"
        + refusal_list(ids).plain
    )


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def print_case(console: Console, case: CaseResult, *, runs: int = 1) -> None:
    """One case run: heading, error, metrics, traceback."""
    head = Text(f"case {case.case_id}", style="bold")
    if case.eval_set_id:
        head.append(f"  eval set {case.eval_set_id}", style="dim")
    if runs > 1:
        head.append(f"  run {case.run_index + 1}")
    head.append(f"  {case.status.value}")
    if case.error_type is not None:
        head.append(f"  {case.error_type}", style="red")
    if case.latency_s is not None:
        head.append(f"  {case.latency_s:.2f}s", style="dim")
    console.print(head, soft_wrap=True)
    if case.error:
        console.print(Text(f"error: {case.error}", style="red"), soft_wrap=True)
    for name, metric in case.metrics.items():
        line = f"  {name}: {_score(metric.score)}"
        if metric.threshold is not None:
            line += f" (threshold {_score(metric.threshold)})"
        line += f" {metric.status.value if metric.status else 'informational'}"
        if metric.explanation and metric.explanation != case.error:  # said once, above
            line += f" - {metric.explanation}"
        console.print(Text(line), soft_wrap=True)
    if case.traceback:
        console.print(Text("traceback (the agent's frames):", style="bold"))
        console.print(Text(case.traceback.rstrip("\n")), soft_wrap=True, highlight=False)


def print_cases(console: Console, cases: Sequence[CaseResult]) -> None:
    """Every run of one case, one after the other."""
    for i, case in enumerate(cases):
        if i:
            console.print()
        print_case(console, case, runs=len(cases))
