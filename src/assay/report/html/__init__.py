"""The self-contained HTML report: one file, inline CSS and JS, no network at all.

`write_html(result, path)` writes it; `render_html(result)` returns it. The page holds
the run as JSON and renders lazily: the header, per-metric summaries with charts, the
failure analysis, a sortable / filterable / searchable case table that only draws the
visible rows, and a page per case (`#case/<key>`): turns, expected and actual tool calls
side by side with the differences marked, responses with matched words marked, every
metric's verdict with its explanation and details (judge rationale, samples, votes).
The CSS and JS are assay's own (no third-party code is bundled).
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path

from assay.core.results import EvalResult
from assay.report.atomic import replaced_whole
from assay.report.html.data import git_commit, report_data, run_environment

__all__ = [
    "git_commit",
    "render_html",
    "report_data",
    "run_environment",
    "static_text",
    "write_html",
]


def static_text(name: str) -> str:
    """A file of `report/html/static/` (the report's CSS and JS)."""
    return resources.files("assay.report.html").joinpath("static", name).read_text("utf-8")


def embed_json(data: object) -> str:
    """JSON safe inside a `<script>` element (no `</script>`, no `<!--`)."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def page(title: str, data: object, *, extra_head: str = "", nav: str = "") -> str:
    """The report's HTML around a data document."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # No request may leave the page: scripts and styles are inline, images data: URLs.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{html.escape(title)}</title>{extra_head}"
        f"<style>{static_text('report.css')}</style></head><body>{nav}"
        f'<main id="app"><noscript>This report needs JavaScript.</noscript></main>'
        f'<script type="application/json" id="assay-data">{embed_json(data)}</script>'
        f"<script>{static_text('report.js')}</script></body></html>\n"
    )


def render_html(
    result: EvalResult, *, run: object = None, commit: str | None = None, title: str | None = None
) -> str:
    """The whole report as one HTML document."""
    data = report_data(result, run=run, commit=commit, title=title)
    return page(str(data["header"]["title"]), data)


def write_html(
    result: EvalResult,
    path: str | Path,
    *,
    run: object = None,
    commit: str | None = None,
    title: str | None = None,
) -> Path:
    """Write the HTML report to `path`."""
    target = Path(path)
    text = render_html(result, run=run, commit=commit, title=title)
    with replaced_whole(target, "HTML report") as tmp:
        tmp.write_text(text, encoding="utf-8")
    return target
