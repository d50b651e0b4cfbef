"""`assay metrics` and `assay formats`: what assay knows."""

from __future__ import annotations

from rich.table import Table

from assay.cli.common import (
    FORMAT_DESCRIPTIONS,
    stdout_console,
    user_errors,
)


def metrics_command() -> None:
    """List the metrics: name, family, range, needs, default threshold, and source
    (assay, or the plugin distribution and entry point)."""
    with user_errors():
        from assay.metrics.registry import (
            broken_plugins,
            get_metric_class,
            metric_names,
            metric_source,
        )

        table = Table(title="Metrics", header_style="bold")
        table.add_column("name", no_wrap=True)
        for column in ("family", "range", "needs", "threshold", "source", "description"):
            table.add_column(column, overflow="fold")
        for name in metric_names():
            cls = get_metric_class(name)
            threshold = "informational" if cls.informational else str(cls.default_threshold)
            if cls.default_threshold is None and not cls.informational:
                threshold = "-"
            low_high = cls.score_range
            span = f"{low_high[0]:g}..{low_high[1]:g}" if low_high else "-"
            needs = ", ".join(sorted(cls.needs))
            source = metric_source(name)
            table.add_row(name, cls.family, span, needs, threshold, source, cls.description)
        # A plugin that could not be loaded is listed with why, not silently missing.
        for name, why in sorted(broken_plugins().items()):
            table.add_row(name, "-", "-", "-", "-", why, "not loaded")
    stdout_console().print(table)


def formats_command() -> None:
    """List the supported formats (for --from / --to)."""
    from assay.formats import FORMAT_MODULES

    table = Table(title="Formats", header_style="bold")
    table.add_column("name")
    table.add_column("description")
    for name in FORMAT_MODULES:
        table.add_row(name, FORMAT_DESCRIPTIONS.get(name, ""))
    stdout_console().print(table)
