"""LLM judges (SPEC §5): the judges of a run as clients of the model layer.

- `client`: `Judge` (a `ModelClient` the metrics call) and `JudgePool` (the judges of
  one run, one per model string and options);
- `types`: `JudgeModelOptions` (`judge_model_options`) and the judge-side names of the
  model layer's shapes (`JudgeCallError`, `JudgeBackend`);
- `stats`: `JudgeStats`, the run's judge counters with their `judge/...` summary keys;
- `agreement`: how far a judge agrees with labels (calibration).

Backends, the reply cache, pacing and retries live in `assay.models`; the names below
that come from there are re-exported for callers of the judge API. Importing this
package imports no SDK: each backend's SDK is imported when that backend is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._lazy import lazy_exports

if TYPE_CHECKING:
    from assay.judges.client import Judge as Judge
    from assay.judges.client import JudgePool as JudgePool
    from assay.judges.stats import JudgeCounts as JudgeCounts
    from assay.judges.stats import JudgeStats as JudgeStats
    from assay.judges.types import JudgeBackend as JudgeBackend
    from assay.judges.types import JudgeCallError as JudgeCallError
    from assay.models.cache import MemoryReplyCache as MemoryReplyCache
    from assay.models.cache import ReplyCache as ReplyCache
    from assay.models.cache import StoreReplyCache as StoreReplyCache
    from assay.models.policy import AdaptiveLimiter as AdaptiveLimiter
    from assay.models.policy import RetryPolicy as RetryPolicy
    from assay.models.resolve import ModelSpec as ModelSpec
    from assay.models.resolve import make_backend as make_backend
    from assay.models.resolve import parse_model as parse_model
    from assay.models.types import BackendReply as BackendReply
    from assay.models.types import GenerationSettings as GenerationSettings

# Imported lazily: a metric importing `assay.judges.types` should not pull in the store
# (SQLAlchemy) that the judge cache uses.
_EXPORTS = {
    "MemoryReplyCache": "assay.models.cache",
    "ReplyCache": "assay.models.cache",
    "StoreReplyCache": "assay.models.cache",
    "Judge": "assay.judges.client",
    "JudgePool": "assay.judges.client",
    "AdaptiveLimiter": "assay.models.policy",
    "RetryPolicy": "assay.models.policy",
    "ModelSpec": "assay.models.resolve",
    "make_backend": "assay.models.resolve",
    "parse_model": "assay.models.resolve",
    "JudgeCounts": "assay.judges.stats",
    "JudgeStats": "assay.judges.stats",
    "BackendReply": "assay.models.types",
    "GenerationSettings": "assay.models.types",
    "JudgeBackend": "assay.judges.types",
    "JudgeCallError": "assay.judges.types",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
