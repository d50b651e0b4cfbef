"""`assay runs`: the runs kept in the store; `assay runs show RUN`: one of them.

RUN is a full run id, a unique prefix of one, or `latest`; `--case ID` shows one case
of it in full (its error, scores and the agent's traceback).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.text import Text

from assay.cli.common import (
    RunArgument,
    StoreOption,
    command_app,
    stdout_console,
    user_errors,
)

runs_app = command_app("runs", "List stored runs, or show one (assay runs show RUN).")
runs_app.info.no_args_is_help = False
runs_app.info.invoke_without_command = True


@runs_app.callback()
def runs_command(
    ctx: typer.Context,
    store: StoreOption = None,
    limit: Annotated[int, typer.Option(help="Most recent runs to list.")] = 20,
) -> None:
    """List stored runs, newest first (full ids: pass one, a unique prefix or `latest`)."""
    if ctx.invoked_subcommand is not None:
        return
    from assay.report.console_runs import runs_table, short_ids

    with user_errors():
        from assay.store.reading import open_existing

        with open_existing(store) as db:
            infos = db.list_runs(limit=limit)
            short = short_ids([i.id for i in infos], lambda prefix: _resolves(db, prefix))
    console = stdout_console()
    if not infos:
        console.print("no runs stored yet: run `assay eval ...` first")
        return
    console.print(runs_table(infos, width=console.width, short=short))
    console.print(
        Text(
            "ids are shown as unique prefixes: every command takes one; "
            "`assay runs show ID` prints the full id",
            style="dim",
        )
    )


def _resolves(db: Any, prefix: str) -> bool:
    """True when the store takes `prefix` as the reference of exactly one run."""
    from assay.errors import AssayError

    try:
        db.find_run(prefix)
    except AssayError:  # no run, or several: the ambiguity is the store's error
        return False
    return True


@runs_app.command("show")
def show_command(
    run: RunArgument,
    store: StoreOption = None,
    case: Annotated[
        str | None,
        typer.Option(
            "--case",
            help="Only this case (ID or SET/ID): every run of it, with its error, scores"
            " and the agent's traceback.",
        ),
    ] = None,
) -> None:
    """A stored run: its settings, case table, why cases failed and the summary."""
    with user_errors():
        from assay.store.reading import load_stored_run

        info, result = load_stored_run(store, run)
        if case is not None:
            from assay.report.console_runs import print_cases, select_case

            print_cases(stdout_console(), select_case(result.cases, case))
            return
    from assay.report.console import render_results
    from assay.report.console_runs import run_header

    console = stdout_console()
    console.print(run_header(info))
    if not result.cases:
        console.print("the run has no stored case results yet")
        return
    render_results(result, console)
    from assay.judges.stats import cost_line

    cost = cost_line(info.summary or {})  # what the run's judges cost (docs/cost.md)
    if cost is not None:
        console.print(cost)
