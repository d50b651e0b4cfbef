"""The single place that maps a public metric name to its code.

Built-in metrics register themselves (`register`) when their modules are imported;
metrics of other distributions come in through the `assay.metrics` entry-point group
under names namespaced by their distribution (`assay.metrics.plugins`). Each name
knows its source (`metric_source`): "assay", or the distribution and entry point.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from assay.errors import ConfigError, did_you_mean, warn
from assay.metrics.base import Metric

_M = TypeVar("_M", bound=type[Metric])

_REGISTRY: dict[str, type[Metric]] = {}
# Plugin metrics: where each came from, and the ones that could not be loaded (why).
_PLUGIN_SOURCES: dict[str, str] = {}
_BROKEN: dict[str, str] = {}

# Modules that register built-in metrics when imported. Imported lazily so that
# `import assay` stays fast and a broken optional module names itself clearly.
_BUILTIN_MODULES = (
    "assay.metrics.trajectory",
    "assay.metrics.lexical",
    "assay.metrics.retrieval",
    "assay.metrics.retrieval_at_k",
    "assay.metrics.golden",
    "assay.metrics.informational",
    "assay.metrics.efficiency",
    "assay.metrics.checks",
    "assay.metrics.structured",
    "assay.metrics.vertex_computation",
    "assay.metrics.vertex_tools",
    "assay.metrics.budgets",
    "assay.metrics.embedding",
    "assay.metrics.redteam",
    "assay.metrics.judged",
)
_loaded = False
_imported = 0
"""How many of `_BUILTIN_MODULES` have been imported, in order (`_lookup`)."""


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
    _import_builtins(len(_BUILTIN_MODULES))
    _load_plugins()
    _loaded = True


def _import_builtins(upto: int) -> None:
    global _imported
    while _imported < upto:
        importlib.import_module(_BUILTIN_MODULES[_imported])
        _imported += 1


def _lookup(name: str) -> type[Metric] | None:
    """The class registered as `name`, importing the built-in modules in turn only until
    it is registered (a run of trajectory and lexical metrics does not pay for loading
    the judged ones), then everything and the plugins."""
    found = _REGISTRY.get(name)
    while found is None and _imported < len(_BUILTIN_MODULES):
        _import_builtins(_imported + 1)
        found = _REGISTRY.get(name)
    if found is None:
        _ensure_loaded()
        found = _REGISTRY.get(name)
    return found


def _load_plugins() -> None:
    from assay.metrics.plugins import discover

    for found in discover():
        if found.cls is None:
            _BROKEN[found.name] = f"{found.source}: {found.error}"
        else:
            _REGISTRY[found.name] = found.cls
            _PLUGIN_SOURCES[found.name] = found.source


def refresh_plugins() -> None:
    """Look for plugin metrics again (after installing or removing a distribution)."""
    global _loaded
    for name in _PLUGIN_SOURCES:
        _REGISTRY.pop(name, None)
    _PLUGIN_SOURCES.clear()
    _BROKEN.clear()
    _loaded = False


def metric_source(name: str) -> str:
    """Where metric `name` comes from: "assay", or "DIST VERSION (module:attr)"."""
    get_metric_class(name)
    return _PLUGIN_SOURCES.get(name, "assay")


def broken_plugins() -> dict[str, str]:
    """Plugin metrics that could not be loaded, with why."""
    _ensure_loaded()
    return dict(_BROKEN)


def _unavailable(name: str) -> ConfigError | None:
    why = _BROKEN.get(name)
    if why is None:
        return None
    return ConfigError(f"metric {name!r} comes from a plugin that could not be loaded: {why}")


@dataclass(frozen=True, slots=True)
class MetricTraits:
    """What a comparison needs to know of a metric: which way is better, and whether it
    is informational (shown, never gating, never better or worse)."""

    higher_is_better: bool
    informational: bool

    @property
    def direction(self) -> str:
        return "higher" if self.higher_is_better else "lower"


def metric_traits(name: str) -> MetricTraits | None:
    """The registered traits of metric `name`; None for a name the registry does not
    know (a custom metric of one evaluation, a plugin no longer installed)."""
    found = _lookup(name)
    if found is None:
        return None
    return MetricTraits(found.higher_is_better, found.informational)


def metric_names() -> list[str]:
    _ensure_loaded()
    return sorted(_REGISTRY)


def get_metric_class(name: str) -> type[Metric]:
    found = _lookup(name)
    if found is None:
        raise _unavailable(name) or ConfigError.unknown(
            "metric", name, _REGISTRY, listed_by="assay metrics"
        )
    return found


def build_metric(
    name: str,
    criterion: float | int | Mapping[str, object] | None = None,
    *,
    custom: Mapping[str, Callable[[], Metric]] | None = None,
    where: str | None = None,
) -> Metric:
    """Instantiate a metric from its criterion: a bare threshold or an options object.

    `custom` maps extra names (custom metrics of this evaluation) to factories; they
    take precedence over nothing and may not shadow a built-in name. `where` (a config
    file's `PATH: criteria.NAME`) starts every error and warning about the criterion.
    """
    if where is None:
        return _build_metric(name, criterion, custom, None)
    try:
        return _build_metric(name, criterion, custom, where)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _build_metric(
    name: str,
    criterion: float | int | Mapping[str, object] | None,
    custom: Mapping[str, Callable[[], Metric]] | None,
    where: str | None,
) -> Metric:
    if not (custom and name in custom) and _lookup(name) is None:
        raise _unavailable(name) or ConfigError.unknown(
            "metric", name, [*_REGISTRY, *(custom or {})], listed_by="assay metrics"
        )
    raw = _raw_options(name, criterion)
    if custom and name in custom:
        metric = custom[name]()
        threshold = raw.get("threshold")
        if threshold is not None:
            if isinstance(threshold, bool) or not isinstance(threshold, int | float):
                raise ConfigError(
                    f"threshold of custom metric {name!r} must be a number, "
                    f"got {type(threshold).__name__}"
                )
            metric.threshold = float(threshold)
        return metric
    cls = _REGISTRY[name]
    fields = cls.options_model.model_fields
    raw = _drop_foreign_keys(name, raw, fields, where)
    try:
        options = cls.options_model.model_validate(raw)
    except ValidationError as exc:
        # A field named with a trailing underscore (`schema_`, which would shadow a
        # pydantic attribute) is only ever written under its alias.
        public = {n: f.alias if n.endswith("_") and f.alias else n for n, f in fields.items()}
        valid = sorted({f.alias or n for n, f in fields.items()} | set(public.values()))
        by_alias = {f.alias: public[n] for n, f in fields.items() if f.alias}
        by_alias.update({n: a for n, a in public.items() if n != a})
        problems = "; ".join(
            f"{_error_location(err['loc'], err['type'], by_alias)}: {err['msg']}"
            + (did_you_mean(str(err["loc"][-1]), valid) if err["type"] == "extra_forbidden" else "")
            for err in exc.errors()
        )
        raise ConfigError(
            f"bad options for metric {name!r}: {problems}. Valid options: {', '.join(valid)}"
        ) from None
    metric = cls(options)
    check_threshold(name, metric.threshold, cls.score_range)
    return metric


def check_threshold(
    name: str, threshold: float | None, score_range: tuple[float, float] | None
) -> None:
    """Refuse a threshold outside the metric's score range: no score could ever reach it
    (above) or ever miss it (below), so it is a mistake, not a setting (a 5 on a 0-1
    metric is usually a 0-5 scale, or a percentage, taken for a share)."""
    if threshold is None or score_range is None:
        return
    low, high = score_range
    if not low <= threshold <= high:
        never = "pass" if threshold > high else "fail"
        raise ConfigError(
            f"threshold {threshold:g} of metric {name!r} is outside its score range"
            f" {low:g}..{high:g}: no score could ever {never}; give a threshold from"
            f" {low:g} to {high:g}"
        )


def _drop_foreign_keys(
    name: str, raw: dict[str, object], fields: Mapping[str, Any], where: str | None = None
) -> dict[str, object]:
    """Ignore (with one warning) criterion keys the metric does not define, as ADK does.

    ADK's `BaseCriterion` allows extra keys, and public configs carry some (e.g.
    `"criteria": "Semantic Similarity"` on `final_response_match_v2`). A key that looks
    like a misspelt option (`treshold`) is kept, so validation refuses it and names
    the valid options, instead of the misspelling silently leaving the default in force.
    """
    valid = {n for n in fields} | {f.alias for f in fields.values() if f.alias}
    if not valid:
        return raw
    foreign = [
        key
        for key in raw
        if key not in valid and not difflib.get_close_matches(key, valid, n=1, cutoff=0.75)
    ]
    if not foreign:
        return raw
    listed = ", ".join(repr(k) for k in foreign)
    prefix = f"{where}: " if where else ""
    keys = "keys" if len(foreign) > 1 else "key"
    warn(
        f"{prefix}metric {name!r}: ignoring criterion {keys} {listed}"
        f" (not an option of this metric; valid options: {', '.join(sorted(valid))})"
    )
    return {k: v for k, v in raw.items() if k not in foreign}


def _raw_options(
    name: str, criterion: float | int | Mapping[str, object] | None
) -> dict[str, object]:
    """The criterion as an options dict: a bare number is the threshold."""
    if criterion is None:
        return {}
    if isinstance(criterion, bool) or not isinstance(criterion, int | float | Mapping):
        raise ConfigError(
            f"criterion for metric {name!r} must be a number (threshold) or an object, "
            f"got {type(criterion).__name__}"
        )
    if isinstance(criterion, int | float):
        return {"threshold": float(criterion)}
    raw = dict(criterion)
    # pydantic would read `true` as the threshold 1.0; a boolean is always a mistake here.
    if isinstance(raw.get("threshold"), bool):
        raise ConfigError(f"threshold of metric {name!r} must be a number, got bool")
    return raw


def _error_location(loc: tuple[int | str, ...], kind: str, by_alias: Mapping[str, str]) -> str:
    parts = [str(p) for p in loc]
    # A missing option is reported under its camelCase alias; name it as ADK writes it.
    renamed = bool(parts) and parts[0].endswith("_")
    if parts and parts[0] in by_alias and (renamed or (kind == "missing" and len(parts) == 1)):
        parts[0] = by_alias[parts[0]]
    return ".".join(parts) or "(root)"
