"""What the `assay` command modules share: consoles, the error guard, app and options.

Kept apart from `assay.cli` (which mounts the other command modules) so that
`cli_eval`, `cli_judge` and `cli_service` can import it whichever is imported first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from assay.errors import AssayError

StoreOption = Annotated[
    str | None, typer.Option("--store", help="Store URL (default .assay/assay.db).")
]
FromOption = Annotated[
    str | None, typer.Option("--from", help="Input format (detected when not given).")
]
MapOption = Annotated[
    list[str] | None, typer.Option("--map", help="Column mapping SRC=DST (repeatable).")
]


def command_app(name: str, help: str) -> typer.Typer:
    """A Typer app (or command group) with assay's settings: help when run bare."""
    return typer.Typer(
        name=name,
        help=help,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_show_locals=False,
    )


def stdout_console() -> Console:
    # Logs and CI have no terminal width; a wider default keeps metric columns readable.
    if sys.stdout.isatty() or "COLUMNS" in os.environ:
        return Console()
    return Console(width=120)


def stderr_console() -> Console:
    return Console(stderr=True)


@contextmanager
def user_errors() -> Iterator[None]:
    """Show assay's own errors as one red line and exit with their code, no traceback."""
    try:
        yield
    except AssayError as exc:
        stderr_console().print(Text(f"error: {exc}", style="bold red"), soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None
