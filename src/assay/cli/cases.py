"""`assay cases ...`: write eval set files (ADK, CES, Vertex) in their own format.

`new FILE`, `list FILE`, `rm FILE CASE`, and `add FILE --from-run RUN | --from-trace
TRACES | --from-ces CONVERSATION`: cases made from what an agent actually did. Other
modules add their commands to `cases_app` (`assay.cli.cases_generate`).

Exit codes: 0 written (or listed); 2 a usage or input error (nothing is written).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from assay.cli.common import StoreOption, command_app, stdout_console, user_errors
from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.cases.edit import Edit

cases_app = command_app(
    "cases", "Author eval sets: new, list, rm, and add cases from runs, traces, conversations."
)


@cases_app.callback()
def _cases_group() -> None:
    """Author eval sets: new, list, rm, and add cases from runs, traces, conversations."""


FileArgument = Annotated[
    Path, typer.Argument(help="The eval set file (ADK, CES or Vertex JSON / JSON lines).")
]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Show the diff; write nothing.")]


@cases_app.command("new")
def new_command(
    file: Annotated[Path, typer.Argument(help="The eval set file to create.")],
    fmt: Annotated[str, typer.Option("--format", help="adk (default), ces or vertex.")] = "adk",
    set_id: Annotated[
        str | None, typer.Option("--id", help="The eval set id (default: the file's name).")
    ] = None,
) -> None:
    """Create an empty eval set file (never overwrites one)."""
    from assay.cases.api import new_file

    with user_errors():
        new_file(file, fmt, set_id=set_id)
    stdout_console().print(f"created {file} (an empty {fmt} eval set)", soft_wrap=True)


@cases_app.command("list")
def list_command(file: FileArgument) -> None:
    """List the cases of an eval set: id, kind, turns and expected tool calls."""
    from assay.cases.api import list_cases

    with user_errors():
        fmt, listed = list_cases(file)
    console = stdout_console()
    console.print(f"{file}: {fmt}, {len(listed)} case(s)", soft_wrap=True, highlight=False)
    table = Table()
    for name in ("case", "kind", "turns", "tool calls"):
        table.add_column(name, justify="right" if name in ("turns", "tool calls") else "left")
    for item in listed:
        table.add_row(item.id, item.kind, str(item.turns), str(item.tool_calls))
    console.print(table)


@cases_app.command("rm")
def rm_command(
    file: FileArgument,
    case: Annotated[list[str], typer.Argument(help="The id of a case to remove (several: each).")],
    dry_run: DryRunOption = False,
) -> None:
    """Remove cases from an eval set; the others keep their text."""
    from assay.cases.api import remove_case

    with user_errors():
        edit = remove_case(file, case, dry_run=dry_run)
    _report(edit, dry_run=dry_run)


@cases_app.command("add")
def add_command(
    file: FileArgument,
    from_run: Annotated[
        str | None,
        typer.Option("--from-run", help="A stored run (id, prefix, latest): its case runs."),
    ] = None,
    from_trace: Annotated[
        Path | None,
        typer.Option("--from-trace", help="A trace file (OpenTelemetry, OpenInference, MLflow)."),
    ] = None,
    from_ces: Annotated[
        str | None,
        typer.Option(
            "--from-ces",
            help="A CES Conversation JSON file (as GetConversation answers), or the name "
            "of one assay serve recorded (apps/A/conversations/EVAL-RUN-INDEX, in --store).",
        ),
    ] = None,
    case: Annotated[
        list[str] | None,
        typer.Option(
            "--case",
            help="--from-run: only this case (glob or SET/ID; repeatable). "
            "--from-ces: the new case's id.",
        ),
    ] = None,
    session: Annotated[
        list[str] | None,
        typer.Option("--session", help="--from-trace: only this session (glob; repeatable)."),
    ] = None,
    failed: Annotated[
        bool, typer.Option("--failed", help="--from-run: only the cases that failed.")
    ] = False,
    update: Annotated[
        bool,
        typer.Option(
            "--update", help="Replace the expectations of cases the file has (bless the run)."
        ),
    ] = False,
    store: StoreOption = None,
    dry_run: DryRunOption = False,
) -> None:
    """Add cases expecting what the agent did: from a run, traces or a CES conversation."""
    from assay.cases import api

    sources = [s for s in (from_run, from_trace, from_ces) if s is not None]
    with user_errors():
        if len(sources) != 1:
            raise ConfigError("give exactly one of --from-run, --from-trace, --from-ces")
        if session and from_trace is None:
            raise ConfigError("--session selects sessions of --from-trace")
        if failed and from_run is None:
            raise ConfigError("--failed selects case runs of --from-run")
        if from_run is not None:
            edit = api.add_from_run(
                file, from_run, cases=case, failed=failed, update=update, store=store,
                dry_run=dry_run,
            )  # fmt: skip
        elif from_trace is not None:
            if case:
                raise ConfigError("--from-trace selects with --session, not --case")
            edit = api.add_from_trace(
                file, from_trace, sessions=session, update=update, dry_run=dry_run
            )
        else:
            assert from_ces is not None
            if case and len(case) > 1:
                raise ConfigError("--from-ces makes one case: give one --case ID")
            edit = api.add_from_ces(
                file, from_ces, case_id=case[0] if case else None, update=update,
                store=store, dry_run=dry_run,
            )  # fmt: skip
    _report(edit, dry_run=dry_run)


def _report(edit: Edit, *, dry_run: bool) -> None:
    console = stdout_console()
    if dry_run:
        console.out(edit.diff or "(no change)\n", end="", highlight=False)
    parts = [
        f"{label} {', '.join(ids)}"
        for label, ids in (
            ("added", edit.added),
            ("updated", edit.updated),
            ("unchanged", edit.unchanged),
            ("removed", edit.removed),
        )
        if ids
    ]
    verb = "would write" if dry_run else "wrote"
    if not edit.changed:
        console.print(
            f"{edit.path}: no change ({'; '.join(parts) or 'nothing to do'})", soft_wrap=True
        )
        return
    checked = f" (checked with {', '.join(edit.validated_with)})" if edit.validated_with else ""
    console.print(f"{verb} {edit.path}: {'; '.join(parts)}{checked}", soft_wrap=True)
