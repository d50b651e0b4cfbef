"""The Python API for scripts and notebooks: `evaluate(...)` and Vertex-style `EvalTask`.

Both build the same run the CLI does (formats → metrics → engine) from in-memory
objects: a path or paths, an `EvalSet`, a list of row dicts or a pandas DataFrame; metric
names, `Metric` objects or `CustomMetric`s; an agent callable or "module:attr".
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from assay.agents import Agent, as_agent, load_agent
from assay.config import EvalConfig, find_config_beside, load_config, parse_config
from assay.engine import RunObserver, RunOptions, arun, build_metrics
from assay.engine.judging import JudgeRunOptions
from assay.errors import ConfigError, InputError
from assay.metrics.base import Metric
from assay.metrics.custom import CustomMetric
from assay.model.core import EvalSet
from assay.model.results import EvalResult

_T = TypeVar("_T")

Dataset = Any  # a path, paths, an EvalSet (or several), row dicts or a DataFrame


def _is_path(value: Any) -> bool:
    return isinstance(value, str | Path)


def _is_dataframe(value: Any) -> bool:
    return hasattr(value, "to_dict") and hasattr(value, "columns")


def load_dataset(
    dataset: Dataset,
    *,
    format: str | None = None,
    mapping: Mapping[str, str] | None = None,
) -> list[EvalSet]:
    """Everything `evaluate` accepts as a dataset, as a list of eval sets.

    Rows (dicts or a DataFrame) are Vertex rows unless `format` says otherwise
    ("mlflow", "trace"); files are detected unless `format` is given.
    """
    from assay import formats

    if isinstance(dataset, EvalSet):
        return [dataset]
    if _is_path(dataset):
        return [formats.load(dataset, format, mapping)]
    if _is_dataframe(dataset):
        return [formats.load_rows(dataset, format or "vertex", mapping)]
    if isinstance(dataset, Sequence) and not isinstance(dataset, str | bytes):
        items = list(dataset)
        if not items:
            raise InputError("the dataset is empty", expected="at least one row or file")
        if all(isinstance(i, EvalSet) for i in items):
            return items
        if all(_is_path(i) for i in items):
            return formats.load_many(items, format, mapping)
        if all(isinstance(i, Mapping) for i in items):
            return [formats.load_rows([dict(i) for i in items], format or "vertex", mapping)]
    raise InputError(
        f"cannot evaluate a dataset of type {type(dataset).__name__}",
        expected="a path, a list of paths, an EvalSet, a list of row dicts or a DataFrame",
    )


def _resolve_config(config: Any, dataset: Dataset) -> EvalConfig | None:
    if config is None:
        first = dataset if _is_path(dataset) else None
        if (
            first is None
            and isinstance(dataset, Sequence)
            and not isinstance(dataset, str)
            and dataset
            and _is_path(dataset[0])
        ):
            first = dataset[0]
        # As in ADK: a test_config.json beside the eval set file applies.
        found = find_config_beside(first) if first is not None else None
        return load_config(found) if found is not None else None
    if isinstance(config, EvalConfig):
        return config
    if _is_path(config):
        return load_config(config)
    if isinstance(config, Mapping):
        return parse_config(dict(config), source="config")
    raise ConfigError(
        f"config must be an EvalConfig, a dict or a path, not {type(config).__name__}"
    )


def resolve_metrics(metrics: Any, config: EvalConfig | None) -> list[Metric]:
    """Metric objects from names, `{name: criterion}`, Metric or CustomMetric objects."""
    if metrics is None:
        return build_metrics(config)
    if isinstance(metrics, str | Metric) or not isinstance(metrics, Sequence | Mapping):
        metrics = [metrics]
    if isinstance(metrics, Mapping):
        return build_metrics(config, dict(metrics))
    names: list[str] = []
    custom: list[Any] = []
    order: list[str | Metric] = []  # the caller's order: a name, or a ready Metric
    for item in metrics:
        if isinstance(item, str):
            names.append(item)
            order.append(item)
        elif isinstance(item, Metric):
            order.append(item)
        elif isinstance(item, CustomMetric):
            custom.append(item)
            order.append(item.name)
        else:
            raise ConfigError(
                f"cannot use {item!r} as a metric: give a metric name, a Metric or a CustomMetric"
            )
    if not order:
        raise ConfigError("metrics is empty: give metric names, or None for the config's")
    built = {m.name: m for m in build_metrics(config, names, custom)} if names or custom else {}
    result = [built[entry] if isinstance(entry, str) else entry for entry in order]
    seen: set[str] = set()
    for metric in result:
        if metric.name in seen:
            raise ConfigError(f"metric {metric.name!r} is requested twice")
        seen.add(metric.name)
    return result


def _resolve_agent(agent: Any) -> Agent | None:
    if agent is None:
        return None
    if isinstance(agent, str):
        return load_agent(agent)
    return as_agent(agent)


def _open_store(store: Any) -> Any:
    if store is None or store is False:
        return None
    from assay.store import Store

    if isinstance(store, Store):
        return store
    return Store.open(None if store is True else str(store))


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
    metrics: Any = None,
    agent: Any = None,
    config: Any = None,
    *,
    runs: int = 1,
    concurrency: int = 4,
    timeout_s: float | None = 300.0,
    store: Any = None,
    format: str | None = None,
    mapping: Mapping[str, str] | None = None,
    observers: Sequence[RunObserver] = (),
    run_name: str | None = None,
    judge: str | None = None,
    judge_concurrency: int = 8,
    use_cache: bool = True,
) -> EvalResult:
    """Async `evaluate` for code that already runs an event loop and wants to await."""
    evalsets = load_dataset(dataset, format=format, mapping=mapping)
    cfg = _resolve_config(config, dataset)
    metric_objects = resolve_metrics(metrics, cfg)
    adapter = _resolve_agent(agent)
    options = RunOptions(runs=runs, concurrency=concurrency, timeout_s=timeout_s)
    judge_options = JudgeRunOptions(model=judge, concurrency=judge_concurrency, use_cache=use_cache)
    opened = _open_store(store)
    if opened is None:
        return await arun(
            evalsets,
            metric_objects,
            agent=adapter,
            options=options,
            observers=observers,
            judges=judge_options,
        )
    judge_options = replace(judge_options, store=opened)
    from assay.store import StoreRecorder

    run_id = opened.start_run(
        eval_set_ids=[e.id for e in evalsets],
        metrics=[m.name for m in metric_objects],
        config=cfg.dump() if cfg is not None else {},
        agent=agent if isinstance(agent, str) else getattr(adapter, "name", None),
        runs=runs,
        name=run_name,
    )
    recorder = StoreRecorder(opened, run_id)
    try:
        # On success the recorder writes the last results and marks the run COMPLETED.
        result = await arun(
            evalsets,
            metric_objects,
            agent=adapter,
            options=options,
            observers=[*observers, recorder],
            judges=judge_options,
        )
    except (KeyboardInterrupt, asyncio.CancelledError):
        recorder.mark_interrupted()
        raise
    except BaseException as exc:
        recorder.mark_error(f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if opened is not store:
            opened.close()
    result.run_id = run_id
    return result


def evaluate(
    dataset: Dataset,
    metrics: Any = None,
    agent: Any = None,
    config: Any = None,
    *,
    runs: int = 1,
    concurrency: int = 4,
    timeout_s: float | None = 300.0,
    store: Any = None,
    format: str | None = None,
    mapping: Mapping[str, str] | None = None,
    run_name: str | None = None,
    judge: str | None = None,
    judge_concurrency: int = 8,
    use_cache: bool = True,
) -> EvalResult:
    """Evaluate a dataset, optionally running an agent on it, and return the result.

    - `dataset`: a file path, a list of paths, an `EvalSet`, a list of row dicts or a
      pandas DataFrame (rows are Vertex rows unless `format="mlflow"` / `"trace"`);
    - `metrics`: metric names, a `{name: threshold or options}` dict, `Metric` or
      `CustomMetric` objects; None uses `config` (or a `test_config.json` beside the
      dataset file) and else the defaults `tool_trajectory_avg_score: 1.0`,
      `response_match_score: 0.8`;
    - `agent`: a callable (sync or async), an Agent adapter, or "module:attr"; None
      scores the responses recorded in the dataset;
    - `config`: an `EvalConfig`, a config dict (`{"criteria": {...}}`) or a path;
    - `store`: None (nothing stored), True (the default `.assay/assay.db`), a database
      URL or an open `Store`; `run_name` names the stored run;
    - `judge`: the LLM judge of judged metrics that name none in their
      `judge_model_options` (`openai:NAME`, `gemini-NAME`, `anthropic:NAME`,
      `local:PATH.gguf`); `judge_concurrency` judge calls in flight per backend;
      replies are cached in `store` (in memory without one), `use_cache=False` calls
      the judge anyway. The summary gets `judge/calls`, `judge/cache_hits`, ....

    Works inside a running event loop (Jupyter) too.
    """
    return run_sync(
        aevaluate(
            dataset,
            metrics,
            agent,
            config,
            runs=runs,
            concurrency=concurrency,
            timeout_s=timeout_s,
            store=store,
            format=format,
            mapping=mapping,
            run_name=run_name,
            judge=judge,
            judge_concurrency=judge_concurrency,
            use_cache=use_cache,
        )
    )


class EvalTaskResult(EvalResult):
    """An `EvalResult` with Vertex's `summary_metrics` and `metrics_table` names."""

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
        metrics: Any = None,
        experiment: str | None = None,
        metric_column_mapping: Mapping[str, str] | None = None,
        *,
        config: Any = None,
        format: str | None = None,
        store: Any = None,
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
        runnable: Any = None,
        *,
        runs: int = 1,
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
