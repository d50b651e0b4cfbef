"""Turn a config (criteria) and/or metric names into Metric instances."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay.config import DEFAULT_CRITERIA, EvalConfig
from assay.errors import ConfigError
from assay.metrics.base import Metric, is_custom_judge_criterion
from assay.metrics.efficiency import EFFICIENCY_METRICS
from assay.metrics.registry import build_metric


def _custom_factories(
    config: EvalConfig | None, custom: Sequence[object], wanted: Sequence[str]
) -> dict[str, Callable[[], Metric]]:
    # Imported lazily: custom metrics import user code only when asked for, and only
    # the ones this evaluation computes (as ADK resolves them when the metric runs).
    module = importlib.import_module("assay.metrics.custom")
    factories: dict[str, Callable[[], Metric]] = module.custom_metric_factories(
        config or EvalConfig(criteria={}), list(custom), wanted=wanted
    )
    return factories


def build_metrics(
    config: EvalConfig | None = None,
    names: Sequence[str] | Mapping[str, object] | None = None,
    custom: Sequence[object] = (),
) -> list[Metric]:
    """Metrics to compute: `names` (with optional criteria) override the config's criteria.

    `names` may be a list of names or a mapping name -> criterion (threshold or options).
    A name listed without a criterion takes the config's criterion for it, if any.
    `custom` are Vertex-style CustomMetric objects, always computed.
    """
    criteria_source: Mapping[str, Any] = config.criteria if config is not None else DEFAULT_CRITERIA
    wanted: dict[str, Any]
    if names is None:
        wanted = dict(criteria_source)
        if config is not None and config.source is not None:
            # As google-adk does for every eval of an ADK config: the informational
            # efficiency metrics, unless the config names them itself.
            wanted.update({n: None for n in EFFICIENCY_METRICS if n not in wanted})
    elif isinstance(names, Mapping):
        wanted = {n: (c if c is not None else criteria_source.get(n)) for n, c in names.items()}
    else:
        wanted = {n: criteria_source.get(n) for n in names}
    factories = (
        _custom_factories(config, custom, list(wanted))
        if (custom or (config and config.custom_metrics))
        else {}
    )
    # Criteria that define a custom LLM judge ({"custom_judge": {...}}) become metrics
    # too (the judged metrics are imported only then).
    if any(is_custom_judge_criterion(c) for c in wanted.values()):
        judge_module = importlib.import_module("assay.metrics.judged.custom_judge")
        factories = {
            **factories,
            **judge_module.custom_judge_factories(
                wanted,
                where=config.source if config is not None and config.source else "config",
                reserved=list(factories),
            ),
        }
    # A criterion the config file names is reported with the file (`PATH: criteria.NAME`).
    source = config.source if config is not None else None
    in_file = config.criteria if config is not None and source else {}
    metrics = [
        build_metric(
            name,
            criterion,
            custom=factories,
            where=f"{source}: criteria.{name}" if name in in_file else None,
        )
        for name, criterion in wanted.items()
    ]
    for extra in custom:
        name = getattr(extra, "name", None)
        if name is not None and name not in wanted:
            metrics.append(factories[name]())
    seen: set[str] = set()
    for metric in metrics:
        if metric.name in seen:
            raise ConfigError(f"metric {metric.name!r} is requested twice")
        seen.add(metric.name)
    if not metrics:
        raise ConfigError("no metrics to compute: give --metric NAME or criteria in the config")
    return metrics
