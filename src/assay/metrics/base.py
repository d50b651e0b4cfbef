"""The metric protocol: what a metric declares and how the engine calls it.

A metric is a class registered under its public name (see `registry.register`). It
declares its options as a pydantic model (`options_model`), what inputs it needs, and
scores one invocation at a time; the default case score is the mean of the scored
invocations. Metrics that judge a whole conversation override `score_case`, and
metrics that call an LLM judge override the async `ascore_case`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from assay.core.cases import EvalCase, Turn
from assay.core.error_types import ErrorType
from assay.core.results import MetricResult, Score, status_for
from assay.metrics.stats import mean, sample_std


class MetricOptions(BaseModel):
    """Options every metric accepts; subclasses add their own.

    Keys are accepted in snake_case or camelCase, as ADK configs use both.
    """

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )

    threshold: float | None = None


def is_custom_judge_criterion(criterion: object) -> bool:
    """True for a criterion object with a `custom_judge` (or `customJudge`) key: it
    defines an LLM judge of its own (`assay.metrics.judged.custom_judge`)."""
    return isinstance(criterion, Mapping) and (
        "custom_judge" in criterion or "customJudge" in criterion
    )


class Metric:
    """Base class of every metric. Subclasses set the class variables below."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    options_model: ClassVar[type[MetricOptions]] = MetricOptions
    #: inputs the metric reads, for error messages and docs: "reference", "response",
    #: "expected_response", "retrieved_context", "rubrics", "scenario", "judge", ...
    needs: ClassVar[frozenset[str]] = frozenset()
    default_threshold: ClassVar[float | None] = None
    #: informational metrics are reported but never pass or fail a case, and a change in
    #: one never makes a case or a run better or worse (`assay compare`)
    informational: ClassVar[bool] = False
    #: the direction of improvement: True when a higher score is better (every scored
    #: 0..1 metric), False when lower is better (counts, tokens, seconds)
    higher_is_better: ClassVar[bool] = True
    #: where the metric comes from ("adk", "vertex", "ces", "databricks", "checks", ...), as
    #: `assay metrics` and the README's metric table list it
    family: ClassVar[str] = "vertex"
    #: the (low, high) every score lies in when declared; `assay metrics` lists it
    score_range: ClassVar[tuple[float, float] | None] = None

    def __init__(self, options: MetricOptions | None = None) -> None:
        self.options = options if options is not None else self.options_model()
        self.threshold: float | None = (
            None
            if self.informational
            else (
                self.options.threshold
                if self.options.threshold is not None
                else self.default_threshold
            )
        )

    def __repr__(self) -> str:
        return f"<metric {self.name} threshold={self.threshold}>"

    # -- scoring ---------------------------------------------------------------------

    def score_invocation(self, actual: Turn, expected: Turn | None, case: EvalCase) -> Score:
        """Score one invocation. `expected` is the reference turn at the same index."""
        raise TypeError(f"metric {self.name} must implement score_invocation or score_case")

    def score_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        """Score a whole case; `expected` is aligned with `actual` (None where missing)."""
        per = [self.score_invocation(a, e, case) for a, e in zip(actual, expected, strict=True)]
        return self.result_from_invocations(per)

    async def ascore_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        """Async entry point used by the engine; judged metrics override it."""
        return self.score_case(case, actual, expected)

    @property
    def is_async(self) -> bool:
        """True when the metric needs the event loop (judged metrics)."""
        return type(self).ascore_case is not Metric.ascore_case

    # -- aggregation and naming ------------------------------------------------------------

    def result_from_invocations(self, per: list[Score]) -> MetricResult:
        """Case score = mean of the scored invocations; no score if none was scored."""
        if len(per) == 1:  # the common single-turn row: skip the list work
            only = per[0]
            if only.value is not None:
                return self.make_result(only.value, per)
        values = [s.value for s in per if s.value is not None]
        score = mean(values)
        explanation = None
        if score is None:
            reasons = sorted({s.explanation for s in per if s.explanation})
            explanation = "; ".join(reasons) or "no invocation could be scored"
        return self.make_result(score, per, explanation=explanation)

    def make_result(
        self,
        score: float | None,
        per: list[Score],
        *,
        explanation: str | None = None,
        details: dict[str, Any] | None = None,
        error_type: ErrorType | None = None,
    ) -> MetricResult:
        return MetricResult(
            name=self.name,
            score=score,
            threshold=self.threshold,
            status=None if self.informational else status_for(score, self.threshold),
            explanation=explanation,
            per_invocation=per,
            details=details or {},
            error_type=error_type,
        )

    def row_columns(self, score: Score) -> dict[str, Any]:
        """The row-output columns for one scored row/invocation (Vertex names)."""
        cols: dict[str, Any] = {f"{self.name}/score": score.value}
        if score.explanation is not None:
            cols[f"{self.name}/explanation"] = score.explanation
        for key, value in score.details.items():
            cols[f"{self.name}/{key}"] = value
        return cols

    def summary_columns(self, values: Sequence[float]) -> dict[str, Any]:
        """Summary columns over the scored rows: mean and sample standard deviation."""
        m = mean(values)
        std: float | None = None
        if len(values) >= 2 and m is not None:
            std = sample_std(values, m)
        return {f"{self.name}/mean": m, f"{self.name}/std": std}
