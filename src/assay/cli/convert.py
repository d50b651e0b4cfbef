"""`assay convert`: move an eval set (or a config) between formats."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from assay.cli.common import (
    FromOption,
    MapOption,
    check_format,
    output_file,
    parse_mapping,
    stderr_console,
    stdout_console,
    user_errors,
)
from assay.errors import ConfigError


def convert_command(
    source: Annotated[Path, typer.Argument(help="File to convert.")],
    target: Annotated[
        str,
        typer.Argument(
            help="File to write (a folder: --to adk-config writes test_config.json in it)."
        ),
    ],
    to: Annotated[str, typer.Option("--to", help="Output format.")],
    from_format: FromOption = None,
    map_: MapOption = None,
    lossy: Annotated[
        bool,
        typer.Option(
            "--lossy",
            help="Convert even when the target cannot hold some fields: drop them and "
            "print how many of each were dropped (without it, such a conversion is refused).",
        ),
    ] = False,
    sidecar: Annotated[
        bool,
        typer.Option(
            "--sidecar",
            help="Keep what the target cannot hold in TARGET.assay-sidecar.json beside it "
            "(the target stays a plain file of its format); converting TARGET again reads "
            "it back.",
        ),
    ] = False,
) -> None:
    """Convert an eval set between formats (or a config to ADK's test_config.json).

    Refuses (exit 2) when the target format cannot hold a field of the source, naming
    each case and field, unless --lossy or --sidecar; a source with a sidecar beside it
    is read with it. See docs/convert.md for what each format holds.
    """
    with user_errors():
        from assay.formats._loss import by_field
        from assay.formats.convert import convert_file

        check_format(to, eval_set=False)
        if from_format is not None:
            check_format(from_format, eval_set=False)
        mapping = parse_mapping(map_)
        if to == "adk-config" or from_format == "adk-config":
            if to != "adk-config":
                raise ConfigError("a config converts only to adk-config (--to adk-config)")
            from assay.config import load_config
            from assay.formats.adk_config import write_config

            # ADK reads a config as test_config.json beside the eval files.
            config_file = output_file(target, folder_name="test_config.json", what="the config")
            write_config(load_config(source), config_file)
            stdout_console().print(f"wrote {config_file} (adk-config)", markup=False)
            return
        written = output_file(target, what="the converted file")
        done = convert_file(
            source,
            written,
            to,
            from_format=from_format,
            mapping=mapping,
            lossy=lossy,
            sidecar=sidecar,
        )
        out = stdout_console()
        back = done.restored_from
        if back is not None:
            out.print(
                f"read {back.sidecar} ({back.restored} case"
                f"{'s' if back.restored != 1 else ''} restored whole)",
                soft_wrap=True,
                markup=False,
            )
            for case_id in back.edited:
                message = (
                    f"warning: case {case_id!r} differs from what was converted: taken "
                    f"as {source.name} says (its round-trip-only fields are not restored)"
                )
                stderr_console().print(Text(message, style="yellow"), soft_wrap=True)
        count = len(done.evalset.cases)
        out.print(
            f"wrote {written} ({count} case{'s' if count != 1 else ''}, {to})", soft_wrap=True
        )
        reports = ((f"kept in {done.kept_in}", done.kept), ("dropped", done.dropped))
        for what, losses in reports:
            if not losses:
                continue
            out.print(f"{what} ({to} cannot hold them):", soft_wrap=True, markup=False)
            for name, n, cases in by_field(losses):
                where = f" (in {cases} case{'s' if cases != 1 else ''})" if cases else ""
                out.print(f"  {name}: {n}{where}", soft_wrap=True, markup=False)
