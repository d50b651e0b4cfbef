"""CES evaluation judges: semantic similarity, hallucination, user goal, task completion.

Option names follow CES's `EvaluationMetricsThresholds` (flattened into the criterion):
`semanticSimilaritySuccessThreshold` (integer 0..4, default 3), `semanticSimilarityChannel`,
`hallucinationMetricBehavior` and its golden/scenario variants (`ENABLED` / `DISABLED`).
A DISABLED hallucination metric is still computed but never passes or fails a case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from assay.metrics.base import MetricOptions
from assay.metrics.judged.base import JudgedMetric, JudgedOptions
from assay.metrics.registry import register
from assay.model.core import EvalCase, Turn
from assay.model.results import MetricResult

Behavior = Literal["ENABLED", "DISABLED"]


class SemanticSimilarityOptions(JudgedOptions):
    semantic_similarity_success_threshold: int = Field(default=3, ge=0, le=4)
    semantic_similarity_channel: str | None = None

    @model_validator(mode="after")
    def _one_threshold(self) -> SemanticSimilarityOptions:
        fields = self.model_fields_set
        if (
            self.threshold is not None
            and "semantic_similarity_success_threshold" in fields
            and self.threshold != self.semantic_similarity_success_threshold
        ):
            raise ValueError(
                "threshold and semanticSimilaritySuccessThreshold disagree; give one of them"
            )
        return self


@register
class SemanticSimilarity(JudgedMetric):
    """Agent response vs expected response, integer 0..4 (4 = fully consistent).

    An invocation passes when its score reaches `semanticSimilaritySuccessThreshold`;
    the case score is the mean over the judged turns.
    """

    name: ClassVar[str] = "semantic_similarity"
    description: ClassVar[str] = "LLM judge: response vs expected response, 0..4"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "response", "expected_response"})
    options_model: ClassVar[type[MetricOptions]] = SemanticSimilarityOptions
    family: ClassVar[str] = "ces"

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        if self.options.threshold is None and isinstance(self.options, SemanticSimilarityOptions):
            self.threshold = float(self.options.semantic_similarity_success_threshold)


class HallucinationOptions(JudgedOptions):
    hallucination_metric_behavior: Behavior = "ENABLED"
    golden_hallucination_metric_behavior: Behavior | None = None
    scenario_hallucination_metric_behavior: Behavior | None = None

    @field_validator(
        "hallucination_metric_behavior",
        "golden_hallucination_metric_behavior",
        "scenario_hallucination_metric_behavior",
        mode="before",
    )
    @classmethod
    def _upper(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().upper()
            # CES writes the enum's zero value for "not set"; the default applies then.
            if value == "HALLUCINATION_METRIC_BEHAVIOR_UNSPECIFIED":
                return "ENABLED"
        return value


@register
class Hallucination(JudgedMetric):
    """Each turn's response justified by the conversation and tool results: 1, 0, or -1.

    -1 means the turn has no claim to assess; the case score averages the turns scored
    1 or 0. With behaviour DISABLED the score is reported without a pass/fail status.
    """

    name: ClassVar[str] = "hallucination"
    description: ClassVar[str] = "LLM judge: turn responses justified by the conversation"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "response"})
    options_model: ClassVar[type[MetricOptions]] = HallucinationOptions
    family: ClassVar[str] = "ces"
    default_threshold: ClassVar[float | None] = 1.0

    def behavior_for(self, case: EvalCase) -> Behavior:
        """The behaviour for this case: the golden/scenario setting, else the general one."""
        opts = self.options
        if not isinstance(opts, HallucinationOptions):
            return "ENABLED"
        specific = (
            opts.scenario_hallucination_metric_behavior
            if case.scenario is not None
            else opts.golden_hallucination_metric_behavior
        )
        return specific or opts.hallucination_metric_behavior

    def _apply_behavior(self, case: EvalCase, result: MetricResult) -> MetricResult:
        if self.behavior_for(case) == "DISABLED":
            result.status = None
        return result

    def score_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        return self._apply_behavior(case, super().score_case(case, actual, expected))

    async def ascore_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        return self._apply_behavior(case, await super().ascore_case(case, actual, expected))


@register
class UserGoalSatisfaction(JudgedMetric):
    """Did the scenario conversation satisfy the user's goal? 1, 0, or -1 (unspecified)."""

    name: ClassVar[str] = "user_goal_satisfaction"
    description: ClassVar[str] = "LLM judge: the conversation satisfied the user's goal"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "scenario"})
    family: ClassVar[str] = "ces"
    default_threshold: ClassVar[float | None] = 1.0


@register
class TaskCompleted(JudgedMetric):
    """All expectations met, no hallucination, and the user goal outcome asked for."""

    name: ClassVar[str] = "task_completed"
    description: ClassVar[str] = "CES composite: expectations met, no hallucination, goal outcome"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "scenario"})
    family: ClassVar[str] = "ces"
    default_threshold: ClassVar[float | None] = 1.0
