"""Metric plugins: metrics other distributions provide through the `assay.metrics`
entry-point group, named by their distribution as Inspect AI's registry names
extensions (`acme-metrics/toxicity`), so no plugin can shadow a built-in metric or
another plugin's.

A distribution declares, in its pyproject.toml::

    [project.entry-points."assay.metrics"]
    toxicity = "acme_metrics:Toxicity"

where `Toxicity` is a `Metric` subclass. It is registered as
`{distribution}/{entry point name}` (the distribution's name normalised as pip writes
it: lower case, runs of `-_.` as one `-`), and its results carry that name. A plugin
that cannot be loaded (its import fails, the object is not a Metric class) does not
stop assay: asking for one of its metrics says why, and `assay metrics` lists it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points

from assay.metrics.base import Metric

GROUP = "assay.metrics"


@dataclass(frozen=True)
class PluginMetric:
    """A metric found through an entry point."""

    name: str  # namespaced: "{distribution}/{entry point name}"
    cls: type[Metric] | None  # None: it could not be loaded
    source: str  # "acme-metrics 1.0 (acme_metrics:Toxicity)"
    error: str | None = None


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _source(ep: EntryPoint) -> tuple[str, str]:
    dist = ep.dist
    if dist is None:  # an entry point made up in code, not installed
        return "unknown", f"entry point {ep.name} = {ep.value}"
    return _normalised(dist.name), f"{dist.name} {dist.version} ({ep.value})"


def _load(ep: EntryPoint, name: str) -> type[Metric]:
    loaded = ep.load()
    if not (isinstance(loaded, type) and issubclass(loaded, Metric)):
        raise TypeError(f"{ep.value} is a {type(loaded).__name__}, not a Metric subclass")
    # The plugin's own class keeps its name; results of the registered one carry the
    # namespaced name, so two plugins' "toxicity" never meet in one result.
    return type(loaded.__name__, (loaded,), {"name": name, "__module__": loaded.__module__})


def discover() -> list[PluginMetric]:
    """Every metric of every installed `assay.metrics` entry point (broken ones too)."""
    found: list[PluginMetric] = []
    for ep in entry_points(group=GROUP):
        namespace, source = _source(ep)
        name = f"{namespace}/{ep.name}"
        try:
            cls = _load(ep, name)
        except Exception as exc:  # a broken plugin is reported, never fatal to assay
            found.append(PluginMetric(name, None, source, f"{type(exc).__name__}: {exc}"))
        else:
            found.append(PluginMetric(name, cls, source))
    return found
