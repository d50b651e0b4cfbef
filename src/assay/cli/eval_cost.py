"""`assay eval --dry-run`: the run's judge calls, tokens, cache hits and price, run nothing."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rich.table import Table
from rich.text import Text

from assay.cli.common import check_distinct_ids, check_format, stderr_console, stdout_console
from assay.errors import ConfigError

if TYPE_CHECKING:
    from assay.core.cases import EvalSet
    from assay.engine import RunOptions
    from assay.engine.judge_options import JudgeRunOptions
    from assay.engine.selection import CaseSelection
    from assay.metrics.base import Metric
    from assay.session.estimate import CostEstimate


class DryRunRequest(Protocol):
    """What a dry run reads of an `assay eval` invocation."""

    data: list[Path]
    from_format: str | None
    mapping: dict[str, str] | None
    selection: CaseSelection
    store_url: str | None
    options: RunOptions
    judges: JudgeRunOptions
    agent: str | None


def check_dry_run_flags(given: Mapping[str, object]) -> None:
    """A flag about a run's results means nothing to a dry run: a usage error, not a
    report silently missing."""
    said = [flag for flag, value in given.items() if value is not None]
    if said:
        raise ConfigError(
            f"--dry-run runs nothing, so it has no results for {', '.join(said)}: drop"
            f" {'it' if len(said) == 1 else 'them'} (--out writes the estimate as JSON)"
        )


def dry_run_command(
    req: DryRunRequest,
    metrics_for: Callable[[Sequence[EvalSet]], list[Metric]],
    *,
    out: Path | None,
) -> int:
    """Print (and with `--out`, write as JSON) the estimate of the run `req` asks for;
    `metrics_for` gives the run's metrics for its eval sets, as a real run builds them."""
    from dataclasses import replace

    from assay import formats
    from assay.engine.selection import select_cases
    from assay.session.estimate import estimate_run
    from assay.store import Store

    if req.from_format is not None:
        check_format(req.from_format, eval_set=True)
    loaded = formats.load_many(req.data, req.from_format, req.mapping)
    evalsets = select_cases(loaded, req.selection)
    check_distinct_ids(evalsets, req.data)
    metrics = metrics_for(evalsets)
    if req.agent is not None:
        from assay.agents import load_agent

        load_agent(req.agent)  # a mistyped agent is a usage error here too; it is not run
    # The cache hits are the store's (read only); with --no-store there are none.
    db = Store.open(req.store_url or None) if req.store_url is not None else None
    try:
        estimate = estimate_run(
            evalsets,
            metrics,
            options=req.options,
            judges=replace(req.judges, store=db),
            agent_given=req.agent is not None,
        )
    finally:
        if db is not None:
            db.close()
    render_estimate(estimate)
    if out is not None:
        out.write_text(json.dumps(estimate.as_dict(), indent=2) + "\n", encoding="utf-8")
    return 0


def render_estimate(estimate: CostEstimate) -> None:
    console = stdout_console()
    table = Table(title="dry run: nothing was called", title_justify="left")
    for header in ("judged metric", "judge", "calls", "cache hits", "input tok", "output tok"):
        left = header in ("judged metric", "judge")
        table.add_column(header, justify="left" if left else "right")
    table.add_column("USD", justify="right")
    for (metric, model), line in sorted(estimate.lines.items()):
        table.add_row(
            metric,
            model,
            f"{line.calls:,}",
            f"{line.cache_hits:,}",
            f"{line.input_tokens:,}",
            f"{line.output_tokens:,}",
            f"{line.usd:.4f}",
        )
    total = estimate.total()
    table.add_row(
        "total",
        "",
        f"{total.calls:,}",
        f"{total.cache_hits:,}",
        f"{total.input_tokens:,}",
        f"{total.output_tokens:,}",
        f"{total.usd:.4f}",
        style="bold",
    )
    console.print(table)
    if total.batched_calls:
        console.print(
            f"{total.batched_calls:,} of {total.calls:,} judge calls priced at batch prices"
            " (--judge-batch: the price table's batch price, else half the live price)"
        )
    bound = "at most " if estimate.agent_calls_bounded else ""
    console.print(f"agent calls: {bound}{estimate.agent_calls:,}")
    err = stderr_console()
    err.print(Text(f"tokens counted by: {estimate.tokens_counted_by}", style="dim"))
    if estimate.unpriced:
        err.print(
            Text(
                "no price for " + ", ".join(estimate.unpriced) + ": give it with --prices FILE",
                style="yellow",
            )
        )
