"""`EvalResult` in Jupyter: the summary, metric cards and case table as static HTML.

Notebooks may not run a result's scripts, so this is plain HTML with a scoped style
in the report's look (badges, colours, the failure analysis' reasons).
"""

from __future__ import annotations

import html
import math

from assay.core.results import EvalResult, Status
from assay.report.analysis import analyze
from assay.report.console import metric_order
from assay.report.html.data import report_data

#: case runs shown in a notebook (the HTML report has them all)
MAX_ROWS = 50

_STYLE = """<style>
.assay-nb { font-family: system-ui, sans-serif; font-size: 13px; }
.assay-nb table { border-collapse: collapse; margin: 6px 0; }
.assay-nb th, .assay-nb td { border-bottom: 1px solid #dde1e6; padding: 3px 8px; text-align: left; }
.assay-nb .num { text-align: right; font-variant-numeric: tabular-nums; }
.assay-nb .badge { padding: 1px 7px; border-radius: 9px; color: #fff; font-size: 11px;
  font-weight: 600; }
.assay-nb .PASSED { background: #2e7d32; } .assay-nb .FAILED { background: #c62828; }
.assay-nb .NOT_EVALUATED { background: #b26a00; }
.assay-nb .fail { color: #c62828; font-weight: 600; }
.assay-nb .muted { color: #5f6b7a; }
</style>"""


def _num(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.2f}"


def notebook_html(result: EvalResult, *, max_rows: int = MAX_ROWS) -> str:
    """The result as an HTML fragment for `_repr_html_`."""
    data = report_data(result)
    counts = data["header"]["counts"]
    esc = html.escape
    parts = [_STYLE, '<div class="assay-nb">']
    parts.append(
        f"<p><strong>{counts['PASSED']} passed, {counts['FAILED']} failed, "
        f"{counts['NOT_EVALUATED']} not evaluated</strong> ({len(result.cases)} case runs)"
        + (f" · run <code>{esc(result.run_id)}</code>" if result.run_id else "")
        + "</p>"
    )
    rows = []
    for m in data["metrics"]:
        ci = "–" if not m["ci95"] else f"{_num(m['ci95'][0])} – {_num(m['ci95'][1])}"
        threshold = "informational" if m["informational"] else _num(m["threshold"])
        rate = "–" if m["pass_rate"] is None else f"{100 * m['pass_rate']:.0f}%"
        rows.append(
            f'<tr><td>{esc(m["name"])}</td><td class="num">{_num(m["mean"])}</td>'
            f'<td class="num">{ci}</td><td class="num">{threshold}</td>'
            f'<td class="num">{rate}</td></tr>'
        )
    parts.append(
        "<table><thead><tr><th>metric</th><th>mean</th><th>95% interval</th><th>threshold</th>"
        f"<th>pass rate</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    analysis = analyze(result.cases)
    if analysis.cases:
        parts.append(f'<p class="muted">Failure causes: {esc(analysis.headline())}</p>')
    metrics = metric_order(result)
    head = "".join(f"<th>{esc(n)}</th>" for n in ["case", "status", *metrics, "why"])
    body = []
    for case in result.cases[:max_rows]:
        found = analysis.for_case(case)
        status = case.status.value
        cells = [
            f"<td>{esc(case.case_id)}</td>",
            f'<td><span class="badge {status}">{status}</span></td>',
        ]
        for name in metrics:
            m = case.metrics.get(name)
            failed = m is not None and m.status is Status.FAILED
            value = "" if m is None else _num(m.score)
            cells.append(f'<td class="num{" fail" if failed else ""}">{value}</td>')
        cells.append(f'<td class="muted">{esc(found.reason()) if found else ""}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")
    if len(result.cases) > max_rows:
        parts.append(
            f'<p class="muted">{len(result.cases) - max_rows} more case runs; '
            "write them all with assay.report.html.write_html(result, 'report.html')</p>"
        )
    parts.append("</div>")
    return "".join(parts)
