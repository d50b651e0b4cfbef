"""Informational metrics (SPEC §4.4): reported for tracking, never pass or fail a case.

| name | per invocation | case value |
|---|---|---|
| `tool_call_count` | number of tool calls the agent made | mean per invocation |
| `invocation_latency` | `Turn.latency_s`, seconds | mean per invocation |
| `token_usage` | input + output tokens (`input_tokens`, `output_tokens` in details) | mean |

A value that was not recorded (no latency, no usage) is no score, never 0. Like ADK's
efficiency metrics they take no threshold: one in the config is an error rather than
silently ignored.
"""

from __future__ import annotations

import math
from typing import ClassVar

from pydantic import model_validator

from assay.core.cases import EvalCase, Turn
from assay.core.results import Score
from assay.metrics.base import Metric, MetricOptions
from assay.metrics.registry import register


class InformationalOptions(MetricOptions):
    """Options of an informational metric: none, and no threshold."""

    @model_validator(mode="after")
    def _no_threshold(self) -> InformationalOptions:
        if self.threshold is not None:
            raise ValueError(
                "informational metrics report a value and never pass or fail, so they take"
                ' no threshold; request them with an empty object, e.g. {"token_usage": {}}'
            )
        return self


class _Informational(Metric):
    score_range: ClassVar[tuple[float, float] | None] = (0.0, math.inf)
    family: ClassVar[str] = "informational"
    informational: ClassVar[bool] = True
    higher_is_better: ClassVar[bool] = False
    options_model: ClassVar[type[MetricOptions]] = InformationalOptions


@register
class ToolCallCount(_Informational):
    """Number of tool calls in the invocation."""

    name: ClassVar[str] = "tool_call_count"
    description: ClassVar[str] = "tool calls made in the invocation (lower is cheaper)"

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        return Score(float(len(actual.tool_calls())))


@register
class InvocationLatency(_Informational):
    """Wall-clock seconds the invocation took (`Turn.latency_s`)."""

    name: ClassVar[str] = "invocation_latency"
    description: ClassVar[str] = "seconds the invocation took"

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        if actual.latency_s is None:
            return Score(None, "no latency recorded for this invocation")
        return Score(actual.latency_s)


@register
class TokenUsage(_Informational):
    """Input + output tokens of the invocation's model calls."""

    name: ClassVar[str] = "token_usage"
    description: ClassVar[str] = "input + output tokens of the invocation"

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        usage = actual.usage
        if usage is None:
            return Score(None, "no token usage recorded for this invocation")
        return Score(
            float(usage.input_tokens + usage.output_tokens),
            details={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        )
