"""The trajectory metrics' options (`assay.metrics.trajectory`): pydantic models, kept
apart so that the metrics' own module is plain Python classes and functions."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field, field_validator, model_validator

from assay.metrics.argmatch import ArgMatch, ArgMode, CallMatcher
from assay.metrics.base import MetricOptions


class MatchType(StrEnum):
    EXACT = "EXACT"
    IN_ORDER = "IN_ORDER"
    ANY_ORDER = "ANY_ORDER"


_ADK_ENUM_VALUES = {0: MatchType.EXACT, 1: MatchType.IN_ORDER, 2: MatchType.ANY_ORDER}


def parse_match_type(value: object) -> MatchType:
    """`EXACT` / `IN_ORDER` / `ANY_ORDER`, in any case, with spaces or hyphens, or 0/1/2."""
    if isinstance(value, MatchType):
        return value
    if isinstance(value, str):
        name = value.strip().upper().replace("-", "_").replace(" ", "_")
        if name in MatchType.__members__:
            return MatchType[name]
    elif isinstance(value, int) and not isinstance(value, bool) and value in _ADK_ENUM_VALUES:
        return _ADK_ENUM_VALUES[value]
    raise ValueError(
        f"unknown match_type {value!r}; valid match types are: " + ", ".join(MatchType.__members__)
    )


class TrajectoryOptions(MetricOptions):
    """Options of every trajectory metric: `ignore_args` and `arg_match`."""

    ignore_args: bool = False
    arg_match: ArgMatch | None = None

    @model_validator(mode="after")
    def _consistent(self) -> TrajectoryOptions:
        am = self.arg_match
        if self.ignore_args and am is not None and am.mode not in (None, ArgMode.IGNORE):
            raise ValueError(
                f"ignore_args: true conflicts with arg_match mode {am.mode.value!r}; "
                "drop one of them"
            )
        return self

    def matcher(self) -> CallMatcher:
        return CallMatcher(self.arg_match, ignore_args=self.ignore_args)


class ToolTrajectoryOptions(TrajectoryOptions):
    match_type: MatchType = MatchType.EXACT

    @field_validator("match_type", mode="before")
    @classmethod
    def _match_type(cls, value: object) -> MatchType:
        return parse_match_type(value)


class SingleToolUseOptions(TrajectoryOptions):
    tool_name: str = Field(min_length=1)
    tool_args: dict[str, Any] | None = None
