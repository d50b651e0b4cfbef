"""`assay judge stability` and `assay judge probe`: a judge measured without labels.

`assay judge stability DATA --metric M --judge MODEL --repeats K` scores the data K
times, each repeat with judge samples of its own, and reports each item's flip rate,
the overall flip rate with a 95 % interval and Fleiss' κ across the repeats.

`assay judge probe DATA --metric M --judge MODEL [--bias position|verbosity|both]`
looks for two biases: position (a pairwise judge shown the recorded response and the
reference in both orders: does its verdict follow the position?) and verbosity (the
metric scored on the responses as recorded and padded with neutral text: does the
score rise?).

Exit codes: 0 the measurement ran; 1 nothing could be measured, the flip rate is above
`--max-flip-rate`, or a bias was found with `--fail-on-bias`; 2 a usage or input error.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.cli.common import FromOption, grouped_options, stdout_console, user_errors
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
    from assay.core.cases import EvalSet
    from assay.metrics.judged.base import JudgedMetric
    from assay.session.judge_noise import (
        JudgeSetup,
        PositionReport,
        StabilityReport,
        VerbosityReport,
    )

Bias = Literal["position", "verbosity", "both"]

DataArgument = Annotated[
    list[Path], typer.Argument(help="Eval data with recorded responses (files or folders).")
]


def register(app: typer.Typer) -> None:
    """Mount the commands on `assay judge`."""
    app.command("stability")(grouped_options(stability_command))
    app.command("probe")(grouped_options(probe_command))


def stability_command(
    data: DataArgument,
    judge: JudgeOption,
    metric: MetricOption,
    repeats: Annotated[
        int, typer.Option("--repeats", "-k", help="How many times to score the data (2 or more).")
    ] = 5,
    samples: Annotated[
        int | None,
        typer.Option("--samples", help="Judge samples per item in each repeat (metric default)."),
    ] = None,
    max_flip_rate: Annotated[
        float | None,
        typer.Option("--max-flip-rate", help="Exit 1 when the overall flip rate is above this."),
    ] = None,
    from_format: FromOption = None,
    calls: JudgeCalls = JudgeCalls(),
    as_json: JsonOption = False,
) -> None:
    """Measure a judge's self-consistency: flip rate and Fleiss' kappa over repeats."""
    from assay.session.judge_noise import astability

    with user_errors():
        if max_flip_rate is not None and not 0.0 <= max_flip_rate <= 1.0:
            raise ConfigError(f"--max-flip-rate must be between 0 and 1, got {max_flip_rate}")
        scorer = _metric(metric, judge, samples, calls)
        evalsets = _data(data, from_format)
        with _setup(judge, calls) as setup:
            report = asyncio.run(astability(evalsets, scorer, setup, repeats=repeats))
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        render_stability(report, stdout_console())
    code = 0 if report.rated else 1
    rate = report.flip_rate
    if max_flip_rate is not None and rate is not None and rate > max_flip_rate:
        code = 1
    raise typer.Exit(code)


def probe_command(
    data: DataArgument,
    judge: JudgeOption,
    metric: Annotated[
        str,
        typer.Option(
            "--metric",
            "-m",
            help="A judged metric (verbosity probe), or pairwise_preference (position probe).",
        ),
    ],
    bias: Annotated[
        str | None,
        typer.Option(
            "--bias",
            help="position, verbosity or both (default: both; position for a pairwise metric).",
        ),
    ] = None,
    samples: SamplesOption = None,
    fail_on_bias: Annotated[
        bool, typer.Option("--fail-on-bias", help="Exit 1 when a bias is found.")
    ] = False,
    from_format: FromOption = None,
    calls: JudgeCalls = JudgeCalls(),
    as_json: JsonOption = False,
) -> None:
    """Probe a judge for position bias (pairwise, both orders) and verbosity bias."""
    from assay.judges.pairwise import PAIRWISE_METRIC
    from assay.session.judge_noise import aprobe_position, aprobe_verbosity

    with user_errors():
        pairwise = metric.strip() == PAIRWISE_METRIC
        chosen = _bias(bias, pairwise, metric)
        if samples is not None and samples < 1:
            raise ConfigError(f"--samples must be at least 1, got {samples}")
        scorer = (
            None if pairwise or chosen == "position" else _metric(metric, judge, samples, calls)
        )
        evalsets = _data(data, from_format)
        reports: list[PositionReport | VerbosityReport] = []
        with _setup(judge, calls) as setup:
            if chosen in ("position", "both"):
                reports.append(asyncio.run(aprobe_position(evalsets, setup, samples=samples or 1)))
            if scorer is not None:
                reports.append(asyncio.run(aprobe_verbosity(evalsets, scorer, setup)))
    if as_json:
        typer.echo(json.dumps([r.to_dict() for r in reports], indent=2, ensure_ascii=False))
    else:
        console = stdout_console()
        for report in reports:
            render_probe(report, console)
    measured = [r.flagged for r in reports if r.flagged is not None]
    code = 0 if measured else 1
    if fail_on_bias and any(measured):
        code = 1
    raise typer.Exit(code)


# ----------------------------------------------------------------------------- helpers


def _bias(bias: str | None, pairwise: bool, metric: str) -> Bias:
    from assay.judges.pairwise import PAIRWISE_METRIC

    if bias is None:
        return "position" if pairwise else "both"
    word = bias.strip().lower()
    if word not in ("position", "verbosity", "both"):
        raise ConfigError(f"--bias must be position, verbosity or both, got {bias!r}")
    if pairwise and word != "position":
        raise ConfigError(
            f"--bias {word}: the verbosity probe scores one response at a time, so it needs"
            f" a pointwise judged metric (e.g. final_response_match_v2), not {PAIRWISE_METRIC}"
        )
    return word  # type: ignore[return-value]  # checked against the three words above


def _metric(name: str, judge: str, samples: int | None, calls: JudgeCalls) -> JudgedMetric:
    from assay.engine.calibrate import build_judged_metric

    return build_judged_metric(
        name, judge=judge, samples=samples, base_url=calls.base_url,
        criterion=calls.metric_options(),
    )  # fmt: skip


def _data(paths: Sequence[Path], from_format: str | None) -> list[EvalSet]:
    from assay.formats import load_many

    evalsets = load_many(paths, from_format)
    if not any(s.cases for s in evalsets):
        raise ConfigError("the data has no case to judge")
    return evalsets


@contextmanager
def _setup(judge: str, calls: JudgeCalls) -> Iterator[JudgeSetup]:
    """What both commands' measurements call the judge with: its limits checked, the
    model string read, the cache's store open for the measurement."""
    from assay.models.resolve import parse_model
    from assay.session.judge_noise import JudgeSetup

    calls.check_limits()
    parse_model(judge)
    with calls.cache_store() as db:
        yield JudgeSetup(
            judge=judge,
            base_url=calls.base_url,
            store=db,
            use_cache=calls.use_cache,
            concurrency=calls.judge_concurrency,
            timeout_s=calls.judge_timeout,
        )


def _interval(pair: Sequence[float] | None, fmt: str = ".3f") -> str:
    return "n/a" if pair is None else f"{format(pair[0], fmt)} – {format(pair[1], fmt)}"


def render_stability(report: StabilityReport, console: Console) -> None:
    """The stability report: the statistics, then the items that flipped."""
    console.print(
        Text.assemble(
            (report.metric, "bold"),
            f" judged by {report.judge}: {len(report.items)} items, {report.repeats} repeats"
            f" of {report.samples} sample{'' if report.samples == 1 else 's'} each",
        )
    )
    table = Table(title="Self-consistency across repeats", title_justify="left")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    table.add_column("95% interval", justify="right")
    table.add_row("flip rate", figure(report.flip_rate), _interval(report.flip_interval))
    kappa = figure(report.kappa) + ("" if report.kappa is not None else " (one verdict only)")
    table.add_row("Fleiss' kappa", kappa, "")
    table.add_row("items that flipped", f"{len(report.flipped)} of {len(report.rated)}", "")
    unrated = len(report.items) - len(report.rated)
    if unrated:
        table.add_row("items without a verdict in some repeat", str(unrated), "")
    console.print(table)
    if report.flipped:
        flips = Table(title="Items that changed their verdict", title_justify="left")
        flips.add_column("item")
        flips.add_column("verdicts")
        flips.add_column("flip rate", justify="right")
        for item in report.flipped:
            flips.add_row(
                item.item, " ".join(v or "-" for v in item.verdicts), figure(item.flip_rate)
            )
        console.print(flips)
    if report.unscored_reason:
        console.print(Text(f"an item without a verdict: {report.unscored_reason}", style="yellow"))
    style = "green" if report.stable else "bold magenta"
    console.print(Text(report.verdict_line(), style=style))
    if report.judge_stats:
        from assay.judges.stats import JudgeStats

        console.print(Text(JudgeStats.from_summary(report.judge_stats).describe(), style="dim"))


def render_probe(report: PositionReport | VerbosityReport, console: Console) -> None:
    """One probe's figures and its verdict line."""
    from assay.session.judge_noise import PositionReport

    table = Table(title_justify="left")
    table.add_column("statistic")
    table.add_column("value", justify="right")
    table.add_column("95% interval", justify="right")
    if isinstance(report, PositionReport):
        table.title = f"Position bias of {report.judge} (pairwise, both orders)"
        table.add_row("pairs judged in both orders", str(len(report.decided)), "")
        table.add_row(
            "verdict followed the position",
            figure(report.rate, ".0%"),
            _interval(report.interval, ".0%"),
        )
        table.add_row("first answer shown preferred", figure(report.first_shown_share, ".0%"), "")
        if report.skipped:
            table.add_row("items without two different answers", str(len(report.skipped)), "")
    else:
        table.title = f"Verbosity bias of {report.judge} on {report.metric} (padded responses)"
        table.add_row("items scored both ways", str(len(report.shifts)), "")
        table.add_row("score rose / fell", f"{report.rose} / {report.fell}", "")
        table.add_row(
            "net share that rose", figure(report.net, "+.0%"), _interval(report.interval, "+.0%")
        )
    console.print(table)
    if report.unscored_reason:
        console.print(Text(f"an item without a verdict: {report.unscored_reason}", style="yellow"))
    style = "bold magenta" if report.flagged else "green"
    console.print(Text(report.verdict_line(), style=style))
