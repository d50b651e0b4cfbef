"""`assay compare`, `assay report` and `assay view`: look at stored runs.

`compare RUN_A RUN_B [RUN_C ...]` compares each later run with the first; with
`--fail-on-regression` it exits 1 when a case that passed no longer passes or a
metric's mean fell beyond noise (its paired bootstrap interval lies below zero).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from assay.cli.common import (
    HtmlOption,
    RunArgument,
    StoreOption,
    stderr_console,
    stdout_console,
    user_errors,
)


def compare_command(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="Two or more runs (id, unique prefix or 'latest'); the first is the base.",
            show_default=False,
        ),
    ],
    store: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 when a case or a metric mean regressed beyond noise.",
        ),
    ] = False,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap resampling.")] = 0,
) -> None:
    """Compare stored runs of overlapping eval sets: per-case and per-metric deltas."""
    with user_errors():
        from assay.errors import ConfigError
        from assay.report.compare import compare_many
        from assay.store.reading import load_run, open_existing

        if len(runs) < 2:
            raise ConfigError("compare needs two or more runs: assay compare RUN_A RUN_B")
        db = open_existing(store)
        try:
            loaded = [load_run(db, ref) for ref in runs]
        finally:
            db.close()
        results = [result for _, result in loaded]
        comparisons = compare_many(results, seed=seed, names=[info.name for info, _ in loaded])
    console = stdout_console()
    if as_json:
        docs = [c.to_dict() for c in comparisons]
        doc = docs[0] if len(docs) == 1 else {"base_run": results[0].run_id, "comparisons": docs}
        typer.echo(json.dumps(doc, indent=2, allow_nan=False, default=str))
    else:
        from assay.report.console_runs import render_comparison

        for comparison in comparisons:
            render_comparison(comparison, console)
    regressed = any(c.has_regression for c in comparisons)
    raise typer.Exit(1 if fail_on_regression and regressed else 0)


def report_command(
    run: RunArgument,
    html: HtmlOption = None,
    store: StoreOption = None,
) -> None:
    """Write a stored run's reports: `--html report.html` (self-contained, no network)."""
    with user_errors():
        from assay.errors import ConfigError
        from assay.report.html import write_html
        from assay.store.reading import load_run, open_existing

        if html is None:
            raise ConfigError("assay report: say which report to write, e.g. --html report.html")
        db = open_existing(store)
        try:
            info, result = load_run(db, run)
        finally:
            db.close()
        path = write_html(result, html, run=info)
    stderr_console().print(
        f"wrote {path} (run {info.id})", style="dim", highlight=False, markup=False
    )


def view_command(
    store: StoreOption = None,
    host: Annotated[str, typer.Option(help="Address to listen on (loopback only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    no_open: Annotated[bool, typer.Option("--no-open", help="Do not open a browser.")] = False,
) -> None:
    """A local web app over the store: runs, run reports, cases, comparisons."""
    with user_errors():
        from assay.errors import ConfigError

        try:
            import uvicorn

            from assay.view import create_view_app
        except ImportError:
            raise ConfigError(
                "assay view needs the service extra: pip install -e '.[service]'"
            ) from None
        host_name = host.strip("[]").lower()
        if not (host_name in ("localhost", "::1") or host_name.startswith("127.")):
            raise ConfigError(
                f"--host {host}: assay view has no authentication, so it only listens on "
                "a loopback address; use `assay serve` (the same UI at /ui, behind API keys)"
            )
        from assay.store.reading import open_existing

        db = open_existing(store)
    url = f"http://{host}:{port}/"
    stderr_console().print(
        f"assay view on {url} (store {db.url}); Ctrl-C stops it", highlight=False
    )
    if not no_open:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    try:
        # The local viewer writes labels, and eval set files under the folder it was
        # started in.
        app = create_view_app(db, local_writes=True, cases_root=Path.cwd())
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        db.close()
