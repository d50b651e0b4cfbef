"""The `assay` command line: thin wrappers over formats, engine, store and reports.

Exit codes: 0 every case passed; 1 a case failed or was not evaluated; 2 a usage or
input error (bad flags, unreadable data, unknown format or metric); 130 interrupted.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from assay import __version__
from assay._cli_common import (
    FromOption,
    MapOption,
    StoreOption,
    command_app,
    stdout_console,
    user_errors,
)
from assay.errors import ConfigError, InputError, UnknownFormatError

if TYPE_CHECKING:
    from assay.model.core import EvalSet

EXIT_INTERRUPTED = 130

FORMAT_DESCRIPTIONS: dict[str, str] = {
    "adk": "Google ADK eval set (*.evalset.json): golden conversations or scenarios",
    "adk-legacy": "ADK legacy test file (*.test.json): queries with expected tool use",
    "adk-config": "ADK test_config.json / eval_config.json criteria (assay convert only)",
    "vertex": "Vertex AI eval rows (JSON, JSONL, CSV): prompt, response, trajectories",
    "mlflow": "Databricks / MLflow rows: request, response, expected_response, context",
    "ces": "Google CES Evaluation resources (JSON or YAML): goldens or scenarios",
    "trace": "Recorded conversations (JSONL of assay Turns), scored without an agent",
}

app = command_app("assay", "Evaluate AI agents: trajectories, responses, retrieval and judges.")


def parse_mapping(items: Sequence[str] | None) -> dict[str, str] | None:
    """`--map SRC=DST` flags (also comma-separated) as a column mapping."""
    if not items:
        return None
    mapping: dict[str, str] = {}
    for item in items:
        for pair in item.split(","):
            src, sep, dst = pair.partition("=")
            if not sep or not src.strip() or not dst.strip():
                raise ConfigError(
                    f"--map {pair!r}: expected SRC=DST (a column of the file = the assay "
                    "field), e.g. --map question=request"
                )
            mapping[src.strip()] = dst.strip()
    return mapping


def parse_metric_flags(items: Sequence[str]) -> dict[str, float | None]:
    """`--metric NAME` / `--metric NAME=THRESHOLD` flags as {name: threshold or None}."""
    wanted: dict[str, float | None] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not name:
            raise ConfigError(f"--metric {item!r}: expected NAME or NAME=THRESHOLD")
        threshold: float | None = None
        if sep:
            try:
                threshold = float(raw)
            except ValueError:
                raise ConfigError(
                    f"--metric {item!r}: the threshold must be a number, e.g. {name}=0.8"
                ) from None
        wanted[name] = threshold
    return wanted


def check_format(name: str, *, eval_set: bool) -> None:
    from assay.formats import EVAL_SET_FORMATS, FORMAT_MODULES

    valid = EVAL_SET_FORMATS if eval_set else tuple(FORMAT_MODULES)
    if name not in valid:
        raise UnknownFormatError(f"unknown format {name!r}; valid formats are: {', '.join(valid)}")


def check_distinct_ids(evalsets: Sequence[EvalSet], files: Sequence[Path]) -> None:
    # Checked before a run is stored, so an input error leaves no ERROR run behind.
    seen: dict[str, Path] = {}
    for evalset, path in zip(evalsets, files, strict=True):
        if evalset.id in seen:
            raise InputError(
                f"eval set id {evalset.id!r} is also the id of {seen[evalset.id]}; "
                "give each file a distinct eval set id",
                file=str(path),
            )
        seen[evalset.id] = path


@contextmanager
def gc_paused(pause: bool) -> Iterator[None]:
    """Pause the cyclic GC while scoring recorded data (which makes no cycles).

    Scoring 100k rows allocates millions of small objects; each full collection would
    walk them all. Agent runs keep the GC on: adapters and asyncio make real cycles.
    """
    if not pause or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@app.command("convert")
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


@app.command("runs")
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


@app.command("metrics")
def metrics_command() -> None:
    """List the registered metrics: name, what each needs, default threshold."""
    with user_errors():
        from assay.metrics import get_metric_class, metric_names

        table = Table(title="Metrics", header_style="bold")
        table.add_column("name", no_wrap=True)
        for column in ("family", "needs", "threshold", "description"):
            table.add_column(column, overflow="fold")
        for name in metric_names():
            cls = get_metric_class(name)
            threshold = "informational" if cls.informational else str(cls.default_threshold)
            if cls.default_threshold is None and not cls.informational:
                threshold = "-"
            table.add_row(
                name, cls.family, ", ".join(sorted(cls.needs)), threshold, cls.description
            )
    stdout_console().print(table)


@app.command("formats")
def formats_command() -> None:
    """List the supported formats (for --from / --to)."""
    from assay.formats import FORMAT_MODULES

    table = Table(title="Formats", header_style="bold")
    table.add_column("name")
    table.add_column("description")
    for name in FORMAT_MODULES:
        table.add_row(name, FORMAT_DESCRIPTIONS.get(name, ""))
    stdout_console().print(table)


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


def _mount_subcommands() -> None:
    # Imported here, after the helpers above, which these modules import from this one.
    from assay.cli_eval import eval_command
    from assay.cli_judge import judge_app
    from assay.cli_service import keys_app, serve_command

    app.command("eval")(eval_command)
    app.add_typer(judge_app, name="judge")
    app.command("serve")(serve_command)
    app.add_typer(keys_app, name="keys")


_mount_subcommands()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
