"""`assay eval` and `assay serve` read their options into one typed object
(`cli.eval.EvalOptions`, `cli.serve.ServeOptions`, built into typer commands by
`cli.common.options_command`): the options a user sees are the ones the commands had
as 42 and 20 function parameters, flag for flag and help for help.

`data/cli_options.json` holds each command's options as they were at 787c084 (plus
those added since: a new field is a new option; rewrite the file with
`python tests/cli/test_cli_options.py` and review its diff)."""

from __future__ import annotations

import json
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from assay.cli import app

GOLDEN = Path(__file__).parent / "data" / "cli_options.json"
COMMANDS = ("eval", "serve")


def _command(name: str) -> typer.core.TyperCommand:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    command = group.commands[name]
    assert isinstance(command, typer.core.TyperCommand)
    return command


def _plain(value: object) -> object:
    return value if value is None or isinstance(value, str | int | float | bool) else repr(value)


def describe(name: str) -> list[dict[str, object]]:
    """Each parameter as a user meets it: flags, help, default, type, bounds, kind."""
    described = []
    for param in _command(name).params:
        found = {key: _plain(getattr(param, key, None)) for key in _SEEN}
        found["opts"] = list(param.opts)
        found["secondary_opts"] = list(param.secondary_opts)
        found["type"] = repr(param.type_descriptor.annotation)
        found["kind"] = type(param).__name__
        described.append(found)
    return described


_SEEN = (
    "name",
    "help",
    "default",
    "required",
    "nargs",
    "multiple",
    "is_flag",
    "count",
    "min",
    "max",
    "hidden",
    "envvar",
    "show_default",
    "metavar",
    "rich_help_panel",
)


@pytest.mark.parametrize("name", COMMANDS)
def test_the_options_are_the_ones_users_had(name: str) -> None:
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))[name]
    assert describe(name) == expected


@pytest.mark.parametrize("name", COMMANDS)
def test_help_lists_every_option(name: str) -> None:
    result = CliRunner().invoke(app, [name, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for param in _command(name).params:
        if isinstance(param, typer.core.TyperOption):
            assert param.opts[0] in result.output


def test_each_field_is_one_option_in_order() -> None:
    from assay.cli.eval import EvalOptions
    from assay.cli.serve import ServeOptions

    for name, options in (("eval", EvalOptions), ("serve", ServeOptions)):
        assert [p.name for p in _command(name).params] == [f.name for f in fields(options)]


if __name__ == "__main__":  # rewrite the golden file from the commands as they are
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps({n: describe(n) for n in COMMANDS}, indent=1) + "\n")
    sys.exit(0)
