"""What `assay.evaluate` accepts, resolved: datasets, config, metrics, agent, simulated user.

Each function takes the loose forms a notebook user passes (paths, row dicts, a
DataFrame, metric names or objects, a callable or "module:attr") and returns what the
engine runs on, raising an `AssayError` that says what was expected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard

from assay.agents import Agent, as_agent, load_agent
from assay.config import (
    EvalConfig,
    default_criteria,
    find_config_beside,
    load_config,
    parse_config,
)
from assay.core.cases import EvalSet, Persona
from assay.engine import build_metrics
from assay.errors import ConfigError, InputError
from assay.metrics.base import Metric
from assay.metrics.custom import CustomMetric

if TYPE_CHECKING:
    from google.adk.agents.base_agent import BaseAgent

    from assay.agents.tools import ToolBehavior
    from assay.engine.options import RunOptions
    from assay.engine.replay import RunMethod
    from assay.session.sinks import RunSink
    from assay.simulation import SimulatorOptions
    from assay.store import Store

Dataset = Any  # a path, paths, an EvalSet (or several), row dicts or a DataFrame


MetricInput: TypeAlias = "str | Metric | CustomMetric"
"""One metric `evaluate` is asked for: a name, a ready `Metric` or a `CustomMetric`."""
Metrics: TypeAlias = "MetricInput | Sequence[MetricInput] | Mapping[str, object] | None"
"""`evaluate`'s `metrics`: one or several metrics, `{name: threshold or options}`, or
None (the config's criteria, else the defaults for the data)."""
AgentInput: TypeAlias = "str | Agent | BaseAgent | Callable[..., object] | None"
"""`evaluate`'s `agent`: a spec ("module:attr", an ADK agent folder, an http(s) URL),
an `Agent`, a Google ADK agent or a callable (sync or async); None: recorded responses."""
ConfigInput: TypeAlias = "EvalConfig | Mapping[str, object] | str | Path | None"
"""`evaluate`'s `config`: an `EvalConfig`, a config dict or a path (None: the
`test_config.json` beside the dataset file, if any)."""
StoreInput: TypeAlias = "Store | str | Path | bool | None"
"""`evaluate`'s `store`: an open `Store`, a database URL or file, True (the default
store) or None / False (nothing stored)."""


def _is_path(value: object) -> TypeGuard[str | Path]:
    return isinstance(value, str | Path)


def _is_dataframe(value: object) -> bool:
    return hasattr(value, "to_dict") and hasattr(value, "columns")


def _is_mlflow_trace(value: object) -> bool:
    """An `mlflow.entities.Trace` (checked by shape: mlflow need not be installed)."""
    return type(value).__name__ == "Trace" and hasattr(value, "info") and hasattr(value, "data")


def _row_format(rows: Any) -> str:
    """Vertex rows, unless the rows are MLflow traces (`mlflow.search_traces()`)."""
    from assay.formats import mlflow_traces

    if _is_dataframe(rows):
        columns = set(rows.columns)
        return "mlflow-trace" if {"trace_id", "trace"} <= columns else "vertex"
    return "mlflow-trace" if mlflow_traces.detect(None, rows) else "vertex"


def load_dataset(
    dataset: Dataset,
    *,
    format: str | None = None,
    mapping: Mapping[str, str] | None = None,
) -> list[EvalSet]:
    """Everything `evaluate` accepts as a dataset, as a list of eval sets.

    Rows (dicts or a DataFrame) are Vertex rows unless `format` says otherwise
    ("mlflow", "trace") or they are MLflow traces (`mlflow.search_traces()`'s DataFrame
    or list of `Trace`s); files are detected unless `format` is given.
    """
    from assay import formats

    if isinstance(dataset, EvalSet):
        return [dataset]
    if _is_path(dataset):
        # A folder stands for the eval files under it.
        return formats.load_many([dataset], format, mapping)
    if _is_dataframe(dataset):
        return [formats.load_rows(dataset, format or _row_format(dataset), mapping)]
    if isinstance(dataset, Sequence) and not isinstance(dataset, str | bytes):
        items = list(dataset)
        if not items:
            raise InputError("the dataset is empty", expected="at least one row or file")
        if all(isinstance(i, EvalSet) for i in items):
            return items
        if all(_is_path(i) for i in items):
            return formats.load_many(items, format, mapping)
        if all(_is_mlflow_trace(i) for i in items):  # search_traces(return_type="list")
            return [formats.load_rows(items, format or "mlflow-trace", mapping)]
        if all(isinstance(i, Mapping) for i in items):
            rows = [dict(i) for i in items]
            return [formats.load_rows(rows, format or _row_format(rows), mapping)]
    raise InputError(
        f"cannot evaluate a dataset of type {type(dataset).__name__}",
        expected="a path, a list of paths, an EvalSet, a list of row dicts or a DataFrame",
    )


def resolve_config(config: ConfigInput, dataset: Dataset) -> EvalConfig | None:
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


def resolve_metrics(
    metrics: Metrics, config: EvalConfig | None, evalsets: Sequence[EvalSet] = ()
) -> list[Metric]:
    """Metric objects from names, `{name: criterion}`, Metric or CustomMetric objects.

    None: the config's criteria, else the defaults for the data (`default_criteria`).
    """
    if metrics is None:
        if config is None:
            return build_metrics(None, default_criteria(evalsets))
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


def resolve_agent(agent: AgentInput) -> Agent | None:
    if agent is None:
        return None
    if isinstance(agent, str):
        return load_agent(agent)
    return as_agent(agent)


def run_options(
    *,
    runs: int | None,
    concurrency: int,
    timeout_s: float | None,
    tool_behavior: ToolBehavior | str,
    run_method: RunMethod | str | None,
    simulator: SimulatorOptions | None,
) -> RunOptions:
    """The engine's run options from `evaluate`'s loose arguments (names or enums)."""
    from assay.agents.tools import ToolBehavior
    from assay.engine.options import RunOptions
    from assay.engine.replay import RunMethod

    return RunOptions(
        runs=runs,
        concurrency=concurrency,
        timeout_s=timeout_s,
        tool_behavior=ToolBehavior.parse(tool_behavior),
        run_method=RunMethod.parse(run_method) if run_method is not None else None,
        simulator=simulator,
    )


def simulator_options(
    user_model: str | None = None,
    simulator: SimulatorOptions | None = None,
    personas: str | Path | Mapping[str, Persona] | Sequence[Persona] | None = None,
) -> SimulatorOptions | None:
    """The simulated user: `simulator` as given, or one built from `user_model`.

    `personas` (a persona file, `{id: Persona}` or a list of personas) are added to it.
    """
    if simulator is None and user_model is None and personas is None:
        return None
    from assay.simulation import SimulatorOptions, load_personas

    if simulator is not None and user_model is not None and simulator.model != user_model:
        raise ConfigError(
            f"user_model {user_model!r} and simulator.model {simulator.model!r} disagree; give one"
        )
    options = replace(simulator) if simulator is not None else SimulatorOptions(model=user_model)
    if personas is not None:
        if isinstance(personas, str | Path):
            found = load_personas(personas)
        elif isinstance(personas, Mapping):
            found = dict(personas)
        else:
            found = {p.id: p for p in personas}
        options.personas = {**options.personas, **found}
    return options


def open_store(store: StoreInput) -> Store | None:
    """`evaluate`'s `store` argument as a `Store` (None: no store)."""
    if store is None or store is False:
        return None
    from assay.store import Store

    if isinstance(store, Store):
        return store
    return Store.open(None if store is True else str(store))


def environment() -> dict[str, Any]:
    """Where a run is made (git commit, assay version), stored with a new run."""
    from assay.report.html import run_environment

    return run_environment()


def interop_sinks(
    evalsets: Sequence[EvalSet],
    cfg: EvalConfig | None,
    agent: object,
    adapter: object,
    agent_label: str | None,
    *,
    mlflow: str | None,
    mlflow_experiment: str | None,
    adk_history: bool | str | Path,
    judge: str | None,
    runs: int | None,
) -> list[RunSink]:
    """MLflow tracking and ADK eval history, as `assay eval --mlflow` / its ADK history
    write them; the MLflow URI is checked before the run starts."""
    if mlflow is None and adk_history is False:
        return []
    from assay.interop import sinks

    options = sinks.SinkOptions(
        adk_history=adk_history is not False,
        mlflow_uri=mlflow,
        mlflow_experiment=mlflow_experiment,
        adk_folder=None if isinstance(adk_history, bool) else adk_history,
    )
    sinks.check_sinks(options)
    config = cfg.dump() if cfg is not None else {}
    params = {
        "eval_sets": [e.id for e in evalsets],
        "agent": agent_label,
        "criteria": config.get("criteria"),
        "judge_model": judge,
        "runs": runs,
    }
    return sinks.interop_sinks(
        options, agent_spec=agent if isinstance(agent, str) else None, agent=adapter,
        params=params,
    )  # fmt: skip


def persona_source(
    personas: str | Path | Mapping[str, Persona] | Sequence[Persona] | None,
) -> str | None:
    """The personas as part of the run's identity: their file, else their ids."""
    if personas is None or isinstance(personas, str | Path):
        return None if personas is None else str(personas)
    ids = sorted(personas) if isinstance(personas, Mapping) else sorted(p.id for p in personas)
    return ",".join(ids)
