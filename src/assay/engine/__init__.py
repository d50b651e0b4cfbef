"""The run pipeline: infer, score, aggregate."""

from assay.engine.build import build_metrics
from assay.engine.runner import RunObserver, RunOptions, arun, run, score_case

__all__ = ["RunObserver", "RunOptions", "arun", "build_metrics", "run", "score_case"]
