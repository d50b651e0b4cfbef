"""Metrics: the registry and the protocol every metric implements."""

from assay.metrics.base import Metric, MetricOptions
from assay.metrics.registry import build_metric, get_metric_class, metric_names, register

__all__ = [
    "Metric",
    "MetricOptions",
    "build_metric",
    "get_metric_class",
    "metric_names",
    "register",
]
