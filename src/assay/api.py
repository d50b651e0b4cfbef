"""The Python API for scripts and notebooks: `evaluate(...)` and Vertex-style `EvalTask`.

Both build the same run the CLI does (formats → metrics → engine) from in-memory
objects: a path or paths, an `EvalSet`, a list of row dicts or a pandas DataFrame; metric
names, `Metric` objects or `CustomMetric`s; an agent callable or "module:attr".
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from assay.agents.tools import ToolBehavior
from assay.api_inputs import (
    AgentInput,
    ConfigInput,
    Dataset,
    Metrics,
    StoreInput,
    environment,
    interop_sinks,
    load_dataset,
    open_store,
    persona_source,
    resolve_agent,
    resolve_config,
    resolve_metrics,
    run_options,
    simulator_options,
)
from assay.api_rows import evaluate_recorded_streamed
from assay.api_stream import (
    aevaluate_streamed,
    check_keep_cases,
    finish_later,
    keep_at_most,
    plan_evaluate,
)
from assay.core.cases import Persona
from assay.core.results import EvalResult
from assay.engine import RunObserver
from assay.engine.executors import Executor, named
from assay.engine.judge_options import JudgeRunOptions
from assay.engine.replay import RunMethod
from assay.formats._common import gc_paused
from assay.redact import redact_url
from assay.session.plan import Driver
from assay.session.run_session import RunSession

if TYPE_CHECKING:
    from assay.simulation import SimulatorOptions

_T = TypeVar("_T")
_P = ParamSpec("_P")


def _signature_of(
    model: Callable[_P, Coroutine[Any, Any, EvalResult]],
) -> Callable[[Callable[..., EvalTaskResult]], Callable[_P, EvalTaskResult]]:
    """`evaluate` takes `aevaluate`'s parameters, written once (on `aevaluate`): for
    mypy (the `ParamSpec`) and for `inspect.signature` / `help()` (`__signature__`)."""

    def take(function: Callable[..., EvalTaskResult]) -> Callable[_P, EvalTaskResult]:
        signature = inspect.signature(model)
        function.__signature__ = signature.replace(  # type: ignore[attr-defined]
            return_annotation="EvalTaskResult"
        )
        return function

    return take


def run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine to completion, also from inside a running loop (Jupyter).

    A notebook cell already runs inside an event loop, where `asyncio.run` is not
    allowed; the coroutine then runs on its own loop in a worker thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def aevaluate(
    dataset: Dataset,
    metrics: Metrics = None,
    agent: AgentInput = None,
    config: ConfigInput = None,
    *,
    runs: int | None = None,
    concurrency: int = 4,
    timeout_s: float | None = 300.0,
    store: StoreInput = None,
    format: str | None = None,
    mapping: Mapping[str, str] | None = None,
    observers: Sequence[RunObserver] = (),
    run_name: str | None = None,
    judge: str | None = None,
    judge_concurrency: int = 8,
    judge_samples: int | None = None,
    use_cache: bool = True,
    judge_batch: bool = False,
    tool_behavior: ToolBehavior | str = ToolBehavior.REAL,
    run_method: RunMethod | str | None = None,
    user_model: str | None = None,
    simulator: SimulatorOptions | None = None,
    personas: str | Path | Mapping[str, Persona] | Sequence[Persona] | None = None,
    fresh: bool = False,
    keep_cases: int | None = None,
    mlflow: str | None = None,
    mlflow_experiment: str | None = None,
    adk_history: bool | str | Path = False,
    executor: str | Executor = "local",
    ray_address: str | None = None,
    dry_run: bool = False,
    max_judge_usd: float | None = None,
    max_judge_calls: int | None = None,
    prices: str | Path | None = None,
) -> EvalResult:
    """`evaluate` for code that runs an event loop and awaits (an async service, a
    notebook cell): the run happens in the caller's loop, no thread or loop of its own.
    An agent over row files is streamed as `evaluate` streams it (docs/python-api.md);
    cancelling the awaiting task leaves a stored run INTERRUPTED, resumable by the same
    call. `observers` (`RunObserver`s) are told the case runs to do, each result once
    stored as it finishes, and the end result."""
    check_keep_cases(keep_cases)
    judge_options = JudgeRunOptions(
        model=judge,
        concurrency=judge_concurrency,
        use_cache=use_cache,
        num_samples=judge_samples,
        batch=judge_batch,
        max_usd=max_judge_usd,
        max_calls=max_judge_calls,
        prices_file=str(prices) if prices is not None else None,
    )
    if dry_run:
        return await _dry_run(
            dataset, metrics, agent, config, format=format, mapping=mapping, store=store,
            judges=judge_options,
            options=run_options(
                runs=runs, concurrency=concurrency, timeout_s=timeout_s,
                tool_behavior=tool_behavior, run_method=run_method,
                simulator=simulator_options(user_model, simulator, personas),
            ),
        )  # fmt: skip
    planned = plan_evaluate(
        dataset, metrics, agent, config, format=format, runs=runs, executor=executor,
        observers=bool(observers), keep_cases=keep_cases, mlflow=mlflow is not None,
        adk_history=bool(adk_history),
    )  # fmt: skip
    if planned.plan.driver is Driver.AGENT_ROWS:
        return await aevaluate_streamed(
            planned, agent, runs=runs, concurrency=concurrency, timeout_s=timeout_s,
            store=store, mapping=mapping, run_name=run_name, judge=judge,
            judge_concurrency=judge_concurrency, use_cache=use_cache,
            tool_behavior=tool_behavior, run_method=run_method,
            simulator=simulator_options(user_model, simulator, personas),
            persona_source=persona_source(personas), fresh=fresh, keep_cases=keep_cases,
            observers=observers,
        )  # fmt: skip
    if planned.plan.driver is Driver.ROWS:
        return evaluate_recorded_streamed(
            planned, store=store, mapping=mapping, run_name=run_name, fresh=fresh,
            keep_cases=keep_cases,
        )  # fmt: skip
    # A mistyped executor or a missing ray extra fails before the data is read.
    runner = executor if not isinstance(executor, str) else named(executor, ray_address=ray_address)
    evalsets = load_dataset(dataset, format=format, mapping=mapping)
    cfg = resolve_config(config, dataset)
    metric_objects = resolve_metrics(metrics, cfg, evalsets)
    adapter = resolve_agent(agent)
    options = run_options(
        runs=runs,
        concurrency=concurrency,
        timeout_s=timeout_s,
        tool_behavior=tool_behavior,
        run_method=run_method,
        simulator=simulator_options(user_model, simulator, personas),
    )
    agent_label = redact_url(agent) if isinstance(agent, str) else getattr(adapter, "name", None)
    sinks = interop_sinks(
        evalsets, cfg, agent, adapter, agent_label,
        mlflow=mlflow, mlflow_experiment=mlflow_experiment, adk_history=adk_history,
        judge=judge, runs=runs,
    )  # fmt: skip
    opened = open_store(store)
    session = RunSession(
        evalsets,
        metric_objects,
        agent=adapter,
        options=options,
        judges=judge_options,
        store=opened,
        config=cfg.dump() if cfg is not None else {},
        agent_label=agent_label,
        persona_source=persona_source(personas),
        name=run_name,
        fresh=fresh,
        environment=environment() if opened is not None else None,
        observers=finish_later(observers, keep_cases),
        sinks=sinks,
        executor=runner,
    )
    try:
        result = await session.arun()
    finally:
        if opened is not None and opened is not store:
            opened.close()
    return keep_at_most(
        result, keep_cases, metric_objects, agent_run=adapter is not None, observers=observers
    )


async def _dry_run(
    dataset: Dataset,
    metrics: Any,
    agent: Any,
    config: Any,
    *,
    format: str | None,
    mapping: Mapping[str, str] | None,
    store: Any,
    judges: JudgeRunOptions,
    options: Any,
) -> EvalResult:
    """The estimate of the run asked for, as a result with no case: its summary holds
    the `judge/...` and `agent/...` keys a real run's summary has (docs/cost.md)."""
    from dataclasses import replace

    from assay.session.estimate import aestimate_run

    evalsets = load_dataset(dataset, format=format, mapping=mapping)
    cfg = resolve_config(config, dataset)
    metric_objects = resolve_metrics(metrics, cfg, evalsets)
    opened = open_store(store)
    try:
        estimate = await aestimate_run(
            evalsets,
            metric_objects,
            options=options,
            judges=replace(judges, store=opened),
            agent_given=agent is not None,
        )
    finally:
        if opened is not None and opened is not store:
            opened.close()
    return EvalResult(estimate.summary(), [], metrics=[m.name for m in metric_objects])


_AEVALUATE = inspect.signature(aevaluate)


@_signature_of(aevaluate)
def evaluate(*args: Any, **kwargs: Any) -> EvalTaskResult:
    """Evaluate a dataset, optionally running an agent on it, and return the result.

    - `dataset`: a file path, a list of paths, an `EvalSet`, a list of row dicts or a
      pandas DataFrame (rows are Vertex rows unless `format="mlflow"` / `"trace"`);
    - `metrics`: metric names, a `{name: threshold or options}` dict, `Metric` or
      `CustomMetric` objects; None uses `config` (or a `test_config.json` beside the
      dataset file) and else the defaults `tool_trajectory_avg_score: 1.0`,
      `response_match_score: 0.8` (CES golden evaluations: CES's golden checks);
    - `agent`: a callable (sync or async), a Google ADK agent, an Agent adapter, or a
      spec string ("module:attr", an ADK agent folder, an http(s) URL); None scores the
      responses recorded in the dataset;
    - `runs`: runs of every case; None: 1 per golden or recorded case, 5 per scenario;
    - `tool_behavior`: "REAL" (default), "FAKE" (mock responses answer tool calls; a
      call no mock matches gets an error) or "MIXED" (mocks where given, else real);
    - `run_method`: golden replay "STABLE" (each turn in a fresh session seeded with
      the expected earlier turns) or "NAIVE" (one session); None: STABLE for CES
      goldens, NAIVE for other conversations (as ADK runs them);
    - `user_model` (e.g. "openai:gpt-4o-mini") or `simulator` (a `SimulatorOptions`):
      the simulated user of scenario cases; `personas`: a persona file, a
      `{id: Persona}` mapping or a list of personas for scenarios naming theirs by id;
    - `config`: an `EvalConfig`, a config dict (`{"criteria": {...}}`) or a path;
    - `store`: None (nothing stored), True (the default `.assay/assay.db`), a database
      URL or an open `Store`; `run_name` names the stored run. As with `assay eval`,
      an interrupted run (Ctrl-C, a crash, a kill) of the same evaluation in that store
      is resumed: its stored case runs are kept and only the rest run; `fresh=True`
      starts a new run anyway;
    - `keep_cases`: None keeps every case result in the returned result; a count N
      keeps them all when the run has at most N case runs, else the first N that did
      not pass (and their rows), while `summary` covers the whole run and the store
      holds every result. A streamed run (above) then holds nothing per row but
      numbers: a million rows fit in memory;
    - `judge`: the LLM judge of judged metrics that name none in their
      `judge_model_options` (`openai:NAME`, `gemini-NAME`, `anthropic:NAME`,
      `local:PATH.gguf`); `judge_concurrency` judge calls in flight per backend;
      replies are cached in `store` (in memory without one), `use_cache=False` calls
      the judge anyway. The summary gets `judge/calls`, `judge/cache_hits`, ....
      `judge_samples` (`--judge-samples`): samples per judged item for every judged
      metric; items whose samples straddle the threshold are marked unstable
      (docs/judges.md) and counted in the summary's `judge/unstable/METRIC`.
      `judge_batch=True` sends judge calls through the vendor's batch interface
      (`assay eval --judge-batch`, docs/judges.md; not on a streamed agent run),
      priced at the batch price; the caps below admit each call before it is queued.
    - `mlflow`: an MLflow tracking URI (`sqlite:///mlflow.db`, `http://host:5000`) the
      completed run is also logged to, as `assay eval --mlflow` does (experiment
      `mlflow_experiment`, default "assay"; needs `assay[mlflow]`); an unusable URI
      fails before anything runs. `adk_history=True`: an ADK agent's completed run is
      also written to its folder's `.adk/eval_history/`, where `adk web` lists it (the
      folder of the module defining the agent as `root_agent`; or pass the agent
      folder, `adk_history="path/to/agent"`). `assay eval` does that by default; from
      Python it is asked for.
    - `executor`: where the case runs execute: "local" (this process, default) or
      "ray" (a Ray cluster: `ray_address`, else `RAY_ADDRESS`, else the cluster this
      process already joined with `ray.init`, else a local one for this run; needs
      `assay[ray]`, see docs/scale.md), or an `Executor` such as
      `RayExecutor(address, runtime_env={...})`. Results and the store's content are
      the same whichever runs them.

    - `dry_run=True`: run nothing; the result has no case and its summary is the
      estimate: judge calls, cache hits, tokens and price per judged metric and judge
      model (`judge/cost/{metric}/{model}/...`), agent calls (docs/cost.md).
      `max_judge_usd` / `max_judge_calls` cap the judges (the rest NOT_EVALUATED with
      "judge budget reached"); `prices` is a price table laid over the shipped one.

    - `observers`: `RunObserver`s told the case runs to do, each result once stored as
      it finishes, and the end result (as `aevaluate`'s).

    The parameters are `aevaluate`'s, declared once there. Works inside a running event
    loop (Jupyter) too, where the result shows itself as a table (`_repr_html_`).
    """
    # Scoring recorded data (no agent) makes no reference cycles, only millions of
    # short-lived objects whose collector passes cost ~40 % of the run: paused, as
    # `assay eval` does. Only here, where the caller waits for the whole run; an
    # awaited `aevaluate` shares its process with the caller's other tasks.
    agent = _AEVALUATE.bind(*args, **kwargs).arguments.get("agent")
    with gc_paused() if agent is None else contextlib.nullcontext():
        result = run_sync(aevaluate(*args, **kwargs))
    return EvalTaskResult.from_result(result)


class EvalTaskResult(EvalResult):
    """An `EvalResult` with Vertex's `summary_metrics` and `metrics_table` names, which
    renders itself in Jupyter (summary, metric means and intervals, the case table with
    each failed case's reason)."""

    def _repr_html_(self) -> str:
        from assay.report.notebook import notebook_html

        return notebook_html(self)

    @property
    def summary_metrics(self) -> dict[str, Any]:
        return self.summary

    @property
    def metrics_table(self) -> Any:
        """The rows as a pandas DataFrame when pandas is installed, else a list of dicts."""
        try:
            import pandas as pd
        except ImportError:
            return self.rows
        return pd.DataFrame(self.rows)


class EvalTask:
    """Vertex AI style: `EvalTask(dataset, metrics).evaluate(runnable=agent)`.

    `metric_column_mapping` maps a metric input name to the dataset column holding it,
    e.g. `{"reference": "golden_answer"}`. `experiment` names the run in the store when
    `store` is given.
    """

    def __init__(
        self,
        dataset: Dataset,
        metrics: Metrics = None,
        experiment: str | None = None,
        metric_column_mapping: Mapping[str, str] | None = None,
        *,
        config: ConfigInput = None,
        format: str | None = None,
        store: StoreInput = None,
    ) -> None:
        self.dataset = dataset
        self.metrics = metrics
        self.experiment = experiment
        self.metric_column_mapping = dict(metric_column_mapping or {})
        self.config = config
        self.format = format
        self.store = store

    def evaluate(
        self,
        runnable: AgentInput = None,
        *,
        runs: int | None = None,
        concurrency: int = 4,
        timeout_s: float | None = 300.0,
    ) -> EvalTaskResult:
        """Run `runnable` (an agent callable, or None for recorded responses) and score."""
        # Vertex maps metric input -> dataset column; the format loaders take the
        # opposite direction (file column -> assay field).
        mapping = {column: field for field, column in self.metric_column_mapping.items()}
        result = evaluate(
            self.dataset,
            self.metrics,
            runnable,
            self.config,
            runs=runs,
            concurrency=concurrency,
            timeout_s=timeout_s,
            store=self.store,
            format=self.format,
            mapping=mapping or None,
            run_name=self.experiment,
        )
        return EvalTaskResult.from_result(result)
