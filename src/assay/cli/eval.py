"""`assay eval`: load eval sets, run an agent on them (or score recorded turns), report.

Runs are stored as their cases complete. Re-running the same command after an
interrupted run (Ctrl-C, a kill, a crash) resumes it: the store's unfinished run with
the same eval sets, metrics, config, agent and run options continues from its stored
case runs instead of starting again (`--fresh` starts a new run anyway).
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic.alias_generators import to_snake
from rich.console import Console
from rich.text import Text

from assay.cli.common import (
    EXIT_INTERRUPTED,
    CaseOption,
    FromOption,
    HtmlOption,
    LimitOption,
    MapOption,
    MinMeanOption,
    MinPassRateOption,
    NameOption,
    SampleOption,
    SeedOption,
    StoreOption,
    TagOption,
    check_distinct_ids,
    check_distinct_set_ids,
    check_format,
    frozen_heap_released,
    gc_paused,
    options_command,
    parse_mapping,
    parse_metric_flags,
    sigterm_as_interrupt,
    stderr_console,
    stdout_console,
    user_errors,
)
from assay.core.results import Status
from assay.engine.selection import CaseSelection
from assay.errors import ConfigError
from assay.redact import redact_url

if TYPE_CHECKING:
    from assay.config import EvalConfig
    from assay.core.cases import EvalSet
    from assay.engine import RunOptions
    from assay.engine.executors import Executor
    from assay.engine.judge_options import JudgeRunOptions
    from assay.formats.stream import RowFile
    from assay.interop.sinks import SinkOptions
    from assay.metrics.base import Metric
    from assay.session.sinks import FinishedRun, RunSink
    from assay.simulation import SimulatorOptions
    from assay.store import Store


@dataclass(frozen=True)
class EvalOptions:
    """`assay eval`'s options: one field per option, its typer declaration and default
    (`options_command` makes the command's parameters of them, in this order)."""

    data: Annotated[list[Path], typer.Argument(help="Eval set / dataset files.")]
    from_format: FromOption = None
    map_: MapOption = None
    config: Annotated[
        Path | None,
        typer.Option("--config", help="test_config.json (default: the one beside the data)."),
    ] = None
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", "-m", help="NAME or NAME=THRESHOLD; replaces the criteria."),
    ] = None
    prices: Annotated[
        Path | None,
        typer.Option(
            "--prices",
            help="Price table (JSON) for max_cost and the judges' cost, over the shipped one.",
        ),
    ] = None
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Run nothing: print the judge calls, tokens, cache hits and price the run"
            " would take, per judged metric and in total (docs/cost.md).",
        ),
    ] = False
    max_judge_usd: Annotated[
        float | None,
        typer.Option(
            "--max-judge-usd",
            help="Stop judging before the judges' cost (price table) would pass this many US"
            " dollars; the rest is NOT_EVALUATED (judge budget reached), resumable.",
        ),
    ] = None
    max_judge_calls: Annotated[
        int | None,
        typer.Option("--max-judge-calls", help="Stop judging after this many judge calls."),
    ] = None
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="Agent to run: module:attribute, an ADK agent folder, or an http(s):// URL.",
        ),
    ] = None
    runs: Annotated[
        int | None,
        typer.Option(help="Runs of every case (default: 1 per golden, 5 per scenario)."),
    ] = None
    concurrency: Annotated[int, typer.Option(help="Cases evaluated at once.")] = 4
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Processes scoring recorded rows (default: every core from 10,000 rows).",
        ),
    ] = None
    executor: Annotated[
        str,
        typer.Option(
            "--executor",
            help="Where case runs execute: local (this process) or ray (a Ray cluster;"
            " needs assay[ray], see docs/scale.md).",
        ),
    ] = "local"
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            help="Ray cluster to join with --executor ray (default: RAY_ADDRESS, else a"
            " local cluster for this run).",
        ),
    ] = None
    timeout: Annotated[float, typer.Option(help="Per-case agent timeout in seconds (0: none).")] = (
        300.0
    )
    tools: Annotated[
        str,
        typer.Option(
            "--tools",
            help="Tool calls: real (run the tools), fake (mock responses only; unmocked calls"
            " get an error) or mixed (mocks where given, else the real tool).",
        ),
    ] = "real"
    run_method: Annotated[
        str | None,
        typer.Option(
            "--run-method",
            help="Golden replay: stable (each turn in a fresh session seeded with the"
            " expected earlier turns) or naive (one session). Default: stable for CES"
            " goldens, naive for other conversations.",
        ),
    ] = None
    user_model: Annotated[
        str | None,
        typer.Option(
            "--user-model",
            help="Model of the simulated user of scenario cases: openai:NAME, gemini-NAME,"
            " anthropic:NAME or local:PATH.gguf.",
        ),
    ] = None
    persona_file: Annotated[
        Path | None,
        typer.Option("--persona-file", help="Personas (JSON/YAML list or CES export)."),
    ] = None
    stop_signal: Annotated[
        str | None,
        typer.Option("--stop-signal", help="What the simulated user says to end (</finished>)."),
    ] = None
    max_turns: Annotated[
        int | None,
        typer.Option("--max-turns", help="Simulated user turns when a scenario sets none."),
    ] = None
    cache_user_replies: Annotated[
        bool,
        typer.Option(
            "--cache-user-replies",
            help="Keep the simulated user's replies in the reply cache (the store's): the"
            " same conversation replays them without calls. Default: a fresh user each run.",
        ),
    ] = False
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Start a new run even if an unfinished one matches.")
    ] = False
    out: Annotated[Path | None, typer.Option("--out", help="Write the JSON report.")] = None
    junit: Annotated[Path | None, typer.Option("--junit", help="Write JUnit XML.")] = None
    csv_path: Annotated[Path | None, typer.Option("--csv", help="Write the rows as CSV.")] = None
    html: HtmlOption = None
    store: StoreOption = None
    no_store: Annotated[
        bool,
        typer.Option(
            "--no-store", help="Do not record the run (judge replies are cached for it only)."
        ),
    ] = False
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Only the summary line; no table or bar.")
    ] = False
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Print each agent exception's traceback (the agent's frames) as it happens.",
        ),
    ] = False
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge",
            help="LLM judge for judged metrics without their own judge_model: openai:NAME,"
            " gemini-NAME / gemini:NAME, anthropic:NAME or local:PATH.gguf.",
        ),
    ] = None
    judge_concurrency: Annotated[
        int, typer.Option("--judge-concurrency", help="Judge calls in flight per backend.")
    ] = 8
    judge_samples: Annotated[
        int | None,
        typer.Option(
            "--judge-samples",
            help="Judge samples per item for every judged metric (over each metric's"
            " num_samples); items whose samples straddle the threshold are marked unstable.",
        ),
    ] = None
    no_cache: Annotated[
        bool,
        typer.Option("--no-cache", help="Call the judge even for cached replies (still cached)."),
    ] = False
    judge_batch: Annotated[
        bool,
        typer.Option(
            "--judge-batch",
            help="Send judge calls through the vendor's batch interface (OpenAI-compatible"
            " /v1/batches, Anthropic Message Batches, Gemini API batch mode): about half the"
            " price, replies within the vendor's batch window.",
        ),
    ] = False
    no_adk_history: Annotated[
        bool,
        typer.Option(
            "--no-adk-history",
            help="Do not write ADK eval history (<agent folder>/.adk/eval_history/) for ADK"
            " agents.",
        ),
    ] = False
    mlflow: Annotated[
        str | None,
        typer.Option(
            "--mlflow",
            help="Also log the run to MLflow at this tracking URI (sqlite:///mlflow.db,"
            " http://host:5000, ...); needs assay[mlflow].",
        ),
    ] = None
    mlflow_experiment: Annotated[
        str, typer.Option("--mlflow-experiment", help="MLflow experiment of the run.")
    ] = "assay"
    case: CaseOption = None
    tag: TagOption = None
    limit: LimitOption = None
    sample: SampleOption = None
    seed: SeedOption = 0
    name: NameOption = None
    min_pass_rate: MinPassRateOption = None
    min_mean: MinMeanOption = None


@options_command(EvalOptions)
def eval_command(opts: EvalOptions) -> None:
    """Evaluate eval sets: run an agent on them, or score their recorded responses."""
    with (
        user_errors(),
        _interrupt_said((opts.out, opts.junit, opts.csv_path, opts.html), stored=not opts.no_store),
    ):
        from assay.engine import RunOptions
        from assay.engine.executors import named
        from assay.engine.judge_options import JudgeRunOptions
        from assay.interop.sinks import SinkOptions, check_sinks

        # Checked here, so a mistyped flag is a usage error before any work starts.
        from assay.judges.stats import JudgeStats

        # Checked first: an unknown executor or a missing ray extra is a usage error.
        executor_obj = named(opts.executor, ray_address=opts.ray_address)
        if opts.workers is not None and opts.executor.strip().lower() != "local":
            raise ConfigError(
                "--workers sets the local processes that score recorded rows; with"
                f" --executor {opts.executor} the cluster's CPUs do that (--concurrency tasks"
                " at once): drop --workers"
            )
        judges = JudgeRunOptions(
            model=opts.judge,
            concurrency=opts.judge_concurrency,
            use_cache=not opts.no_cache,
            stats=JudgeStats(),  # shown live by the progress lines
            num_samples=opts.judge_samples,
            batch=opts.judge_batch,
            max_usd=opts.max_judge_usd,
            max_calls=opts.max_judge_calls,
            prices_file=str(opts.prices) if opts.prices is not None else None,
        )
        cfg = _config_for(opts.config, opts.data[0])
        # A folder stands for the eval files under it (its config was found above).
        from assay.formats.folders import expand_inputs

        data = expand_inputs(opts.data, opts.from_format)
        options = RunOptions(
            runs=opts.runs,
            concurrency=opts.concurrency,
            timeout_s=opts.timeout or None,
            tool_behavior=opts.tools,  # type: ignore[arg-type]  # parsed by RunOptions
            run_method=opts.run_method,  # type: ignore[arg-type]
            simulator=_simulator_options(
                opts.user_model,
                opts.persona_file,
                opts.stop_signal,
                opts.max_turns,
                cfg,
                opts.cache_user_replies,
            ),
        )
        from assay.report.gates import check_rate, parse_min_means

        check_rate(opts.min_pass_rate, "--min-pass-rate")
        selection = CaseSelection(
            ids=tuple(opts.case or ()),
            tags=tuple(opts.tag or ()),
            limit=opts.limit,
            sample=opts.sample,
            seed=opts.seed,
        )
        request = _Request(
            data=data,
            from_format=opts.from_format,
            mapping=parse_mapping(opts.map_),
            config=cfg,
            metric_flags=parse_metric_flags(opts.metric) if opts.metric else None,
            prices_file=str(opts.prices) if opts.prices is not None else None,
            agent=opts.agent,
            options=options,
            judges=judges,
            store_url=None if opts.no_store else (opts.store or ""),
            fresh=opts.fresh,
            quiet=opts.quiet,
            verbose=opts.verbose,
            persona_file=opts.persona_file,
            sinks=SinkOptions(
                adk_history=not opts.no_adk_history,
                mlflow_uri=opts.mlflow,
                mlflow_experiment=opts.mlflow_experiment,
            ),
            selection=selection,
            name=opts.name,
            min_pass_rate=opts.min_pass_rate,
            min_means=parse_min_means(opts.min_mean),
            html=opts.html,
            workers=opts.workers,
            executor=executor_obj,
            dry_run=opts.dry_run,
        )
        if opts.dry_run:
            from assay.cli.eval_cost import check_dry_run_flags, dry_run_command

            check_dry_run_flags(
                {"--junit": opts.junit, "--csv": opts.csv_path, "--html": opts.html,
                 "--mlflow": opts.mlflow, "--min-pass-rate": opts.min_pass_rate,
                 "--min-mean": opts.min_mean or None}
            )  # fmt: skip

            def metrics_for(evalsets: Sequence[EvalSet]) -> list[Metric]:
                return _metrics_for(request, evalsets)[0]

            raise typer.Exit(dry_run_command(request, metrics_for, out=opts.out))
        check_sinks(
            request.sinks or SinkOptions()
        )  # e.g. an unreachable MLflow server: fail before the run
        with sigterm_as_interrupt(), frozen_heap_released():
            code = _run_eval(request, out=opts.out, junit=opts.junit, csv_path=opts.csv_path)
    raise typer.Exit(code)


@dataclass
class _Request:
    """One `assay eval` invocation, its flags parsed."""

    data: list[Path]
    from_format: str | None
    mapping: dict[str, str] | None
    config: EvalConfig | None
    metric_flags: dict[str, float | None] | None
    agent: str | None
    options: RunOptions
    judges: JudgeRunOptions
    store_url: str | None  # None: --no-store; "": the default store
    fresh: bool
    quiet: bool
    persona_file: Path | None
    verbose: bool = False
    sinks: SinkOptions | None = None  # None: the defaults (ADK history on, no MLflow)
    selection: CaseSelection = field(default_factory=CaseSelection)
    name: str | None = None
    min_pass_rate: float | None = None
    min_means: dict[str, float] = field(default_factory=dict)
    html: Path | None = None
    prices_file: str | None = None
    workers: int | None = None
    executor: Executor | None = None  # None: the local one
    dry_run: bool = False


def _config_for(config: Path | None, first_data: Path) -> EvalConfig | None:
    from assay.config import find_config_beside, load_config

    if config is not None:
        return load_config(config)
    found = find_config_beside(first_data)
    return load_config(found) if found is not None else None


def _simulator_options(
    user_model: str | None,
    persona_file: Path | None,
    stop_signal: str | None,
    max_turns: int | None,
    cfg: EvalConfig | None,
    cache_replies: bool = False,
) -> SimulatorOptions | None:
    """The simulated user from the flags, else from the config's `user_simulator_config`."""
    raw = (cfg.user_simulator_config if cfg is not None else None) or {}
    # ADK configs spell keys in either case (`maxAllowedInvocations`).
    from_config = {to_snake(k): v for k, v in raw.items()}
    model = user_model or from_config.get("model")
    if model is None and persona_file is None and stop_signal is None and max_turns is None:
        return None
    from assay.simulation import SimulatorOptions, load_personas

    options = SimulatorOptions(
        model=model,
        personas=load_personas(persona_file) if persona_file is not None else {},
        cache_replies=cache_replies,
    )
    if stop_signal is not None:
        options.stop_signal = stop_signal
    turns = max_turns if max_turns is not None else from_config.get("max_allowed_invocations")
    if turns is not None:
        options.max_turns = int(turns)
    if model is not None:
        options.validate()  # a bad simulator setting is a usage error, before any work
    return options


def _metrics_for(req: _Request, evalsets: Sequence[EvalSet]) -> tuple[list[Metric], dict[str, Any]]:
    """The metrics and the config document that describes them (stored with the run)."""
    from assay.config import default_criteria
    from assay.engine import build_metrics

    names: dict[str, Any] | None = dict(req.metric_flags) if req.metric_flags else None
    if req.config is None and names is None:
        names = default_criteria(evalsets)
    metrics = build_metrics(req.config, names)
    if req.prices_file is not None:
        from assay.metrics.budgets import apply_run_prices

        apply_run_prices(metrics, req.prices_file)
    document = req.config.dump() if req.config is not None else {"criteria": names or {}}
    return metrics, document


def _run_eval(req: _Request, *, out: Path | None, junit: Path | None, csv_path: Path | None) -> int:
    err = stderr_console()
    if req.from_format is not None:
        check_format(req.from_format, eval_set=True)
    # Row files are scored (or run through the agent) streamed, in memory bounded
    # whatever their size.
    streamed, planned_agent = _plan(req, err)
    if streamed is not None:
        return _run_streamed(req, streamed, out=out, csv_path=csv_path, junit=junit)
    # Imported here: a streamed run needs none of the whole-run pipeline (its judges,
    # agents and HTML report), and starts ~0.1 s sooner without them.
    from assay import formats
    from assay.agents import load_agent
    from assay.engine.runner import count_case_runs
    from assay.engine.selection import select_cases
    from assay.report.html import run_environment
    from assay.report.progress import PlainProgress, ProgressObserver
    from assay.session.run_session import RunSession
    from assay.session.sinks import interrupted_line
    from assay.store import Store

    # Explicit criteria are checked before loading the data; defaults depend on it.
    explicit = _metrics_for(req, []) if req.config is not None or req.metric_flags else None
    with gc_paused(req.agent is None), warnings.catch_warnings(record=True) as skipped:
        warnings.simplefilter("always", UserWarning)
        evalsets = formats.load_many(req.data, req.from_format, req.mapping)
    for warning in skipped:  # e.g. a trace that could not be rebuilt: one line each
        err.print(Text(f"warning: {warning.message}", style="yellow"), soft_wrap=True)
    evalsets = select_cases(evalsets, req.selection)
    # The loaded eval sets live until the process exits: move them out of the cyclic
    # GC's reach, or every full collection during scoring re-walks millions of objects.
    gc.freeze()
    metrics, config_doc = explicit or _metrics_for(req, evalsets)
    unknown = [n for n in req.min_means if n not in {m.name for m in metrics}]
    if unknown:
        raise ConfigError(
            f"--min-mean {unknown[0]}: not a metric of this run; its metrics are: "
            + ", ".join(m.name for m in metrics)
        )
    agent_obj = planned_agent
    if agent_obj is None and req.agent:
        agent_obj = load_agent(req.agent)
    if req.config is not None and req.config.source and not req.quiet:
        err.print(Text(f"criteria from {req.config.source}", style="dim"))
    check_distinct_ids(evalsets, req.data)
    total = count_case_runs(evalsets, req.options, agent_given=agent_obj is not None)

    observers: list[Any] = []
    progress = None
    if not req.quiet and err.is_terminal:
        progress = ProgressObserver(err, judges=req.judges.stats)
        observers.append(progress)
    elif not req.quiet:
        # No terminal (CI logs): a plain line every few seconds instead of a bar.
        observers.append(PlainProgress(err, judges=req.judges.stats))
    if req.verbose:
        from assay.report.console import TracebackPrinter

        observers.append(TracebackPrinter(err))
    db = Store.open(req.store_url or None) if req.store_url is not None else None
    session = RunSession(
        evalsets,
        metrics,
        agent=agent_obj,
        options=req.options,
        # The judge cache lives in the store (in memory with --no-store).
        judges=req.judges,
        store=db,
        config=config_doc,
        agent_label=redact_url(req.agent) if req.agent else None,
        persona_source=str(req.persona_file) if req.persona_file is not None else None,
        selection=req.selection.describe() if req.selection.active else None,
        run_extra={"prices_file": req.prices_file} if req.prices_file is not None else None,
        name=req.name,
        fresh=req.fresh,
        environment=run_environment(),
        executor=req.executor,
        observers=observers,
        sinks=_sinks(req, evalsets, config_doc, agent_obj, out=out, junit=junit, csv_path=csv_path),
        say=lambda line: err.print(Text(line, style="dim"), soft_wrap=True),
    )
    interrupted = False
    try:
        session.open()
        if session.resumed:
            err.print(
                Text(
                    f"resuming run {session.run_id}: {session.done_before} of {total} case"
                    " runs already done (--fresh starts a new run)",
                    style="yellow",
                )
            )
        busy = session.busy_note()
        if busy is not None:
            err.print(Text(busy, style="yellow"), soft_wrap=True)
        # On success the recorder writes the last results and marks the run COMPLETED.
        with gc_paused(agent_obj is None):
            result = session.run()
    except KeyboardInterrupt:
        interrupted = True
        if progress is not None:
            progress.close()
        result = session.finish_interrupted()
    finally:
        if db is not None:
            db.close()
    if interrupted:
        err.print(
            Text(
                interrupted_line(len(result.cases), total, stored=db is not None),
                style="bold yellow",
            ),
            soft_wrap=True,  # one line, whatever the terminal's width
        )
    # Everything left is garbage at exit; freezing it spares the interpreter's final
    # collection a walk over every result object (about a second per 100k rows).
    gc.freeze()
    if interrupted:
        return EXIT_INTERRUPTED
    if req.min_pass_rate is not None or req.min_means:
        return _gate(req, result, err)
    return 0 if result.cases and result.status is Status.PASSED else 1


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


@contextmanager
def _interrupt_said(reports: Sequence[Path | None], *, stored: bool) -> Iterator[None]:
    """Ctrl-C before the run's results were reported (starting up, loading the data,
    opening the run; the run's own interrupts are handled where it runs): say which
    reports are as they were, and how to go on; exit 130."""
    targets = [p for p in reports if p is not None]
    before = {p: _stamp(p) for p in targets}
    try:
        yield
    except KeyboardInterrupt:
        from assay.session.sinks import kept_line

        err = stderr_console()
        for path in targets:
            if before[path] is not None and _stamp(path) == before[path]:
                err.print(Text(kept_line(path), style="dim"), soft_wrap=True)
        again = (
            "run the same command again (case runs already stored are not run again)"
            if stored
            else "run the same command again"
        )
        message = f"interrupted before the run's results were reported; {again}"
        err.print(Text(message, style="bold yellow"), soft_wrap=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _gate(req: _Request, result: Any, err: Console) -> int:
    from assay.report.gates import gate_exit_code

    return gate_exit_code(result, req.min_pass_rate, req.min_means, err)


def _sinks(
    req: _Request,
    evalsets: Sequence[EvalSet],
    config_doc: dict[str, object],
    agent: object,
    *,
    out: Path | None,
    junit: Path | None,
    csv_path: Path | None,
) -> list[RunSink]:
    """Where the finished run goes, in order: the terminal, the report files, the
    stored-run line, then other tools (ADK eval history, MLflow) for completed runs."""
    from assay.interop.sinks import SinkOptions, interop_sinks
    from assay.session.sinks import ReportFiles

    shown = redact_url(req.agent) if req.agent else None  # no password or token (#31)
    files = ReportFiles(
        out=out,
        junit=junit,
        csv_path=csv_path,
        html=req.html,
        eval_set_files={e.id: str(f) for e, f in zip(evalsets, req.data, strict=True)},
        name=req.name,
        agent=shown,
        config=config_doc,
        runs=req.options.runs or 1,
    )
    params = {
        "eval_sets": [e.id for e in evalsets],
        "agent": shown,
        "criteria": config_doc.get("criteria"),
        "judge_model": req.judges.model,
        "runs": req.options.runs,
    }
    others = interop_sinks(
        req.sinks or SinkOptions(), agent_spec=req.agent, agent=agent, params=params
    )
    return [_Terminal(req.quiet), files, _StoredLine(req.quiet, req.verbose), *others]


@dataclass(frozen=True)
class _Terminal:
    """The results table (or the one-line summary with --quiet) on stdout."""

    quiet: bool
    partial: bool = True

    def deliver(self, run: FinishedRun) -> list[str]:
        from assay.report import render_results, summary_text

        console: Console = stdout_console()
        result = run.result
        if self.quiet:
            console.print(summary_text(result))
            return []
        render_results(result, console)
        if "judge/calls" in result.summary:
            from assay.judges.stats import JudgeStats, cost_line

            console.print(Text(JudgeStats.from_summary(result.summary).describe(), style="dim"))
            cost = cost_line(result.summary)
            if cost is not None:
                console.print(Text(cost, style="dim"))
        return []


@dataclass(frozen=True)
class _StoredLine:
    """`run ID stored`, and where the tracebacks of the agent's exceptions are."""

    quiet: bool
    verbose: bool = False
    partial: bool = True

    def deliver(self, run: FinishedRun) -> list[str]:
        result = run.result
        if self.quiet:
            return []
        lines = [f"run {result.run_id} stored"] if result.run_id is not None else []
        raised = [c for c in result.cases if c.traceback is not None]
        if raised and not self.verbose:
            from assay.report.console import traceback_hint

            lines.append(traceback_hint(result.run_id, raised, counted=True))
        return lines


@dataclass(frozen=True)
class _Streamed:
    """A run `session.plan` streams: its row files, metrics and loaded agent."""

    files: list[RowFile]
    metrics: list[Metric]
    config_doc: dict[str, Any]
    agent: Any


def _plan(req: _Request, err: Console) -> tuple[_Streamed | None, Any]:
    """The run as `session.plan.plan_run` plans it: what a streamed run needs, or None
    (the data are loaded whole; when an option stood in the way one line says which,
    and --verbose says any other reason); and the agent when it was loaded to plan."""
    from assay.engine.executors import LocalExecutor
    from assay.session.plan import RunFacts, plan_run

    local = isinstance(req.executor or LocalExecutor(), LocalExecutor)
    files = _streamable(req, err)
    named = req.config is not None or bool(req.metric_flags)
    metrics, config_doc = _metrics_for(req, []) if files and named else ([], {})
    agent = None
    if files and named and local and req.agent is not None:
        from assay.agents import load_agent

        agent = load_agent(req.agent)
    plan = plan_run(
        RunFacts(
            files=files,
            metrics=metrics if named else None,
            agent=req.agent is not None,
            local=local,
            runs=req.options.runs,
            selection=req.selection.active,
            html_without_store=req.html is not None and req.store_url is None,
            mlflow=req.sinks is not None and req.sinks.mlflow_uri is not None,
            adk_history=_adk_history(req, agent),
        )
    )
    notice = plan.notice()
    # Said of row files only: other data have no rows to stream.
    if notice is not None and files and not req.quiet and (plan.said or req.verbose):
        err.print(Text(notice, style="dim"))
    if not plan.streams or files is None:
        return None, agent
    return _Streamed(files, metrics, config_doc, agent), agent


def _streamable(req: _Request, err: Console) -> list[RowFile] | None:
    """The inputs as row files (`session.plan.row_files`), else None; tests patch it to
    run the loaded path over the same files."""
    from assay.session.plan import row_files

    return row_files(req.data, req.from_format)


def _adk_history(req: _Request, agent: object) -> bool:
    """An ADK agent's completed run goes to ADK's eval history (unless --no-adk-history)."""
    if agent is None or (req.sinks is not None and not req.sinks.adk_history):
        return False
    from assay.agents.adk import AdkAgent

    return isinstance(agent, AdkAgent)


def _run_streamed(
    req: _Request,
    streamed: _Streamed,
    *,
    out: Path | None,
    csv_path: Path | None,
    junit: Path | None,
) -> int:
    """Score the planned row files streamed (through the agent when given)."""
    from assay._malloc import keep_freed_memory
    from assay.cli.eval_stream import (
        report_streamed,
        run_agent_streamed,
        stream_settings,
    )
    from assay.session.run_session import run_options_doc
    from assay.session.streaming import StreamingRun
    from assay.store import Store

    files, metrics, config_doc = streamed.files, streamed.metrics, streamed.config_doc
    err = stderr_console()
    check_distinct_set_ids([f.eval_set_id for f in files], req.data)
    names = [m.name for m in metrics]
    unknown = [n for n in req.min_means if n not in names]
    if unknown:
        raise ConfigError(
            f"--min-mean {unknown[0]}: not a metric of this run; its metrics are: "
            + ", ".join(names)
        )
    if req.config is not None and req.config.source and not req.quiet:
        err.print(Text(f"criteria from {req.config.source}", style="dim"))
    identity = {
        "eval_set_ids": [f.eval_set_id for f in files],
        "metrics": names,
        "config": {
            **config_doc,
            "run_options": run_options_doc(
                req.options,
                str(req.persona_file) if req.persona_file is not None else None,
                None,
                {"prices_file": req.prices_file} if req.prices_file is not None else None,
            ),
        },
        "agent": redact_url(req.agent) if req.agent else None,
    }
    progress = _progress_for(req, err)
    # This process is the `assay` program's own: its batches' buffers are kept for the
    # next batch (`assay._malloc`; the pool's workers do the same, `init_worker`).
    keep_freed_memory()
    db = Store.open(req.store_url or None) if req.store_url is not None else None
    try:
        if req.agent is not None:
            outcome = run_agent_streamed(
                req, streamed.agent, files, metrics, identity, db=db, progress=progress,
                out=out, csv_path=csv_path, junit=junit,
            )  # fmt: skip
        else:
            outcome = StreamingRun(
                files,
                metrics,
                identity,
                workers=req.workers,
                **stream_settings(req, db=db, progress=progress, out=out, csv_path=csv_path,
                                  junit=junit),
            ).run()  # fmt: skip
        if req.html is not None and db is not None and outcome.run_id is not None:
            # The page embeds every case: built from the store once the run is over.
            outcome.written.append(_html_from_store(db, outcome.run_id, req.html))
    finally:
        if progress is not None:
            progress.close()
        if db is not None:
            db.close()
    return report_streamed(req, outcome, metrics)


def _html_from_store(db: Store, run_id: str, path: Path) -> Path:
    """The HTML report of a stored run, as `assay report RUN --html` writes it."""
    from assay.report.html import write_html
    from assay.store.reading import load_run

    info, result = load_run(db, run_id)
    return write_html(result, path, run=info)


def _progress_for(req: _Request, err: Console) -> Any:
    """A bar on a terminal, plain lines in logs (CI), nothing with --quiet."""
    from assay.report.progress import PlainProgress, ProgressObserver

    if req.quiet:
        return None
    return ProgressObserver(err) if err.is_terminal else PlainProgress(err)
