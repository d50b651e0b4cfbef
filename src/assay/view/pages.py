"""Server-rendered pages of `assay view`: the runs list and the comparison.

Plain functions from data to HTML strings; every value from the store is escaped. The
run and case pages are the HTML report itself (`assay.report.html.page`).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlencode

from assay.metrics.calldiff import format_call
from assay.model.results import CaseResult, EvalResult
from assay.report.analysis import case_run_key
from assay.report.compare import Change, Comparison
from assay.report.html import static_text
from assay.store.schema import RunStatus

_VIEW_CSS = """
.runs td, .runs th { white-space: nowrap; } .runs td.id { font-family: ui-monospace, monospace; }
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


def esc(value: Any) -> str:
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


def pass_rate_chart(infos: Sequence[Any]) -> str:
    """Pass rate over time per eval set: one polyline each, runs in time order."""
    ordered = sorted(infos, key=lambda i: (i.created_at, i.id))
    if len(ordered) < 2:
        return ""
    width, height, pad = 760, 180, 28
    xs = {
        info.id: pad + (width - 2 * pad) * k / (len(ordered) - 1) for k, info in enumerate(ordered)
    }
    series: dict[str, list[tuple[float, float, Any]]] = {}
    for info in ordered:
        rate = _rate(info)
        if rate is None:
            continue
        y = height - pad - (height - 2 * pad) * rate
        for set_id in info.eval_set_ids:
            series.setdefault(set_id, []).append((xs[info.id], y, info))
    bottom = height - pad
    parts = [
        f'<svg width="{width}" height="{height}" role="img" aria-label="pass rate over time">',
        f'<line class="axis" x1="{pad}" y1="{bottom}" x2="{width - pad}" y2="{bottom}"/>',
        f'<text x="2" y="{pad + 4}" font-size="10">100%</text>',
        f'<text x="8" y="{bottom + 4}" font-size="10">0%</text>',
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
                f"{esc(set_id)} · {esc(info.id)} · {100 * rate:.0f}%</title></circle>"
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
            f"<td>{esc(info.name or '')}</td><td>{esc(str(info.created_at)[:19])}</td>"
            f"<td>{esc(info.status)}</td><td>{esc(', '.join(info.eval_set_ids))}</td>"
            f'<td>{esc(info.agent or "")}</td><td class="num">{info.case_count}</td>'
            f'<td class="num">{info.passed}</td><td class="num">{info.failed}</td>'
            f'<td class="num">{info.not_evaluated}</td>'
            f'<td class="num">{"–" if rate is None else f"{100 * rate:.0f}%"}</td></tr>'
        )
    head = "".join(f"<th>{h}</th>" for h in ("", "id", "name", "created", "status", "eval sets",
                   "agent", "cases", "passed", "failed", "not evaluated", "pass rate"))  # fmt: skip
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


def _num(value: float | None, signed: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


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


def comparison_section(
    comparison: Comparison, base_result: EvalResult, other_result: EvalResult, *, base: str
) -> str:
    a_id, b_id = comparison.base_id or "", comparison.other_id or ""
    bad = comparison.has_regression
    verdict = (
        f'<p class="verdict {"bad" if bad else "good"}" id="verdict">'
        f"{'Regression' if bad else 'No regression'}: {esc(comparison.summary())}</p>"
    )
    metric_rows = []
    for m in comparison.metrics:
        ci = "–" if m.ci_low is None else f"[{_num(m.ci_low, True)}, {_num(m.ci_high, True)}]"
        word = ("regressed" if m.regressed else "improved" if m.improved
                else "informational" if not m.gated else "within noise")  # fmt: skip
        metric_rows.append(
            f'<tr><td>{esc(m.name)}</td><td class="num">{_num(m.base_mean)}</td>'
            f'<td class="num">{_num(m.other_mean)}</td><td class="num">{_num(m.delta, True)}</td>'
            f'<td class="num">{ci}</td><td class="num">{m.paired}</td>'
            f'<td class="change {"regressed" if m.regressed else ""}">{word}</td></tr>'
        )
    metrics = (
        "<h3>Metric means</h3><table><thead><tr><th>metric</th><th>base</th><th>other</th>"
        "<th>delta</th><th>95% interval</th><th>cases</th><th>verdict</th></tr></thead>"
        f"<tbody>{''.join(metric_rows)}</tbody></table>"
    )
    first_run = {
        r: {(c.eval_set_id or "", c.case_id): c for c in reversed(r.cases)}
        for r in (base_result, other_result)
    }
    case_rows = []
    for c in comparison.cases:
        deltas = ", ".join(f"{k} {v:+.2f}" for k, v in c.deltas.items() if v)
        trajectories = ""
        if c.change is not Change.SAME:
            key = (c.eval_set_id, c.case_id)
            trajectories = (
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
        f'<h2><a href="{esc(base)}/runs/{quote(b_id)}">{esc(b_id)}</a> against '
        f'<a href="{esc(base)}/runs/{quote(a_id)}">{esc(a_id)}</a></h2>'
    )
    return f"<section>{title}{verdict}{metrics}{cases}{only}</section>"


def compare_query(run_ids: Sequence[str]) -> str:
    return urlencode([("runs", r) for r in run_ids])
