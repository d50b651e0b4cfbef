"""CES error types: why a case run has no (or only a partial) result.

A `CaseResult.error_type` (and a `MetricResult.error_type` when the metric itself
raised) holds one of these members from the engine to the store and the wire; reports,
the store and the service spell them as CES does (the member's value).
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
    TOOL_NOT_RUN = "TOOL_NOT_RUN"
    """Tool calls were FAKE and no mock answered one: the agent got an error instead of
    the tool's answer, so the case shows nothing about how the agent does its job."""


class ExecutionState(StrEnum):
    """Whether a case run executed (CES `executionState`), whatever its verdict."""

    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    """The case run failed to execute: the agent crashed, timed out or was not reachable."""
