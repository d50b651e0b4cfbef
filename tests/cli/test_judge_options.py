"""The `assay judge` commands read their shared options through one place
(`assay.cli.judge_options`): a bad `--criterion` or call limit is the same exit 2,
naming the option, in calibrate, align, stability and probe, before any judge call."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from assay.cli import app
from assay.cli.common import grouped_options

runner = CliRunner()


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps({"id": "a", "prompt": "p", "response": "r",
                                "reference": "r", "label": "pass"}) + "\n")  # fmt: skip
    base = ["--judge", "openai:j", "--metric", "final_response_match_v2", "--no-store"]
    return {
        "calibrate": ["judge", "calibrate", str(data), *base],
        "align": ["judge", "align", str(data), *base[:4], "--no-save"],
        "stability": ["judge", "stability", str(data), *base],
        "probe": ["judge", "probe", str(data), *base, "--bias", "verbosity"],
    }


@pytest.mark.parametrize("command", ["calibrate", "align", "stability", "probe"])
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--criterion", "[1]"], "--criterion must be a JSON object of the metric's options"),
        (["--criterion", "{"], "--criterion is not valid JSON"),
        (["--criterion", "[" * 100_000], "--criterion is nested too deeply to read"),
        (["--judge-concurrency", "0"], "--judge-concurrency must be at least 1, got 0"),
        (["--judge-timeout", "0"], "--judge-timeout must be positive, got 0.0"),
    ],
)
def test_shared_options_are_refused_alike(
    command: str, extra: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing is called
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    result = runner.invoke(app, [*_commands(tmp_path)[command], *extra])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())


CALLS = ["--base-url", "--criterion", "--store", "--no-store", "--no-cache",
         "--judge-concurrency", "--judge-timeout"]  # fmt: skip
FLAGS = {
    "calibrate": ["--judge", "--metric", "labels", "--samples", *CALLS, "--out", "--min-kappa",
                  "--from-store", "--run", "--json"],
    "stability": ["data", "--judge", "--metric", "--repeats", "--samples", "--max-flip-rate",
                  "--from", *CALLS, "--json"],
    "probe": ["data", "--judge", "--metric", "--bias", "--samples", "--fail-on-bias", "--from",
              *CALLS, "--json"],
}  # fmt: skip


@pytest.mark.parametrize("command", sorted(FLAGS))
def test_the_shared_options_stand_where_each_command_lists_them(command: str) -> None:
    """`JudgeCalls` is declared once; each command shows its flags in the place its
    parameter has (the order and defaults users had when each command declared them)."""
    group = typer.main.get_command(app)
    found = group.commands["judge"].commands[command]  # type: ignore[attr-defined]
    flags = [p.opts[0] if p.param_type_name == "option" else p.name for p in found.params]
    assert flags == FLAGS[command]
    defaults = {p.opts[0]: p.default for p in found.params}
    assert defaults["--judge-concurrency"] == 8 and defaults["--judge-timeout"] == 60.0
    assert defaults["--no-store"] is False and defaults["--store"] is None


@dataclass(frozen=True)
class _Pair:
    left: Annotated[int, typer.Option("--left", help="The left one.")] = 1
    right: Annotated[str | None, typer.Option("--right", help="The right one.")] = None


def test_grouped_options_gather_a_dataclass_in_its_place() -> None:
    seen: list[tuple[str, _Pair, bool]] = []

    def command(
        name: Annotated[str, typer.Argument(help="A name.")],
        pair: _Pair = _Pair(),
        loud: Annotated[bool, typer.Option("--loud", help="Loud.")] = False,
    ) -> None:
        """One command."""
        seen.append((name, pair, loud))

    one = typer.Typer()
    one.command()(grouped_options(command))
    result = runner.invoke(one, ["x", "--right", "r", "--loud"])
    assert result.exit_code == 0, result.output
    assert seen == [("x", _Pair(left=1, right="r"), True)]
    result = runner.invoke(one, ["--help"], terminal_width=200)
    assert (
        result.output.index("--left")
        < result.output.index("--right")
        < result.output.index("--loud")
    )
    assert "One command." in result.output


def test_grouped_options_refuse_a_field_named_as_a_parameter() -> None:
    def command(pair: _Pair, left: int = 0) -> None:
        """Two `left`s."""

    with pytest.raises(TypeError, match="repeats a parameter's name"):
        grouped_options(command)
