"""Store errors precise enough for the REST service to map to status codes."""

from __future__ import annotations

from assay.errors import StoreError


class RunNotFoundError(StoreError):
    """No run has the given id (or the reference matched none)."""


class DuplicateCaseResultError(StoreError):
    """A case run (run, eval set, case, run index) is already stored."""


class ResourceNotFoundError(StoreError):
    """No evaluation/dataset/persona has the given id in the app."""


class ResourceConflictError(StoreError):
    """The id or the display name is already taken in the app."""


class EtagMismatchError(StoreError):
    """An update carried an etag that is no longer current (a concurrent change)."""
