"""`assay judge ...`: commands about the LLM judges themselves.

`assay judge calibrate LABELS.jsonl --judge MODEL --metric NAME` scores human-labelled
items with a judged metric and reports how well the judge agrees with the humans:
accuracy, Cohen's kappa, a confusion matrix and the items they disagree on.
`assay judge calibrate --from-store [--run RUN...] --metric NAME --judge MODEL` does so
for the labels people stored (`assay labels`, the viewer's review queue), with a
bootstrap interval on each number and Krippendorff's alpha when several people labelled
one item (`assay.session.label_calibration`); `--json` prints the report as JSON.

Exit codes: 0 the calibration ran; 1 no item could be scored, or kappa is below
`--min-kappa`; 2 a usage or input error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.cli.common import (
    command_app,
    grouped_options,
    stderr_console,
    stdout_console,
    user_errors,
)
from assay.cli.judge_align import register as register_align_commands
from assay.cli.judge_noise import register as register_noise_commands
from assay.cli.judge_options import (
    JsonOption,
    JudgeCalls,
    JudgeOption,
    MetricOption,
    SamplesOption,
    figure,
)
from assay.errors import ConfigError

if TYPE_CHECKING:
    # Imported where used: it loads every judged metric, which `assay eval` need not.
    from assay.engine.calibrate import CalibrationReport, ItemVerdict
    from assay.report.label_agreement import AgreementReport
    from assay.session.label_calibration import StoreCalibration

judge_app = command_app("judge", "LLM judges: measure a judge's agreement with human labels.")


@judge_app.callback()
def _judge_group() -> None:
    """LLM judges: measure a judge's agreement with human labels."""


#: longest explanation shown in a table cell (the JSON report keeps it whole)
EXPLANATION_WIDTH = 160


@judge_app.command("calibrate")
@grouped_options
def calibrate_command(
    judge: JudgeOption,
    metric: MetricOption,
    labels: Annotated[
        Path | None,
        typer.Argument(help="Labelled items: JSONL, each line the inputs plus 'label'."),
    ] = None,
    samples: SamplesOption = None,
    calls: JudgeCalls = JudgeCalls(),
    out: Annotated[Path | None, typer.Option("--out", help="Write the report as JSON.")] = None,
    min_kappa: Annotated[
        float | None,
        typer.Option("--min-kappa", help="Exit 1 when Cohen's kappa is below this value."),
    ] = None,
    from_store: Annotated[
        bool,
        typer.Option("--from-store", help="The labels people stored (assay labels, the viewer)."),
    ] = False,
    runs: Annotated[
        list[str] | None,
        typer.Option("--run", help="With --from-store: only this run's labels (repeatable)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Measure a judge against human labels: accuracy, Cohen's kappa, confusion matrix."""
    if from_store or labels is None:
        _from_store_command(
            labels, from_store, runs, judge=judge, metric=metric, samples=samples,
            calls=calls, out=out, min_kappa=min_kappa, as_json=as_json,
        )  # fmt: skip
        return
    with user_errors():
        if runs:
            raise ConfigError("--run picks stored labels: use it with --from-store")
        report = _calibrate(labels, judge=judge, metric=metric, samples=samples, calls=calls)
        if as_json:
            typer.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
        else:
            render_report(report, stdout_console())
        _write_json(out, report.to_dict())
    raise typer.Exit(exit_code(report, min_kappa))


def _write_json(out: Path | None, data: dict[str, Any]) -> None:
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        stderr_console().print(Text(f"wrote {out}", style="dim"))


def _from_store_command(
    labels: Path | None,
    from_store: bool,
    runs: list[str] | None,
    *,
    judge: str,
    metric: str,
    samples: int | None,
    calls: JudgeCalls,
    out: Path | None,
    min_kappa: float | None,
    as_json: bool,
) -> None:
    """`assay judge calibrate --from-store`: the stored labels (see the module)."""
    import asyncio

    from assay.engine.calibrate import build_judged_metric
    from assay.session.label_calibration import acalibrate_from_store
    from assay.store.reading import find_run, open_existing

    with user_errors():
        if labels is not None:
            raise ConfigError("give a labels file or --from-store, not both")
        if not from_store:
            raise ConfigError("give a labels file (JSONL), or --from-store for stored labels")
        if calls.no_store:
            raise ConfigError("--from-store reads the store: it cannot go with --no-store")
        calls.check_limits()
        scorer = build_judged_metric(metric, judge=judge, samples=samples,
                                     base_url=calls.base_url,
                                     criterion=calls.metric_options())  # fmt: skip
        with open_existing(calls.store) as db:
            ids = [find_run(db, r).id for r in runs] if runs else None
            result = asyncio.run(
                acalibrate_from_store(
                    db,
                    metric=scorer,
                    judge=judge,
                    runs=ids,
                    use_cache=calls.use_cache,
                    concurrency=calls.judge_concurrency,
                    timeout_s=calls.judge_timeout,
                )
            )
        if as_json:
            typer.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        else:
            render_agreement(result, stdout_console())
        _write_json(out, result.to_dict())
    agreement = result.agreement
    kappa = agreement.kappa.value
    low = min_kappa is not None and (kappa is None or kappa < min_kappa)
    failed = agreement.compared == 0 or low
    raise typer.Exit(1 if failed else 0)


def agreement_table(agreement: AgreementReport) -> Table:
    """The statistics of an agreement report with their intervals."""
    table = Table(title="Agreement with people's labels (95% bootstrap interval)",
                  title_justify="left")  # fmt: skip
    table.add_column("statistic")
    table.add_column("value [interval]", justify="right")
    table.add_row("accuracy", agreement.accuracy.show())
    table.add_row("Cohen's kappa", agreement.kappa.show())
    table.add_row("base rate (people: pass)", agreement.base_rate.show())
    if agreement.alpha_people is not None:
        table.add_row("Krippendorff's alpha, people", agreement.alpha_people.show())
    if agreement.alpha_with_judge is not None:
        table.add_row("Krippendorff's alpha, people + judge", agreement.alpha_with_judge.show())
    table.add_row("labels compared", str(agreement.compared))
    return table


def render_agreement(result: StoreCalibration, console: Console) -> None:
    """`--from-store`'s report as rich tables."""
    agreement = result.agreement
    console.print(
        Text.assemble(
            (agreement.metric, "bold"),
            f" judged by {agreement.judge}: {agreement.items} labelled items, "
            f"{agreement.labels} labels, {agreement.unscored} items not scored, "
            f"{agreement.several_people} labelled by several people",
        )
    )
    console.print(agreement_table(agreement))
    grid = Table(title="Confusion matrix (rows: people, columns: judge)", title_justify="left")
    grid.add_column("people \\ judge")
    for label in agreement.matrix.labels:
        grid.add_column(label, justify="right")
    for i, label in enumerate(agreement.matrix.labels):
        grid.add_row(label, *(str(n) for n in agreement.matrix.counts[i]))
    console.print(grid)
    disagreements = [i for i in result.items if i["disagreements"]]
    if disagreements:
        table = Table(title="Disagreements", title_justify="left")
        for column in ("run", "case", "people", "judge", "judge's explanation"):
            table.add_column(column, overflow="fold")
        for item in disagreements:
            people = ", ".join(f"{lab['author']}: {lab['verdict']}" for lab in item["labels"])
            table.add_row(item["run"], item["case"], people, item["judge"] or "",
                          _short(item["explanation"]))  # fmt: skip
        console.print(table)
    if result.judge_stats:
        from assay.judges.stats import JudgeStats

        console.print(Text(JudgeStats.from_summary(result.judge_stats).describe(), style="dim"))


def _calibrate(
    labels: Path, *, judge: str, metric: str, samples: int | None, calls: JudgeCalls
) -> CalibrationReport:
    import asyncio

    from assay.engine.calibrate import build_judged_metric, load_labels
    from assay.session.calibrate import acalibrate

    criterion = calls.metric_options()
    calls.check_limits()
    # Usage errors first (metric, judge options), then the data, then the store.
    scorer = build_judged_metric(
        metric, judge=judge, samples=samples, base_url=calls.base_url, criterion=criterion
    )
    labelled = load_labels(labels)
    with calls.cache_store() as db:
        return asyncio.run(
            acalibrate(
                labelled,
                metric=scorer,
                judge=judge,
                store=db,
                use_cache=calls.use_cache,
                concurrency=calls.judge_concurrency,
                timeout_s=calls.judge_timeout,
            )
        )


def exit_code(report: CalibrationReport, min_kappa: float | None) -> int:
    """0 when the calibration ran; 1 with no scored item or kappa under `min_kappa`."""
    if not report.scored:
        return 1
    if min_kappa is not None and (report.kappa is None or report.kappa < min_kappa):
        return 1
    return 0


def _short(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= EXPLANATION_WIDTH else text[: EXPLANATION_WIDTH - 1] + "…"


def render_report(report: CalibrationReport, console: Console) -> None:
    """The report as rich tables: agreement, confusion matrix, disagreements, unscored."""
    positive, negative = report.outcomes
    console.print(
        Text.assemble(
            (report.metric, "bold"),
            f" judged by {report.judge} ({report.samples} sample"
            f"{'' if report.samples == 1 else 's'} per item): {len(report.items)} items, "
            f"{len(report.scored)} scored, {len(report.unscored)} not scored",
        )
    )
    summary = Table(title="Agreement with the human labels", title_justify="left")
    summary.add_column("statistic")
    summary.add_column("value", justify="right")
    summary.add_row("accuracy", figure(report.accuracy))
    kappa_note = "" if report.kappa is not None else " (undefined: one label only)"
    summary.add_row("Cohen's kappa", figure(report.kappa) + kappa_note)
    summary.add_row("items compared", str(len(report.scored)))
    summary.add_row("disagreements", str(len(report.disagreements)))
    console.print(summary)

    matrix = report.matrix
    grid = Table(title="Confusion matrix (rows: human, columns: judge)", title_justify="left")
    grid.add_column("human \\ judge")
    for label in matrix.labels:
        grid.add_column(label, justify="right")
    grid.add_column("total", justify="right")
    for i, label in enumerate(matrix.labels):
        cells = [
            Text(str(n), style="green" if i == j else ("red" if n else ""))
            for j, n in enumerate(matrix.counts[i])
        ]
        grid.add_row(label, *cells, str(matrix.row_totals()[i]))
    grid.add_row("total", *(str(n) for n in matrix.column_totals()), str(matrix.total))
    console.print(grid)

    if report.disagreements:
        console.print(_items_table(f"Disagreements ({positive}/{negative})", report.disagreements))
    if report.unscored:
        console.print(
            _items_table("Not scored by the judge (left out of the statistics)", report.unscored)
        )
    if report.judge_stats:
        from assay.judges.stats import JudgeStats

        stats = JudgeStats.from_summary(report.judge_stats)
        console.print(Text(stats.describe(), style="dim"))


def _items_table(title: str, items: list[ItemVerdict]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("item")
    table.add_column("line", justify="right")
    table.add_column("human")
    table.add_column("judge")
    table.add_column("agreement", justify="right")
    table.add_column("judge's explanation", overflow="fold")
    for item in items:
        table.add_row(
            item.case_id,
            str(item.line) if item.line is not None else "",
            item.human,
            item.judge or "—",
            figure(item.agreement),
            _short(item.explanation),
        )
    return table


register_align_commands(judge_app)  # `assay judge align`, `list`, `show`
register_noise_commands(judge_app)  # `assay judge stability` and `assay judge probe`
