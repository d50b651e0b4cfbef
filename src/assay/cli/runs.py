"""`assay runs`: the runs kept in the store."""

from __future__ import annotations

from typing import Annotated

import typer

from assay.cli.common import (
    StoreOption,
    stdout_console,
    user_errors,
)


def runs_command(
    store: StoreOption = None,
    limit: Annotated[int, typer.Option(help="Most recent runs to list.")] = 20,
) -> None:
    """List stored runs, newest first."""
    with user_errors():
        from assay.store import Store

        db = Store.open(store)
        try:
            infos = db.list_runs(limit=limit)
        finally:
            db.close()
    console = stdout_console()
    if not infos:
        console.print("no runs stored yet: run `assay eval ...` first")
        return
    from assay.report.console import runs_table

    console.print(runs_table(infos))
