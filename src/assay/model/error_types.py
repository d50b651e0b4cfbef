"""CES error types: why a case run has no (or only a partial) result.

A `CaseResult.error_type` holds one of these values; reports, the store and the
service show them as CES does.
"""

from __future__ import annotations

from enum import StrEnum


class ErrorType(StrEnum):
    RUNTIME_FAILURE = "RUNTIME_FAILURE"
    """The agent under test raised, returned garbage or timed out."""
    USER_SIMULATION_FAILURE = "USER_SIMULATION_FAILURE"
    """The simulated user could not produce a message (its model failed or replied badly)."""
    METRIC_CALCULATION_FAILURE = "METRIC_CALCULATION_FAILURE"
    """A metric raised while scoring; the other metrics' scores are kept."""
    QUOTA_EXHAUSTED = "QUOTA_EXHAUSTED"
    """A model endpoint (agent or simulator) kept answering HTTP 429."""
    NOT_SUPPORTED = "NOT_SUPPORTED"
    """The case cannot be run the way it was asked (e.g. a scenario without a user model)."""
    CONFIG_ERROR = "CONFIG_ERROR"
    """The case's own settings are invalid (e.g. an unknown persona id)."""
