"""The `assay` command line: thin wrappers over formats, engine, store and reports.

One module per command group (`eval`, `convert`, `runs`, `report` (compare, report,
view), `catalog`, `judge`, `cache`, `serve`, `cases`),
all importing only `assay.cli.common`; this package mounts them on one Typer app.

Exit codes: 0 every case passed; 1 a case failed or was not evaluated; 2 a usage or
input error (bad flags, unreadable data, unknown format or metric); 130 interrupted.
"""

from __future__ import annotations

from typing import Annotated, NoReturn

import typer

from assay._version import __version__
from assay.cli.cache import cache_app
from assay.cli.cases import cases_app
from assay.cli.cases_generate import generate_command  # noqa: F401  (cases generate)
from assay.cli.catalog import formats_command, metrics_command
from assay.cli.common import (
    EXIT_INTERRUPTED,
    FORMAT_DESCRIPTIONS,
    as_program,
    command_app,
    parse_mapping,
    parse_metric_flags,
    run_program,
    show_assay_warnings,
)
from assay.cli.convert import convert_command
from assay.cli.eval import eval_command
from assay.cli.judge import judge_app
from assay.cli.labels import labels_app
from assay.cli.redteam import redteam_command
from assay.cli.report import compare_command, report_command, view_command
from assay.cli.runs import runs_app
from assay.cli.serve import keys_app, serve_command

__all__ = [
    "EXIT_INTERRUPTED",
    "FORMAT_DESCRIPTIONS",
    "app",
    "main",
    "parse_mapping",
    "parse_metric_flags",
    "program",
]

app = command_app("assay", "Evaluate AI agents: trajectories, responses, retrieval and judges.")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"assay {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """Evaluate AI agents: trajectories, responses, retrieval and judges."""


app.command("eval")(eval_command)
app.command("convert")(convert_command)
app.add_typer(runs_app, name="runs")
app.command("compare")(compare_command)
app.command("report")(report_command)
app.command("view")(view_command)
app.command("metrics")(metrics_command)
app.command("formats")(formats_command)
app.add_typer(judge_app, name="judge")
app.add_typer(labels_app, name="labels")
app.add_typer(cache_app, name="cache")
app.command("serve")(serve_command)
app.command("redteam")(redteam_command)
app.add_typer(keys_app, name="keys")
app.add_typer(cases_app, name="cases")


def main() -> None:
    """Run the command line on `sys.argv`; raises SystemExit with the exit code."""
    as_program()
    show_assay_warnings()
    app()


def program() -> NoReturn:
    """The `assay` program (its console script, `python -m assay`): `main`, then the
    process ends with its exit code (`run_program`)."""
    run_program(main)


if __name__ == "__main__":
    program()
