"""`assay judge align`, `assay judge list`, `assay judge show`: judges aligned to people.

`assay judge align --metric M --judge MODEL (LABELS.jsonl | --from-store [--run RUN...])`
builds an aligned judge (guidelines distilled from the judge's disagreements with people,
plus the most informative labelled examples; `assay.session.align`), reports kappa
before and after on held-out labels (k-fold), and stores it as the next version of
`--name` (default: the metric's name). `--judge aligned:NAME[@VERSION]` then uses it in
any run. `list` and `show NAME[@VERSION]` print the stored ones.

Exit codes: 0 the alignment ran (whatever it measured); 2 a usage or input error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.cli.common import StoreOption, stderr_console, stdout_console, user_errors
from assay.cli.judge_options import (
    BaseUrlOption,
    ConcurrencyOption,
    CriterionOption,
    MetricOption,
    NoCacheOption,
    SamplesOption,
    TimeoutOption,
    check_call_limits,
    figure,
    parse_criterion,
)
from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.engine.calibrate import LabelledSet
    from assay.judges.align import AlignedJudgeSpec
    from assay.session.align import AlignmentReport
    from assay.store import Store


def register(app: typer.Typer) -> None:
    """Add `align`, `list` and `show` to `assay judge`."""
    app.command("align")(align_command)
    app.command("list")(list_command)
    app.command("show")(show_command)


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]


def align_command(
    metric: MetricOption,
    judge: Annotated[
        str,
        typer.Option("--judge", help="The base judge model: openai:NAME, gemini-NAME, ..."),
    ],
    labels: Annotated[
        Path | None,
        typer.Argument(help="Labelled items: the JSONL `assay judge calibrate` reads."),
    ] = None,
    from_store: Annotated[
        bool,
        typer.Option("--from-store", help="Align on the labels people gave in the store."),
    ] = False,
    run: Annotated[
        list[str] | None,
        typer.Option("--run", help="With --from-store: only these runs' labels (repeatable)."),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option("--name", help="Store the aligned judge under this name (default: METRIC)."),
    ] = None,
    folds: Annotated[int, typer.Option("--folds", help="Folds of the held-out measure.")] = 5,
    max_examples: Annotated[
        int, typer.Option("--max-examples", help="Labelled examples in the prompt, at most.")
    ] = 6,
    example_chars: Annotated[
        int, typer.Option("--example-chars", help="Characters of examples, at most.")
    ] = 6000,
    max_guidelines: Annotated[
        int, typer.Option("--max-guidelines", help="Distilled guidelines, at most.")
    ] = 8,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the folds and the bootstrap.")] = 0,
    samples: SamplesOption = None,
    base_url: BaseUrlOption = None,
    criterion: CriterionOption = None,
    store: StoreOption = None,
    no_save: Annotated[
        bool, typer.Option("--no-save", help="Measure only: do not store the aligned judge.")
    ] = False,
    no_cache: NoCacheOption = False,
    judge_concurrency: ConcurrencyOption = 8,
    judge_timeout: TimeoutOption = 60.0,
    as_json: JsonOption = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write the report as JSON.")] = None,
) -> None:
    """Align a judge to people's labels: guidelines and examples, kappa on held-out labels."""
    import asyncio

    from assay.session.align import AlignOptions, aalign

    with user_errors():
        if (labels is None) == (not from_store):
            raise ConfigError("give a labels file or --from-store (one of the two)")
        if run and not from_store:
            raise ConfigError("--run selects the store's labels: use it with --from-store")
        check_call_limits(judge_concurrency, judge_timeout)
        options = AlignOptions(
            folds=folds,
            max_examples=max_examples,
            example_chars=example_chars,
            max_guidelines=max_guidelines,
            seed=seed,
        )
        from assay.engine.calibrate import build_judged_metric
        from assay.judges.align import check_name, is_aligned_ref

        if is_aligned_ref(judge):
            raise ConfigError(
                f"--judge {judge!r}: align a base judge model (an aligned judge's own"
                " base model is in `assay judge show`)"
            )
        judge_name = check_name(name or metric)
        parsed = parse_criterion(criterion)
        build_judged_metric(
            metric, judge=judge, samples=samples, base_url=base_url, criterion=parsed
        )
        with _open(store) as db:
            labelled, left_out = (
                _store_labels(db, metric, run or []) if from_store else (_file_labels(labels), [])
            )
            report = asyncio.run(
                aalign(
                    labelled,
                    metric=metric,
                    judge=judge,
                    name=judge_name,
                    samples=samples,
                    base_url=base_url,
                    criterion=parsed,
                    store=db,
                    use_cache=not no_cache,
                    concurrency=judge_concurrency,
                    timeout_s=judge_timeout,
                    options=options,
                )
            )
            stored = None if no_save else db.aligned_judges.add(report.spec)
        data = report.to_dict()
        data["left_out"] = left_out
        if stored is not None:
            data["aligned_judge"] = stored.to_dict()
        data["stored"] = stored.ref if stored is not None else None
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        if as_json:
            print(json.dumps(data, indent=2, ensure_ascii=False))
        else:
            render_alignment(report, stored, left_out, stdout_console())
            if out is not None:
                stderr_console().print(Text(f"wrote {out}", style="dim"))


def _open(url: str | None) -> Store:
    from assay.store import Store

    return Store.open(url)


def _file_labels(path: Path | None) -> LabelledSet:
    from assay.engine.calibrate import load_labels

    assert path is not None  # checked by the caller
    return load_labels(path)


def _store_labels(db: Store, metric: str, runs: list[str]) -> tuple[LabelledSet, list[str]]:
    """The labels people gave in the store for `metric` (`assay labels`, the review queue)."""
    from assay.session.align import labelled_set_from_items
    from assay.store.labels import label_pairs

    run_ids = [db.find_run(ref).id for ref in runs] or None
    items = label_pairs(db, metric=metric, runs=run_ids)
    if not items:
        where = f" in runs {', '.join(runs)}" if runs else ""
        raise ConfigError(f"no labels for metric {metric!r}{where} in store {db.url}")
    return labelled_set_from_items(items)


def _within(interval: tuple[float, float] | None) -> str:
    return "" if interval is None else f" [{interval[0]:.2f}, {interval[1]:.2f}]"


def render_alignment(
    report: AlignmentReport, stored: AlignedJudgeSpec | None, left_out: list[str], console: Console
) -> None:
    """The folds, the pooled kappas with the gain's interval, the verdict, the judge."""
    spec = stored or report.spec
    console.print(
        Text.assemble(
            (report.metric, "bold"),
            f" judged by {report.judge}: {report.items} labelled items, {report.compared}"
            f" compared on held-out folds ({len(report.folds)} folds)",
        )
    )
    table = Table(title="Kappa on held-out labels (before → after)", title_justify="left")
    for column in ("fold", "train", "test", "kappa before", "kappa after", "accuracy"):
        table.add_column(column, justify="right")
    for fold in report.folds:
        table.add_row(
            str(fold.index),
            str(fold.train),
            str(fold.test),
            figure(fold.kappa_before),
            figure(fold.kappa_after),
            f"{figure(fold.accuracy_before)} → {figure(fold.accuracy_after)}",
        )
    table.add_row("mean", "", "", figure(report.mean_before), figure(report.mean_after), "")
    table.add_row(
        "pooled",
        "",
        str(report.compared),
        figure(report.kappa_before) + _within(report.kappa_before_interval),
        figure(report.kappa_after) + _within(report.kappa_after_interval),
        f"{figure(report.accuracy_before)} → {figure(report.accuracy_after)}",
    )
    console.print(table)
    interval = report.gain_interval
    shown = f"[{interval[0]:+.3f}, {interval[1]:+.3f}]" if interval else "undefined"
    style = {"gain": "green", "worse": "red"}.get(report.verdict, "yellow")
    console.print(
        Text.assemble(
            "kappa gain ",
            (f"{report.gain:+.3f}" if report.gain is not None else "n/a", "bold"),
            f", {int(report.confidence * 100)}% interval {shown}: ",
            (report.verdict, f"bold {style}"),
        )
    )
    render_spec(spec, console)
    for line in [*report.warnings, *(f"left out: {x}" for x in left_out)]:
        console.print(Text(line, style="yellow"))
    if report.unscored:
        console.print(
            Text(f"not scored by the judge: {', '.join(report.unscored)}", style="yellow")
        )
    if stored is not None:
        console.print(
            Text.assemble(
                "stored as ",
                (f"aligned:{stored.ref}", "bold"),
                f": use it with --judge aligned:{stored.name}",
            )
        )
    else:
        console.print(Text("not stored (--no-save)", style="dim"))


def render_spec(spec: AlignedJudgeSpec, console: Console) -> None:
    """An aligned judge's guidelines and examples."""
    console.print(Text(f"guidelines ({len(spec.guidelines)}):", style="bold"))
    for guideline in spec.guidelines:
        console.print(Text(f"  - {guideline}"))
    console.print(Text(f"examples ({len(spec.examples)}):", style="bold"))
    for example in spec.examples:
        response = " ".join(example.inputs.get("response", "").split())
        short = response if len(response) <= 100 else response[:99] + "…"
        console.print(Text(f"  [{example.label}] {short}"))


def list_command(store: StoreOption = None, as_json: JsonOption = False) -> None:
    """List the aligned judges in the store, every version."""
    with user_errors():
        with _open(store) as db:
            specs = db.aligned_judges.list_judges()
        if as_json:
            print(json.dumps([_listed(s) for s in specs], indent=2, ensure_ascii=False))
            return
        if not specs:
            stdout_console().print("no aligned judges (`assay judge align` makes one)")
            return
        table = Table(title="Aligned judges", title_justify="left")
        for column in ("judge", "metric", "base model", "guidelines", "examples", "kappa"):
            table.add_column(column)
        table.add_column("created")
        for spec in specs:
            table.add_row(
                f"aligned:{spec.ref}",
                spec.metric,
                spec.judge_model,
                str(len(spec.guidelines)),
                str(len(spec.examples)),
                f"{figure(spec.kappa_before)} → {figure(spec.kappa_after)}",
                spec.created_at or "",
            )
        stdout_console().print(table)


def _listed(spec: AlignedJudgeSpec) -> dict[str, Any]:
    data = spec.to_dict()
    data["guidelines"] = len(spec.guidelines)
    data["examples"] = len(spec.examples)
    data.pop("report")
    return data


def show_command(
    ref: Annotated[str, typer.Argument(help="NAME or NAME@VERSION (default: the newest).")],
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show an aligned judge: its base model, guidelines, examples and measures."""
    from assay.judges.align import parse_ref

    with user_errors():
        name, version = parse_ref(ref)
        with _open(store) as db:
            spec = db.aligned_judges.resolve(name, version)
        if as_json:
            print(json.dumps(spec.to_dict(), indent=2, ensure_ascii=False))
            return
        console = stdout_console()
        console.print(
            Text.assemble(
                (f"aligned:{spec.ref}", "bold"),
                f" for {spec.metric} over {spec.judge_model}, created {spec.created_at};"
                f" held-out kappa {figure(spec.kappa_before)} → {figure(spec.kappa_after)}"
                f" ({spec.report.get('verdict', 'not measured')})",
            )
        )
        render_spec(spec, console)
