"""google-adk's informational efficiency metrics, with ADK's names and numbers.

- `tool_call_count_v1`: tool calls made; case value = mean over invocations.
- `inference_call_count_v1`: model calls made (`Turn.model_calls`, n/a when not
  recorded); case value = mean of the recorded ones.
- `token_usage_v1`: total tokens (input + output), every token type in the details;
  case value = per-type mean over all invocations.
- `invocation_duration_v1`: seconds (`Turn.latency_s`), split into model / tool /
  framework time; case value = per-part mean of the timed invocations, to the ms.

Like ADK (`google.adk.evaluation._efficiency_evaluators`): lower is better, a value that
was not measured is no value (never 0), the status is always informational, and a
threshold is refused with ADK's reason. ADK adds all four to every eval of an ADK
config; so does assay when the criteria come from a `test_config.json` /
`eval_config.json` (`EFFICIENCY_METRICS`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import model_validator

from assay.core.cases import EvalCase, Turn, Usage
from assay.core.results import MetricResult, Score
from assay.metrics.base import Metric, MetricOptions
from assay.metrics.registry import register

EFFICIENCY_METRICS = (
    "tool_call_count_v1",
    "inference_call_count_v1",
    "token_usage_v1",
    "invocation_duration_v1",
)
"""The metrics ADK reports on every eval; assay adds them to ADK-config criteria."""

TOKEN_FIELDS = (
    "total_tokens",
    "input_tokens",
    "prompt_tokens",
    "cached_tokens",
    "tool_use_tokens",
    "output_tokens",
    "candidates_tokens",
    "reasoning_tokens",
)
DURATION_FIELDS = ("total_seconds", "model_seconds", "tool_seconds", "framework_seconds")


class EfficiencyOptions(MetricOptions):
    """No options; a threshold is refused with ADK's reason."""

    # Set by the registry's validation context to the metric's name (for the message).
    @model_validator(mode="after")
    def _no_threshold(self) -> EfficiencyOptions:
        if self.threshold is not None:
            raise ValueError(
                "does not support a threshold: it reports a value and never passes or fails."
                " Remove it from `criteria` entirely; it is reported automatically on every"
                " eval of an ADK config"
            )
        return self


class _Efficiency(Metric):
    score_range: ClassVar[tuple[float, float] | None] = (0.0, math.inf)
    informational: ClassVar[bool] = True
    higher_is_better: ClassVar[bool] = False
    options_model: ClassVar[type[MetricOptions]] = EfficiencyOptions
    family: ClassVar[str] = "adk"

    def result_from_invocations(self, per: list[Score]) -> MetricResult:
        values = [s.value for s in per if s.value is not None]
        score = sum(values) / len(values) if values else None
        explanation = None if values else "not measured for any invocation"
        return self.make_result(score, per, explanation=explanation)


@register
class ToolCallCountV1(_Efficiency):
    """Tool (function) calls made per invocation (ADK `tool_call_count_v1`)."""

    name: ClassVar[str] = "tool_call_count_v1"
    description: ClassVar[str] = "tool calls per invocation (ADK efficiency, informational)"

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        return Score(float(len(actual.tool_calls())))


@register
class InferenceCallCountV1(_Efficiency):
    """Model calls made per invocation (ADK `inference_call_count_v1`)."""

    name: ClassVar[str] = "inference_call_count_v1"
    description: ClassVar[str] = "model calls per invocation (ADK efficiency, informational)"

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        if actual.model_calls is None:
            return Score(None, "model calls were not recorded for this invocation")
        return Score(float(actual.model_calls))


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def token_details(usage: Usage | None) -> dict[str, float | None]:
    """ADK's `TokenUsageDetails` of one invocation (None: not reported, never 0)."""
    if usage is None:
        return dict.fromkeys(TOKEN_FIELDS)
    broken_down = any(
        v is not None
        for v in (
            usage.prompt_tokens,
            usage.tool_use_tokens,
            usage.cached_tokens,
            usage.candidates_tokens,
            usage.reasoning_tokens,
        )
    )
    if broken_down:
        inputs = _add(usage.prompt_tokens, usage.tool_use_tokens)
        outputs = _add(usage.candidates_tokens, usage.reasoning_tokens)
    else:  # adapters that report only the two directions (OpenAI-compatible, HTTP)
        inputs, outputs = usage.input_tokens, usage.output_tokens
    total = None if inputs is None and outputs is None else (inputs or 0) + (outputs or 0)
    values: dict[str, int | None] = {
        "total_tokens": total,
        "input_tokens": inputs,
        "prompt_tokens": usage.prompt_tokens,
        "cached_tokens": usage.cached_tokens,
        "tool_use_tokens": usage.tool_use_tokens,
        "output_tokens": outputs,
        "candidates_tokens": usage.candidates_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }
    return {k: None if v is None else float(v) for k, v in values.items()}


@register
class TokenUsageV1(_Efficiency):
    """Tokens per invocation, with every token type (ADK `token_usage_v1`)."""

    name: ClassVar[str] = "token_usage_v1"
    description: ClassVar[str] = "tokens per invocation by type (ADK efficiency, informational)"

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        details = token_details(actual.usage)
        total = details["total_tokens"]
        return Score(total, None if total is not None else "no token usage reported", details)

    def result_from_invocations(self, per: list[Score]) -> MetricResult:
        # As ADK: a count missing from one invocation means that invocation spent none
        # (all invocations are the denominator); a count no invocation reported stays None.
        averaged: dict[str, Any] = {}
        for field in TOKEN_FIELDS:
            present = [s.details[field] for s in per if s.details.get(field) is not None]
            averaged[field] = sum(present) / len(per) if present and per else None
        score = averaged["total_tokens"]
        explanation = None if score is not None else "no token usage reported"
        return self.make_result(score, per, explanation=explanation, details=averaged)


def duration_details(turn: Turn) -> dict[str, float | None]:
    """ADK's `DurationDetails` of one invocation; all None when it was not timed."""
    if turn.latency_s is None:
        return dict.fromkeys(DURATION_FIELDS)
    model, tool = turn.model_latency_s, turn.tool_latency_s
    framework = None
    if model is not None and tool is not None:
        # Clamped: the parts close a hair after the total on the same clock.
        framework = round(max(turn.latency_s - model - tool, 0.0), 3)
    return {
        "total_seconds": turn.latency_s,
        "model_seconds": model,
        "tool_seconds": tool,
        "framework_seconds": framework,
    }


@register
class InvocationDurationV1(_Efficiency):
    """Seconds per invocation, split into model, tool and framework time."""

    name: ClassVar[str] = "invocation_duration_v1"
    description: ClassVar[str] = (
        "seconds per invocation: model / tool / framework (ADK efficiency, informational)"
    )

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        details = duration_details(actual)
        total = details["total_seconds"]
        return Score(total, None if total is not None else "the invocation was not timed", details)

    def result_from_invocations(self, per: list[Score]) -> MetricResult:
        averaged: dict[str, Any] = {}
        for field in DURATION_FIELDS:
            present = [s.details[field] for s in per if s.details.get(field) is not None]
            averaged[field] = round(sum(present) / len(present), 3) if present else None
        score = averaged["total_seconds"]
        explanation = None if score is not None else "no invocation was timed"
        return self.make_result(score, per, explanation=explanation, details=averaged)


def is_efficiency(name: str) -> bool:
    return name in EFFICIENCY_METRICS


__all__: Sequence[str] = [
    "EFFICIENCY_METRICS",
    "InferenceCallCountV1",
    "InvocationDurationV1",
    "TokenUsageV1",
    "ToolCallCountV1",
    "duration_details",
    "is_efficiency",
    "token_details",
]
