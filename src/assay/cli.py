"""The `assay` command line: thin wrappers over formats, engine, store and reports.

Exit codes: 0 every case passed; 1 a case failed or was not evaluated; 2 a usage or
input error (bad flags, unreadable data, unknown format or metric); 130 interrupted.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay import __version__
from assay.errors import AssayError, ConfigError, InputError, UnknownFormatError
from assay.model.results import Status

if TYPE_CHECKING:
    from assay.engine.judging import JudgeRunOptions

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

app = typer.Typer(
    name="assay",
    help="Evaluate AI agents: trajectories, responses, retrieval and judges.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


def _mount_subcommands() -> None:
    from assay.cli_judge import judge_app

    app.add_typer(judge_app, name="judge")


_mount_subcommands()


def _stdout() -> Console:
    # Logs and CI have no terminal width; a wider default keeps metric columns readable.
    if sys.stdout.isatty() or "COLUMNS" in os.environ:
        return Console()
    return Console(width=120)


def _stderr() -> Console:
    return Console(stderr=True)


@contextmanager
def _user_errors() -> Iterator[None]:
    """Show assay's own errors as one red line and exit with their code, no traceback."""
    try:
        yield
    except AssayError as exc:
        _stderr().print(Text(f"error: {exc}", style="bold red"), soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None


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


def _check_distinct_ids(evalsets: Sequence[Any], files: Sequence[Path]) -> None:
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


def _config_for(config: Path | None, first_data: Path) -> Any:
    from assay.config import find_config_beside, load_config

    if config is not None:
        return load_config(config)
    found = find_config_beside(first_data)
    return load_config(found) if found is not None else None


@app.command("eval")
def eval_command(
    data: Annotated[list[Path], typer.Argument(help="Eval set / dataset files.")],
    from_format: Annotated[
        str | None, typer.Option("--from", help="Input format (detected when not given).")
    ] = None,
    map_: Annotated[
        list[str] | None, typer.Option("--map", help="Column mapping SRC=DST (repeatable).")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="test_config.json (default: the one beside the data)."),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", "-m", help="NAME or NAME=THRESHOLD; replaces the criteria."),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Agent to run, as module:attribute.")
    ] = None,
    runs: Annotated[int, typer.Option(help="Runs of every case (pass@k, pass^k).")] = 1,
    concurrency: Annotated[int, typer.Option(help="Cases evaluated at once.")] = 4,
    timeout: Annotated[
        float, typer.Option(help="Per-case agent timeout in seconds (0: none).")
    ] = 300.0,
    out: Annotated[Path | None, typer.Option("--out", help="Write the JSON report.")] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML.")] = None,
    csv_path: Annotated[Path | None, typer.Option("--csv", help="Write the rows as CSV.")] = None,
    store: Annotated[
        str | None, typer.Option("--store", help="Store URL (default .assay/assay.db).")
    ] = None,
    no_store: Annotated[
        bool,
        typer.Option(
            "--no-store", help="Do not record the run (judge replies are cached for it only)."
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Only the summary line; no table or bar.")
    ] = False,
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge",
            help="LLM judge for judged metrics without their own judge_model: openai:NAME,"
            " gemini-NAME / gemini:NAME, anthropic:NAME or local:PATH.gguf.",
        ),
    ] = None,
    judge_concurrency: Annotated[
        int, typer.Option("--judge-concurrency", help="Judge calls in flight per backend.")
    ] = 8,
    no_cache: Annotated[
        bool,
        typer.Option("--no-cache", help="Call the judge even for cached replies (still cached)."),
    ] = False,
) -> None:
    """Evaluate eval sets: run an agent on them, or score their recorded responses."""
    with _user_errors():
        from assay.engine.judging import JudgeRunOptions

        # Checked here, so a mistyped --judge is a usage error before any work starts.
        judges = JudgeRunOptions(model=judge, concurrency=judge_concurrency, use_cache=not no_cache)
        code = _run_eval(
            data, from_format, map_, config, metric, agent, runs, concurrency, timeout,
            out, junit, csv_path, store, no_store, quiet, judges,
        )  # fmt: skip
    raise typer.Exit(code)


def _run_eval(
    data: list[Path],
    from_format: str | None,
    map_: list[str] | None,
    config: Path | None,
    metric: list[str] | None,
    agent: str | None,
    runs: int,
    concurrency: int,
    timeout: float,
    out: Path | None,
    junit: Path | None,
    csv_path: Path | None,
    store_url: str | None,
    no_store: bool,
    quiet: bool,
    judges: JudgeRunOptions | None = None,
) -> int:
    from assay import formats
    from assay.agents import load_agent
    from assay.engine import RunOptions, build_metrics, run
    from assay.engine.aggregate import build_result
    from assay.report import render_results, summary_text, write_reports
    from assay.report.progress import CaseCollector, ProgressObserver

    console, err = _stdout(), _stderr()
    mapping = parse_mapping(map_)
    if from_format is not None:
        check_format(from_format, eval_set=True)
    names = parse_metric_flags(metric) if metric else None
    cfg = _config_for(config, data[0])
    metrics = build_metrics(cfg, names)
    options = RunOptions(runs=runs, concurrency=concurrency, timeout_s=timeout or None)
    with _gc_paused(agent is None):
        evalsets = formats.load_many(data, from_format, mapping)
    # The loaded eval sets live until the process exits: move them out of the cyclic
    # GC's reach, or every full collection during scoring re-walks millions of objects.
    gc.freeze()
    agent_obj = load_agent(agent) if agent else None
    if cfg is not None and cfg.source and not quiet:
        err.print(Text(f"criteria from {cfg.source}", style="dim"))

    collector = CaseCollector()
    observers: list[Any] = [collector]
    progress = None
    if not quiet and err.is_terminal:
        progress = ProgressObserver(err)
        observers.append(progress)
    db = run_id = recorder = None
    _check_distinct_ids(evalsets, data)
    if not no_store:
        from assay.store import Store, StoreRecorder

        db = Store.open(store_url)
        run_id = db.start_run(
            eval_set_ids=[e.id for e in evalsets],
            metrics=[m.name for m in metrics],
            config=cfg.dump() if cfg is not None else {"criteria": names or {}},
            agent=agent,
            runs=runs,
        )
        recorder = StoreRecorder(db, run_id)
        observers.append(recorder)
    interrupted = False
    try:
        # On success the recorder writes the last results and marks the run COMPLETED.
        with _gc_paused(agent_obj is None):
            result = run(
                evalsets,
                metrics,
                agent=agent_obj,
                options=options,
                observers=observers,
                # The judge cache lives in the store (in memory with --no-store).
                judges=replace(judges, store=db) if judges is not None else None,
            )
    except KeyboardInterrupt:
        interrupted = True
        if progress is not None:
            progress.close()
        result = build_result(
            list(collector.cases), metrics, agent_run=agent_obj is not None, runs=runs
        )
        if recorder is not None:
            recorder.mark_interrupted()
    except BaseException as exc:
        if recorder is not None:
            recorder.mark_error(f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if db is not None:
            db.close()
    result.run_id = run_id

    if not quiet:
        render_results(result, console)
        if "judge/calls" in result.summary:
            from assay.judges.stats import JudgeStats

            console.print(Text(JudgeStats.from_summary(result.summary).describe(), style="dim"))
    else:
        console.print(summary_text(result))
    if interrupted:
        err.print(
            Text(
                f"interrupted: {len(collector.cases)} of {collector.total} case runs completed",
                style="bold yellow",
            )
        )
    written = write_reports(
        result,
        out=out,
        junit=junit,
        csv_path=csv_path,
        eval_set_ids=[e.id for e in evalsets],
        eval_set_files={e.id: str(f) for e, f in zip(evalsets, data, strict=True)},
    )
    for path in written:
        err.print(Text(f"wrote {path}", style="dim"))
    if run_id is not None and not quiet:
        err.print(Text(f"run {run_id} stored", style="dim"))
    # Everything left is garbage at exit; freezing it spares the interpreter's final
    # collection a walk over every result object (about a second per 100k rows).
    gc.freeze()
    if interrupted:
        return EXIT_INTERRUPTED
    return 0 if result.cases and result.status is Status.PASSED else 1


@contextmanager
def _gc_paused(pause: bool) -> Iterator[None]:
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
    from_format: Annotated[
        str | None, typer.Option("--from", help="Input format (detected when not given).")
    ] = None,
    map_: Annotated[
        list[str] | None, typer.Option("--map", help="Column mapping SRC=DST (repeatable).")
    ] = None,
) -> None:
    """Convert an eval set between formats (or a config to ADK's test_config.json)."""
    with _user_errors():
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
            _stdout().print(f"wrote {target} (adk-config)")
            return
        evalset = formats.load(source, from_format, mapping)
        formats.save(evalset, target, to)
        count = len(evalset.cases)
        _stdout().print(f"wrote {target} ({count} case{'s' if count != 1 else ''}, {to})")


@app.command("runs")
def runs_command(
    store: Annotated[
        str | None, typer.Option("--store", help="Store URL (default .assay/assay.db).")
    ] = None,
    limit: Annotated[int, typer.Option(help="Most recent runs to list.")] = 20,
) -> None:
    """List stored runs, newest first."""
    with _user_errors():
        from assay.store import Store

        db = Store.open(store)
        try:
            infos = db.list_runs(limit=limit)
        finally:
            db.close()
    console = _stdout()
    if not infos:
        console.print("no runs stored yet: run `assay eval ...` first")
        return
    from assay.report.console import runs_table

    console.print(runs_table(infos))


@app.command("metrics")
def metrics_command() -> None:
    """List the registered metrics: name, what each needs, default threshold."""
    with _user_errors():
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
    _stdout().print(table)


@app.command("formats")
def formats_command() -> None:
    """List the supported formats (for --from / --to)."""
    from assay.formats import FORMAT_MODULES

    table = Table(title="Formats", header_style="bold")
    table.add_column("name")
    table.add_column("description")
    for name in FORMAT_MODULES:
        table.add_row(name, FORMAT_DESCRIPTIONS.get(name, ""))
    _stdout().print(table)


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


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
