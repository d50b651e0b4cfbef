"""`assay metrics` and `assay formats`: what assay knows."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from assay.cli.common import (
    FORMAT_DESCRIPTIONS,
    stdout_console,
    user_errors,
)

#: the families in `assay metrics`' order, with a heading each
_FAMILIES = {
    "adk": "Google ADK",
    "vertex": "Vertex AI",
    "ces": "CES (Customer Engagement Suite)",
    "databricks": "Databricks / MLflow judges",
    "retrieval": "retrieval",
    "checks": "deterministic checks",
    "budgets": "budgets",
    "embeddings": "embeddings",
    "redteam": "red-team attacks (assay redteam)",
    "informational": "informational (reported, never gating)",
}


def metrics_command(
    name: Annotated[
        str | None,
        typer.Argument(help="One metric to show in full.", show_default=False),
    ] = None,
) -> None:
    """List the metrics by family, one line each (name, default threshold, what it
    scores); `assay metrics NAME` shows one in full: range, inputs, direction, source."""
    with user_errors():
        from assay.metrics.registry import broken_plugins, metric_names

        if name is not None:
            stdout_console().print(_metric_detail(name))
            return
        console = stdout_console()
        names = metric_names()
        broken = broken_plugins()
    rows = [_metric_row(n) for n in names]
    families = list(_FAMILIES) + sorted({r[0] for r in rows} - set(_FAMILIES))
    wide = console.width >= 120
    for family in families:
        members = [r for r in rows if r[0] == family]
        if not members:
            continue
        console.print(Text(f"{family}: {_FAMILIES.get(family, family)}", style="bold"))
        grid = _metric_grid(max(len(r[1]) for r in members), wide)
        for _, metric, threshold, span, description in members:
            cells = [metric, threshold, *([span] if wide else []), description]
            grid.add_row(*(Text(cell) for cell in cells))  # a plugin's text is not markup
        console.print(grid)
    if broken:
        # A plugin that could not be loaded is listed with why, not silently missing.
        console.print(Text("plugins not loaded", style="bold red"))
        grid = _metric_grid(2 + max(len(n) for n in broken), wide)
        for metric, why in sorted(broken.items()):
            cells = [f"  {metric}", "-", *(["-"] if wide else []), f"not loaded: {why}"]
            grid.add_row(*(Text(cell) for cell in cells))
        console.print(grid)
    console.print(
        Text(f"{len(names)} metrics; `assay metrics NAME` shows one in full", style="dim")
    )


def _metric_grid(longest: int, wide: bool) -> Table:
    """Name, default threshold, (range,) and the description cut to the line."""
    grid = Table.grid(padding=(0, 2, 0, 0), expand=True)
    grid.add_column(overflow="fold", min_width=longest)
    grid.add_column(no_wrap=True, min_width=6)
    if wide:
        grid.add_column(no_wrap=True, min_width=8)
    grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
    return grid


def _metric_row(name: str) -> tuple[str, str, str, str, str]:
    from assay.metrics.registry import get_metric_class, metric_source

    cls = get_metric_class(name)
    if cls.informational:
        threshold = "info"
    elif cls.default_threshold is None:
        threshold = "-"
    else:
        threshold = f"≥ {cls.default_threshold:g}"
    low_high = cls.score_range
    span = f"{low_high[0]:g}..{low_high[1]:g}" if low_high else "-"
    source = metric_source(name)
    description = cls.description if source == "assay" else f"{cls.description} ({source})"
    return cls.family, f"  {name}", threshold, span, description


def _metric_detail(name: str) -> Table:
    from assay.metrics.registry import get_metric_class, metric_source

    cls = get_metric_class(name)
    low_high = cls.score_range
    if cls.informational:
        threshold = "none: informational (reported, never passes or fails)"
    else:
        threshold = "-" if cls.default_threshold is None else f"{cls.default_threshold:g}"
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for key, value in (
        ("metric", name),
        ("family", f"{cls.family} ({_FAMILIES.get(cls.family, cls.family)})"),
        ("description", cls.description or "-"),
        ("score range", f"{low_high[0]:g}..{low_high[1]:g}" if low_high else "-"),
        ("better", "higher" if cls.higher_is_better else "lower"),
        ("default threshold", threshold),
        ("needs", ", ".join(sorted(cls.needs)) or "-"),
        ("source", metric_source(name)),
    ):
        grid.add_row(key, Text(value))
    return grid


def formats_command() -> None:
    """List the supported formats (for --from / --to)."""
    from assay.formats import FORMAT_MODULES

    table = Table(title="Formats", header_style="bold")
    table.add_column("name")
    table.add_column("description")
    for name in FORMAT_MODULES:
        table.add_row(name, FORMAT_DESCRIPTIONS.get(name, ""))
    stdout_console().print(table)
