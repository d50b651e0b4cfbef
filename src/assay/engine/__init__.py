"""The run pipeline: plan case runs, infer (golden replay, scenarios), score, aggregate."""

from assay.engine.build import build_metrics
from assay.engine.replay import RunMethod
from assay.engine.runner import RunObserver, RunOptions, arun, count_case_runs, run, runs_for
from assay.engine.scoring import score_case

__all__ = [
    "RunMethod",
    "RunObserver",
    "RunOptions",
    "arun",
    "build_metrics",
    "count_case_runs",
    "run",
    "runs_for",
    "score_case",
]
