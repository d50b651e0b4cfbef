"""The single place that maps a public metric name to its code."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import ValidationError

from assay.errors import ConfigError
from assay.metrics.base import Metric

_M = TypeVar("_M", bound=type[Metric])

_REGISTRY: dict[str, type[Metric]] = {}

# Modules that register built-in metrics when imported. Imported lazily so that
# `import assay` stays fast and a broken optional module names itself clearly.
_BUILTIN_MODULES = (
    "assay.metrics.trajectory",
    "assay.metrics.lexical",
    "assay.metrics.retrieval",
    "assay.metrics.golden",
    "assay.metrics.informational",
    "assay.metrics.judged",
)
_loaded = False


def register(cls: _M) -> _M:
    """Class decorator: register a metric class under its `name`."""
    name = cls.name
    if name in _REGISTRY and _REGISTRY[name] is not cls:
        raise ConfigError(f"metric {name!r} is registered twice")
    _REGISTRY[name] = cls
    return cls


def _ensure_loaded() -> None:
    global _loaded
    if _loaded:
        return
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)
    _loaded = True


def metric_names() -> list[str]:
    _ensure_loaded()
    return sorted(_REGISTRY)


def get_metric_class(name: str) -> type[Metric]:
    _ensure_loaded()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError.unknown("metric", name, _REGISTRY) from None


def build_metric(
    name: str,
    criterion: float | int | Mapping[str, Any] | None = None,
    *,
    custom: Mapping[str, Callable[[], Metric]] | None = None,
) -> Metric:
    """Instantiate a metric from its criterion: a bare threshold or an options object.

    `custom` maps extra names (custom metrics of this evaluation) to factories; they
    take precedence over nothing and may not shadow a built-in name.
    """
    if custom and name in custom:
        metric = custom[name]()
        if criterion is not None:
            threshold = (
                criterion if not isinstance(criterion, Mapping) else criterion.get("threshold")
            )
            if threshold is not None:
                metric.threshold = float(threshold)
        return metric
    _ensure_loaded()
    if name not in _REGISTRY:
        raise ConfigError.unknown("metric", name, [*_REGISTRY, *(custom or {})])
    cls = _REGISTRY[name]
    raw: dict[str, Any]
    if criterion is None:
        raw = {}
    elif isinstance(criterion, bool) or not isinstance(criterion, int | float | Mapping):
        raise ConfigError(
            f"criterion for metric {name!r} must be a number (threshold) or an object, "
            f"got {type(criterion).__name__}"
        )
    elif isinstance(criterion, int | float):
        raw = {"threshold": float(criterion)}
    else:
        raw = dict(criterion)
    try:
        options = cls.options_model.model_validate(raw)
    except ValidationError as exc:
        valid = sorted(
            {f.alias or n for n, f in cls.options_model.model_fields.items()}
            | set(cls.options_model.model_fields)
        )
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ConfigError(
            f"bad options for metric {name!r}: {problems}. Valid options: {', '.join(valid)}"
        ) from None
    return cls(options)
