"""`assay convert`: move an eval set (or a config) between formats."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.common import (
    FromOption,
    MapOption,
    check_format,
    parse_mapping,
    stdout_console,
    user_errors,
)
from assay.errors import ConfigError


def convert_command(
    source: Annotated[Path, typer.Argument(help="File to convert.")],
    target: Annotated[Path, typer.Argument(help="File to write.")],
    to: Annotated[str, typer.Option("--to", help="Output format.")],
    from_format: FromOption = None,
    map_: MapOption = None,
) -> None:
    """Convert an eval set between formats (or a config to ADK's test_config.json)."""
    with user_errors():
        from assay import formats

        check_format(to, eval_set=False)
        if from_format is not None:
            check_format(from_format, eval_set=False)
        mapping = parse_mapping(map_)
        if to == "adk-config" or from_format == "adk-config":
            if to != "adk-config":
                raise ConfigError("a config converts only to adk-config (--to adk-config)")
            from assay.config import load_config
            from assay.formats.adk_config import write_config

            write_config(load_config(source), target)
            stdout_console().print(f"wrote {target} (adk-config)")
            return
        evalset = formats.load(source, from_format, mapping)
        formats.save(evalset, target, to)
        count = len(evalset.cases)
        stdout_console().print(f"wrote {target} ({count} case{'s' if count != 1 else ''}, {to})")
