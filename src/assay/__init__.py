"""assay: evaluate AI agents.

For notebooks and scripts: `assay.evaluate(dataset, metrics, agent)` or Vertex-style
`assay.EvalTask(dataset, metrics).evaluate(runnable=agent)`; custom metrics with
`assay.CustomMetric(name, fn)`. The command line is `assay eval ...`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assay.api import EvalTask as EvalTask
    from assay.api import EvalTaskResult as EvalTaskResult
    from assay.api import aevaluate as aevaluate
    from assay.api import evaluate as evaluate
    from assay.config import EvalConfig as EvalConfig
    from assay.core.cases import EvalSet as EvalSet
    from assay.core.results import EvalResult as EvalResult
    from assay.metrics.custom import CustomMetric as CustomMetric
    from assay.metrics.judged.custom_judge import CustomJudge as CustomJudge
    from assay.red_team import aredteam as aredteam
    from assay.red_team import redteam as redteam

from assay import _native
from assay._lazy import lazy_exports
from assay._version import __version__ as __version__

# The recorded-row path's kernels run compiled when their compiled copy matches their
# sources (`assay._native`).
_native.install()

# The public API is imported lazily so `import assay` (and `assay --version`) stays fast
# and does not pull in the engine, metrics and formats until they are used.
_EXPORTS = {
    "evaluate": "assay.api",
    "aevaluate": "assay.api",
    "EvalTask": "assay.api",
    "EvalTaskResult": "assay.api",
    "CustomMetric": "assay.metrics.custom",
    "CustomJudge": "assay.metrics.judged.custom_judge",
    "EvalResult": "assay.core.results",
    "EvalSet": "assay.core.cases",
    "EvalConfig": "assay.config",
    "redteam": "assay.red_team",
    "aredteam": "assay.red_team",
}

__all__ = ["__version__", *_EXPORTS]


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
