"""LLM judges (SPEC §5): backends behind one protocol, wrapped with cache and pacing.

- `types`: `GenerationSettings`, `BackendReply`, `JudgeCallError`, the `JudgeBackend`
  protocol;
- `resolve`: `make_backend(model, options, timeout_s=...)` from a model string
  (`openai:NAME`, `gemini-*` / `gemini:NAME`, `anthropic:NAME`, `local:PATH.gguf`);
- `client`: `Judge` (one backend with cache, adaptive limit, retries, timeout, stats)
  and `JudgePool` (the judges of one run);
- `policy`, `cache`, `stats`: the pieces `Judge` is made of.

Importing this package imports no SDK: each backend's SDK is imported when that backend
is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.judges.cache import MemoryReplyCache as MemoryReplyCache
    from assay.judges.cache import ReplyCache as ReplyCache
    from assay.judges.cache import StoreReplyCache as StoreReplyCache
    from assay.judges.client import Judge as Judge
    from assay.judges.client import JudgePool as JudgePool
    from assay.judges.policy import AdaptiveLimiter as AdaptiveLimiter
    from assay.judges.policy import RetryPolicy as RetryPolicy
    from assay.judges.resolve import ModelSpec as ModelSpec
    from assay.judges.resolve import make_backend as make_backend
    from assay.judges.resolve import parse_model as parse_model
    from assay.judges.stats import JudgeCounts as JudgeCounts
    from assay.judges.stats import JudgeStats as JudgeStats
    from assay.judges.types import BackendReply as BackendReply
    from assay.judges.types import GenerationSettings as GenerationSettings
    from assay.judges.types import JudgeBackend as JudgeBackend
    from assay.judges.types import JudgeCallError as JudgeCallError

# Imported lazily: a metric importing `assay.judges.types` should not pull in the store
# (SQLAlchemy) that the judge cache uses.
_EXPORTS = {
    "MemoryReplyCache": "cache",
    "ReplyCache": "cache",
    "StoreReplyCache": "cache",
    "Judge": "client",
    "JudgePool": "client",
    "AdaptiveLimiter": "policy",
    "RetryPolicy": "policy",
    "ModelSpec": "resolve",
    "make_backend": "resolve",
    "parse_model": "resolve",
    "JudgeCounts": "stats",
    "JudgeStats": "stats",
    "BackendReply": "types",
    "GenerationSettings": "types",
    "JudgeBackend": "types",
    "JudgeCallError": "types",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'assay.judges' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"assay.judges.{module}"), name)
    globals()[name] = value
    return value
