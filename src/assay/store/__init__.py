"""The results store: runs, case results, CES resources and the judge cache.

SQLite by default (`.assay/assay.db` in the working directory), PostgreSQL by URL;
see docs/store.md.
"""

from assay.store._bulk import EncodedCase, encode_case
from assay.store.connect import default_url, resolve_url
from assay.store.exceptions import (
    DuplicateCaseResultError,
    EtagMismatchError,
    ResourceConflictError,
    ResourceNotFoundError,
    RunNotFoundError,
)
from assay.store.judge_cache import JudgeCache, judge_cache_key
from assay.store.recorder import StoreRecorder
from assay.store.resources import Resource, ResourceRepository
from assay.store.runs import CaseKey, RunInfo, case_key
from assay.store.schema import RESOURCE_KINDS, RunStatus
from assay.store.store import Store

__all__ = [
    "RESOURCE_KINDS",
    "CaseKey",
    "DuplicateCaseResultError",
    "EncodedCase",
    "EtagMismatchError",
    "JudgeCache",
    "Resource",
    "ResourceConflictError",
    "ResourceNotFoundError",
    "ResourceRepository",
    "RunInfo",
    "RunNotFoundError",
    "RunStatus",
    "Store",
    "StoreRecorder",
    "case_key",
    "default_url",
    "encode_case",
    "judge_cache_key",
    "resolve_url",
]
