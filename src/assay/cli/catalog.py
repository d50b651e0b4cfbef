"""`assay metrics` and `assay formats`: what assay knows."""

from __future__ import annotations

from rich.table import Table

from assay.cli.common import (
    FORMAT_DESCRIPTIONS,
    stdout_console,
    user_errors,
)


def metrics_command() -> None:
    """List the registered metrics: name, family, range, what each needs, default threshold."""
    with user_errors():
        from assay.metrics import get_metric_class, metric_names

        table = Table(title="Metrics", header_style="bold")
        table.add_column("name", no_wrap=True)
        for column in ("family", "range", "needs", "threshold", "description"):
            table.add_column(column, overflow="fold")
        for name in metric_names():
            cls = get_metric_class(name)
            threshold = "informational" if cls.informational else str(cls.default_threshold)
            if cls.default_threshold is None and not cls.informational:
                threshold = "-"
            low_high = cls.score_range
            span = f"{low_high[0]:g}..{low_high[1]:g}" if low_high else "-"
            table.add_row(
                name, cls.family, span, ", ".join(sorted(cls.needs)), threshold, cls.description
            )
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
