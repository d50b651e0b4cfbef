"""Server-rendered pages of `assay view`: the runs list and the comparison.

Plain functions from data to HTML strings; every value from the store is escaped. The
run and case pages are the HTML report itself (`assay.report.html.page`).
"""

from __future__ import annotations

import difflib
import html
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from assay.core.results import CaseResult, EvalResult
from assay.metrics.calldiff import format_call
from assay.report.analysis import case_run_key
from assay.report.compare import Change, Comparison
from assay.report.html import static_text
from assay.store.schema import RunStatus

_VIEW_CSS = """
.runs td.id, .runs td.when { white-space: nowrap; }
.runs td.id { font-family: ui-monospace, monospace; }
.runs td { white-space: nowrap; } .runs td.means { font-size: 12px; }
.runs td.wraps { white-space: normal; overflow-wrap: anywhere; max-width: 13rem; }
svg.chart .grid { stroke: #eef0f3; } svg.chart .tick { font-size: 11px; fill: var(--muted); }
svg.chart .axis-title { font-size: 12px; fill: #1f2328; }
.rdiff { white-space: pre-wrap; background: var(--panel); padding: 6px 8px; border-radius: 6px; }
.rdiff del { background: #ffd7d5; color: var(--bad); margin-right: 3px; }
.rdiff ins { background: #d3f9d8; text-decoration: none; }
.runname { font-weight: 400; color: var(--muted); }
form.filters { display: flex; flex-wrap: wrap; gap: 12px; align-items: end; margin: 8px 0 16px; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
.change { font-weight: 700; } .change.regressed, .change.worse { color: var(--bad); }
.change.improved, .change.better { color: var(--ok); }
.change.mixed, .change.changed { color: var(--warn); }
.verdict { font-size: 16px; font-weight: 700; } .verdict.bad { color: var(--bad); }
.verdict.good { color: var(--ok); }
.traj { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.traj code { display: block; font-size: 12px; }
.legend span { margin-right: 14px; font-size: 12px; }
.error-page { color: var(--bad); font-size: 16px; }
"""
#: no favicon request (the browser would otherwise ask the server for /favicon.ico)
ICON = '<link rel="icon" href="data:,">'
_PALETTE = ("#1a56db", "#c62828", "#2e7d32", "#6f42c1", "#b26a00", "#00838f", "#ad1457")


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value))


def layout(
    title: str, body: str, *, base: str, refresh: int | None = None, csrf: str | None = None
) -> str:
    """A view page: nav bar, the report's stylesheet, `body` (already escaped HTML).
    `csrf`: the session's token when the page is served by its login cookie (adds the
    log-out button)."""
    meta = f'<meta http-equiv="refresh" content="{refresh}">' if refresh else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"{meta}{ICON}<title>{esc(title)}</title>"
        f"<style>{static_text('report.css')}{_VIEW_CSS}</style></head><body>"
        f'{nav(base, csrf)}<div class="page">{body}</div></body></html>\n'
    )


def nav(base: str, csrf: str | None = None) -> str:
    """The top bar; with a session's `csrf` token, its log-out form (a POST)."""
    logout = (
        f'<form method="post" action="{esc(base)}/logout" class="logout">'
        f'<input type="hidden" name="csrf_token" value="{esc(csrf)}">'
        '<button type="submit" id="logout">log out</button></form>'
        if csrf
        else ""
    )
    return (
        f'<nav class="top"><strong>assay view</strong><a href="{esc(base)}/">runs</a>{logout}</nav>'
    )


def _rate(info: Any) -> float | None:
    judged = info.case_count
    return info.passed / judged if judged else None


#: at most this many dates under the pass-rate chart's x axis
_DATE_TICKS = 6


def _axes(
    ordered: Sequence[Any], xs: dict[str, float], box: tuple[int, int, int, int]
) -> list[str]:
    """The chart's axes: pass rate 0-100% with grid lines, run dates below, titles."""
    width, height, left, bottom = box
    top = 16
    parts = [
        f'<line class="axis" x1="{left}" y1="{bottom}" x2="{width - 12}" y2="{bottom}"/>',
        f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{bottom}"/>',
    ]
    for pct in (0, 25, 50, 75, 100):
        y = bottom - (bottom - top) * pct / 100
        parts.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{width - 12}" '
                     f'y2="{y:.1f}"/><text class="tick" x="{left - 6}" y="{y + 4:.1f}" '
                     f'text-anchor="end">{pct}%</text>')  # fmt: skip
    step = max(1, math.ceil(len(ordered) / _DATE_TICKS))
    shown = ordered[::step]
    if ordered[-1] not in shown:
        shown = [*shown[:-1], ordered[-1]] if len(shown) >= _DATE_TICKS else [*shown, ordered[-1]]
    for info in shown:
        x = xs[info.id]
        day, clock = info.created_at.strftime("%Y-%m-%d"), info.created_at.strftime("%H:%M")
        parts.append(f'<text class="tick date" x="{x:.1f}" y="{bottom + 16}" '
                     f'text-anchor="middle">{day}</text><text class="tick date" x="{x:.1f}" '
                     f'y="{bottom + 28}" text-anchor="middle">{clock}</text>')  # fmt: skip
    parts.append(f'<text class="axis-title" x="{(left + width) / 2:.0f}" y="{height - 4}" '
                 'text-anchor="middle">run started (UTC), oldest to newest</text>'
                 f'<text class="axis-title" transform="rotate(-90)" x="{-(top + bottom) / 2:.0f}" '
                 'y="14" text-anchor="middle">pass rate</text>')  # fmt: skip
    return parts


def pass_rate_chart(infos: Sequence[Any]) -> str:
    """Pass rate over time per eval set: one polyline each, runs in time order, with
    the rate axis and the runs' dates labelled."""
    ordered = sorted(infos, key=lambda i: (i.created_at, i.id))
    if len(ordered) < 2:
        return ""
    width, height, left, right, bottom = 820, 250, 64, 40, 190
    xs = {
        info.id: left + 16 + (width - left - right - 16) * k / (len(ordered) - 1)
        for k, info in enumerate(ordered)
    }
    series: dict[str, list[tuple[float, float, Any]]] = {}
    for info in ordered:
        rate = _rate(info)
        if rate is None:
            continue
        y = bottom - (bottom - 16) * rate
        for set_id in info.eval_set_ids:
            series.setdefault(set_id, []).append((xs[info.id], y, info))
    parts = [
        f'<svg width="{width}" height="{height}" role="img" aria-label="pass rate over time" '
        'class="chart">',
        *_axes(ordered, xs, (width, height, left, bottom)),
    ]
    legend = []
    for n, (set_id, points) in enumerate(sorted(series.items())):
        color = _PALETTE[n % len(_PALETTE)]
        line = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in points)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{line}"/>')
        for x, y, info in points:
            rate = _rate(info) or 0.0
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{color}"><title>'
                f"{esc(set_id)} · {esc(info.name or info.id)} · "
                f"{esc(info.created_at.strftime('%Y-%m-%d %H:%M'))} · {100 * rate:.0f}%"
                "</title></circle>"
            )
        legend.append(f'<span style="color:{color}">■ {esc(set_id)}</span>')
    parts.append("</svg>")
    return (
        "<section><h2>Pass rate over time</h2>"
        + "".join(parts)
        + f'<div class="legend">{"".join(legend)}</div></section>'
    )


def runs_page(infos: Sequence[Any], filters: dict[str, str], *, base: str) -> str:
    def field(name: str, label: str, kind: str = "text") -> str:
        return (f'<label>{esc(label)}<input type="{kind}" name="{name}" '
                f'value="{esc(filters.get(name, ""))}"></label>')  # fmt: skip

    statuses = ["", *(status.value for status in RunStatus)]
    chosen = filters.get("status", "").upper()
    options = "".join(
        f'<option value="{s}"{" selected" if chosen == s else ""}>{s or "any"}</option>'
        for s in statuses
    )
    form = (
        f'<form class="filters" method="get" action="{esc(base)}/">'
        + field("eval_set", "eval set") + field("agent", "agent")
        + f'<label>status<select name="status">{options}</select></label>'
        + field("since", "since (YYYY-MM-DD)", "date")
        + '<button type="submit">filter</button></form>'
    )  # fmt: skip
    rows = []
    for info in infos:
        rate = _rate(info)
        rows.append(
            "<tr>"
            f'<td><input type="checkbox" name="runs" value="{esc(info.id)}" form="compare"></td>'
            f'<td class="id"><a href="{esc(base)}/runs/{quote(info.id)}">{esc(info.id)}</a></td>'
            f"<td>{esc(info.name or '')}</td>"
            f'<td class="when">{esc(info.created_at.strftime("%Y-%m-%d %H:%M"))}</td>'
            f"<td>{esc(info.status)}</td>"
            f'<td class="wraps">{esc(", ".join(info.eval_set_ids))}</td>'
            f'<td class="wraps">{esc(info.agent or "")}</td><td class="num">{info.case_count}</td>'
            f'<td class="num">{info.passed}</td><td class="num">{info.failed}</td>'
            f'<td class="num">{info.not_evaluated}</td>'
            f'<td class="num">{"–" if rate is None else f"{100 * rate:.0f}%"}</td>'
            f'<td class="means">{metric_means(info)}</td></tr>'
        )
    head = "".join(f"<th>{h}</th>" for h in ("", "id", "name", "created", "status", "eval sets",
                   "agent", "cases", "passed", "failed", "not evaluated", "pass rate",
                   "metric means"))  # fmt: skip
    table = (
        f'<form id="compare" method="get" action="{esc(base)}/compare">'
        # The selected runs are compared oldest first (the oldest is the base).
        '<input type="hidden" name="order" value="time">'
        '<button type="submit" id="compare-button">compare selected runs</button></form>'
        f'<table class="runs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
        if rows
        else '<p class="muted">No run matches. Run <code>assay eval ...</code> first.</p>'
    )
    return f"<h1>Runs</h1>{form}{pass_rate_chart(infos)}<section><h2>All runs</h2>{table}</section>"


def metric_means(info: Any) -> str:
    """A run's mean per criterion (the config's, else every metric it ran), rounded,
    the exact mean in the tooltip."""
    criteria = (getattr(info, "config", None) or {}).get("criteria")
    names = list(criteria) if isinstance(criteria, dict) and criteria else list(info.metrics)
    rows = []
    for name in names:
        mean = (info.summary or {}).get(f"{name}/mean")
        if isinstance(mean, int | float) and math.isfinite(mean):
            rows.append(f'<div title="{esc(repr(mean))}"><span class="muted">{esc(name)}</span> '
                        f"{mean:.2f}</div>")  # fmt: skip
    return "".join(rows) or '<span class="muted">–</span>'


def _num(value: float | None, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _num_cell(value: float | None, signed: bool = False) -> str:
    """A rounded number in a table cell, the exact value in its tooltip."""
    exact = "" if value is None else f' title="{esc(repr(value))}"'
    return f'<td class="num"{exact}>{_num(value, signed)}</td>'


def _case_link(base: str, run_id: str | None, set_id: str, case_id: str) -> str:
    key = case_run_key(set_id or None, case_id, 0)
    return f"{esc(base)}/runs/{quote(run_id or '')}/cases/{quote(key, safe='')}"


def _calls(case: CaseResult | None) -> str:
    if case is None:
        return '<span class="muted">–</span>'
    turns = []
    for inv in case.invocations:
        calls = inv.actual.tool_calls() if inv.actual is not None else []
        text = "".join(f"<code>{esc(format_call(c))}</code>" for c in calls) or (
            '<span class="muted">no call</span>'
        )
        turns.append(f"<div><em>turn {inv.index + 1}</em>{text}</div>")
    return "".join(turns)


_WORDS = re.compile(r"\s+|[^\s]+")


def response_diff(before: str, after: str) -> str:
    """The two responses word by word as HTML: removed words in `<del>`, added in `<ins>`.

    The compare page's only word diff: swap its body for the comparison's own diff
    data when `assay.report.compare` provides one.
    """
    old, new = _WORDS.findall(before), _WORDS.findall(after)
    parts: list[str] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            parts.append(esc("".join(old[i1:i2])))
            continue
        if i2 > i1:
            parts.append(f"<del>{esc(''.join(old[i1:i2]))}</del>")
        if j2 > j1:
            parts.append(f"<ins>{esc(''.join(new[j1:j2]))}</ins>")
    return "".join(parts)


def _final_response(case: CaseResult | None) -> str | None:
    if case is None or not case.invocations:
        return None
    last = case.invocations[-1].actual
    return None if last is None else last.final_response


def _run_title(base: str, run_id: str, name: str) -> str:
    named = f' <span class="runname">({esc(name)})</span>' if name else ""
    return f'<a href="{esc(base)}/runs/{quote(run_id)}">{esc(run_id)}</a>{named}'


def comparison_section(
    comparison: Comparison,
    base_result: EvalResult,
    other_result: EvalResult,
    *,
    base: str,
    names: Mapping[str, str] | None = None,
) -> str:
    a_id, b_id = comparison.base_id or "", comparison.other_id or ""
    named = names or {}
    bad = comparison.has_regression
    verdict = (
        f'<p class="verdict {"bad" if bad else "good"}" id="verdict">'
        f"{'Regression' if bad else 'No regression'}: {esc(comparison.summary())}</p>"
    )
    metric_rows = []
    # Metrics neither run measured (token usage a recorded run did not report) are
    # named once under the table instead of a row of dashes.
    unmeasured = [m.name for m in comparison.metrics
                  if m.paired == 0 and m.base_mean is None and m.other_mean is None]  # fmt: skip
    for m in comparison.metrics:
        if m.name in unmeasured:
            continue
        ci = "–" if m.ci_low is None else f"[{_num(m.ci_low, True)}, {_num(m.ci_high, True)}]"
        word = ("regressed" if m.regressed else "improved" if m.improved
                else "informational" if not m.gated else "within noise")  # fmt: skip
        metric_rows.append(
            f"<tr><td>{esc(m.name)}</td>{_num_cell(m.base_mean)}{_num_cell(m.other_mean)}"
            f"{_num_cell(m.delta, True)}"
            f'<td class="num">{ci}</td><td class="num">{m.paired}</td>'
            f'<td class="change {"regressed" if m.regressed else ""}">{word}</td></tr>'
        )
    metrics = (
        "<h3>Metric means</h3><table><thead><tr><th>metric</th><th>base</th><th>other</th>"
        "<th>delta</th><th>95% interval</th><th>cases</th><th>verdict</th></tr></thead>"
        f"<tbody>{''.join(metric_rows)}</tbody></table>"
        + (f'<p class="muted" id="unmeasured">Not measured in either run: '
           f"{esc(', '.join(unmeasured))}</p>" if unmeasured else "")
    )  # fmt: skip
    first_run = {
        r: {(c.eval_set_id or "", c.case_id): c for c in reversed(r.cases)}
        for r in (base_result, other_result)
    }
    case_rows = []
    for c in comparison.cases:
        deltas = ", ".join(f"{k} {v:+.2f}" for k, v in c.deltas.items() if v)
        trajectories = ""
        key = (c.eval_set_id, c.case_id)
        said = [_final_response(first_run[r].get(key)) for r in (base_result, other_result)]
        if said[0] is not None and said[1] is not None and said[0] != said[1]:
            trajectories += (
                '<details class="response-diff" open><summary>final response, word by word'
                f'</summary><div class="rdiff">{response_diff(said[0], said[1])}</div></details>'
            )
        if c.change is not Change.SAME:
            trajectories += (
                f'<details><summary>tool calls side by side</summary><div class="traj">'
                f"<div><strong>{esc(a_id)}</strong>{_calls(first_run[base_result].get(key))}</div>"
                f"<div><strong>{esc(b_id)}</strong>{_calls(first_run[other_result].get(key))}</div>"
                "</div></details>"
            )
        case_rows.append(
            f'<tr class="case-row" data-change="{c.change.value}">'
            f'<td><a href="{_case_link(base, b_id, c.eval_set_id, c.case_id)}">{esc(c.case_id)}</a>'
            f'{trajectories}</td><td class="change {c.change.value}">{c.change.value}</td>'
            f'<td><a href="{_case_link(base, a_id, c.eval_set_id, c.case_id)}">'
            f"{c.base.status.value}</a></td><td>{c.other.status.value}</td>"
            f'<td>{esc(deltas)}</td><td class="reason">{esc(c.other.reason or "")}</td></tr>'
        )
    cases = (
        '<h3>Cases (regressions first)</h3><table id="compare-cases"><thead><tr><th>case</th>'
        "<th>change</th><th>base</th><th>other</th><th>deltas</th><th>why (other run)</th></tr>"
        f"</thead><tbody>{''.join(case_rows)}</tbody></table>"
    )
    only = "".join(
        f'<p class="muted">{len(keys)} cases only in {esc(run)}: '
        f"{esc(', '.join(f'{s}/{i}' for s, i in keys[:20]))}</p>"
        for run, keys in ((a_id, comparison.only_in_base), (b_id, comparison.only_in_other))
        if keys
    )
    title = (
        f"<h2>{_run_title(base, b_id, named.get(b_id, ''))} against "
        f"{_run_title(base, a_id, named.get(a_id, ''))}</h2>"
    )
    return f"<section>{title}{verdict}{metrics}{cases}{only}</section>"


def compare_query(run_ids: Sequence[str]) -> str:
    return urlencode([("runs", r) for r in run_ids])


def pairwise_form(run_ids: Sequence[str], base: str, given: Mapping[str, str]) -> str:
    """The compare page's form asking for the pairwise verdicts of `assay compare
    --judge` (read from the judge cache: the page never calls a model)."""
    hidden = "".join(f'<input type="hidden" name="runs" value="{esc(r)}">' for r in run_ids)

    def field(name: str, label: str) -> str:
        return (f'<label>{esc(label)}<input name="{name}" id="pairwise-{name}" '
                f'value="{esc(given.get(name, ""))}"></label>')  # fmt: skip

    return (
        f'<form class="filters" id="pairwise-form" method="get" action="{esc(base)}/compare">'
        f"{hidden}{field('judge', 'pairwise judge (as given to assay compare --judge)')}"
        f"{field('metric', 'metric')}{field('criteria', 'criteria')}"
        f"{field('base_url', 'judge base URL')}"
        '<label>trajectories<input type="checkbox" name="trajectories" value="1"'
        f"{' checked' if given.get('trajectories') else ''}></label>"
        '<button type="submit">show pairwise verdicts</button></form>'
    )


def pairwise_section(comparison: Any) -> str:
    """A `assay.report.pairwise.PairwiseComparison` as HTML: the win rate of B with its
    interval, the position check, and each case's choice and explanation."""
    c = comparison
    counts = c.counts
    interval = c.interval
    rate = "–" if c.win_rate is None else f"{c.win_rate:.2f}"
    ci = "–" if interval is None else f"[{interval[0]:.2f}, {interval[1]:.2f}]"
    bias = (
        f'<p class="verdict bad" id="pairwise-bias">Position bias: {c.follows_position} of '
        f"{len(c.decided)} pairs followed the position, not the answer</p>"
        if c.position_bias
        else ""
    )
    stats = (
        '<table id="pairwise-stats"><thead><tr><th>win rate of B</th><th>95% interval</th>'
        "<th>B wins</th><th>A wins</th><th>ties</th><th>inconsistent</th><th>not judged</th>"
        f'</tr></thead><tbody><tr><td class="num" id="pairwise-win-rate">{rate}</td>'
        f'<td class="num">{ci}</td><td class="num">{counts["b_wins"]}</td>'
        f'<td class="num">{counts["a_wins"]}</td><td class="num">{counts["ties"]}</td>'
        f'<td class="num" id="pairwise-inconsistent">{counts["inconsistent"]}</td>'
        f'<td class="num">{counts["not_judged"]}</td></tr></tbody></table>'
    )
    from assay.report.pairwise import sort_cases

    rows = []
    for case in sort_cases(c.cases):
        verdict = case.verdict
        conf = case.confidence
        rows.append(
            f'<tr class="pairwise-row" data-choice="{esc(case.choice or "none")}">'
            f"<td>{esc(case.case_id)}</td><td>{esc(case.choice or 'not judged')}"
            f"{' (inconsistent)' if case.inconsistent else ''}</td>"
            f"<td>{esc((verdict.forward or '–') if verdict else '–')}</td>"
            f"<td>{esc((verdict.backward or '–') if verdict else '–')}</td>"
            f'<td class="num">{"–" if conf is None else f"{conf:.2f}"}</td>'
            f'<td class="reason">{esc(case.explanation)}</td></tr>'
        )
    cases = (
        '<table id="pairwise-cases"><thead><tr><th>case</th><th>choice</th>'
        "<th>A shown first</th><th>B shown first</th><th>confidence</th><th>why</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )
    title = (f"<h3>Pairwise: {esc(c.criterion.metric)} by {esc(c.judge)}, both orders"
             f"{' (with trajectories)' if c.trajectories else ''}</h3>")  # fmt: skip
    return (f'<section class="pairwise">{title}<p id="pairwise-summary">{esc(c.summary())}'
            f"</p>{bias}{stats}{cases}</section>")  # fmt: skip
