"""The run pipeline: plan case runs, infer (golden replay, scenarios), score, aggregate.

The names below are imported when first used (PEP 562), so importing one submodule
(`assay.engine.selection`, `assay.engine.tally`) does not load the whole pipeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_exports

if TYPE_CHECKING:
    from assay.engine.build import build_metrics
    from assay.engine.options import RunOptions
    from assay.engine.replay import RunMethod
    from assay.engine.runner import RunObserver, arun, count_case_runs, run, runs_for
    from assay.engine.scoring import score_case

_WHERE = {
    "build_metrics": "assay.engine.build",
    "RunMethod": "assay.engine.replay",
    "RunObserver": "assay.engine.runner",
    "RunOptions": "assay.engine.options",
    "arun": "assay.engine.runner",
    "count_case_runs": "assay.engine.runner",
    "run": "assay.engine.runner",
    "runs_for": "assay.engine.runner",
    "score_case": "assay.engine.scoring",
}

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


__getattr__ = lazy_exports(__name__, _WHERE, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
