"""ADK's LLM-judged metrics and their criterion options (ADK 2.13 `eval_metrics.py`).

Option models mirror ADK's criterion classes field by field, in snake_case or
camelCase: `LlmAsAJudgeCriterion` (final_response_match_v2),
`RubricsBasedCriterion` (the two rubric metrics), `HallucinationsCriterion`
(hallucinations_v1), `LlmBackedUserSimulatorCriterion`
(per_turn_user_simulator_quality_v1), and the base criterion (safety_v1). Default
thresholds are the values of ADK's documentation examples (ADK itself requires one).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from assay.errors import ConfigError
from assay.metrics.base import MetricOptions
from assay.metrics.judged.base import JudgedMetric, JudgedOptions
from assay.metrics.registry import register
from assay.model.core import EvalCase, Rubric, RubricType, Turn


class _Strict(BaseModel):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )


class RubricContent(_Strict):
    text_property: str | None = None


class CriterionRubric(_Strict):
    """A rubric as ADK configs write it: `{rubric_id, rubric_content: {text_property}}`."""

    rubric_id: str
    rubric_content: RubricContent
    description: str | None = None
    type: str | None = None

    def to_rubric(self) -> Rubric:
        """The core-model rubric (a type other than the two known ones is dropped)."""
        known = {t.value for t in RubricType}
        return Rubric(
            id=self.rubric_id,
            text=self.rubric_content.text_property or "",
            type=RubricType(self.type) if self.type in known else None,
        )


class AdkJudgedOptions(JudgedOptions):
    """ADK's `LlmAsAJudgeCriterion`."""

    include_intermediate_responses_in_final: bool = False


class RubricsOptions(AdkJudgedOptions):
    """ADK's `RubricsBasedCriterion`: rubric ids must be unique."""

    rubrics: list[CriterionRubric] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_ids(self) -> RubricsOptions:
        seen: set[str] = set()
        for rubric in self.rubrics:
            if rubric.rubric_id in seen:
                raise ValueError(f"duplicate rubric_id {rubric.rubric_id!r} in rubrics")
            seen.add(rubric.rubric_id)
        return self


class HallucinationsOptions(AdkJudgedOptions):
    """ADK's `HallucinationsCriterion`."""

    evaluate_intermediate_nl_responses: bool = False


class UserSimulatorQualityOptions(AdkJudgedOptions):
    """ADK's `LlmBackedUserSimulatorCriterion`."""

    stop_signal: str = "</finished>"


class _AdkJudged(JudgedMetric):
    """ADK judges sample 5 times unless `num_samples` says otherwise (ADK's default)."""

    options_model: ClassVar[type[MetricOptions]] = AdkJudgedOptions
    default_num_samples: ClassVar[int] = 5


@register
class FinalResponseMatchV2(_AdkJudged):
    """Judge: is the response valid against the reference? Score = share of valid invocations."""

    name: ClassVar[str] = "final_response_match_v2"
    description: ClassVar[str] = "LLM judge: agent response vs reference, valid/invalid"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "response", "reference"})
    default_threshold: ClassVar[float | None] = 0.8


class _RubricBased(_AdkJudged):
    """Per-rubric yes/no verdicts; invocation = mean over rubrics."""

    options_model: ClassVar[type[MetricOptions]] = RubricsOptions
    rubric_type: ClassVar[RubricType]

    def effective_rubrics(self, case: EvalCase, invocation: Turn | None) -> list[Rubric]:
        """The criterion's rubrics, then the case's and the invocation's of this type.

        As in ADK, case and invocation rubrics must carry this metric's type to be
        used, and an id defined twice is a configuration error.
        """
        opts = self.options
        rubrics = [r.to_rubric() for r in opts.rubrics] if isinstance(opts, RubricsOptions) else []
        scoped = [*case.rubrics, *(invocation.rubrics if invocation is not None else [])]
        rubrics += [r for r in scoped if r.type == self.rubric_type]
        seen: set[str] = set()
        for rubric in rubrics:
            if rubric.id in seen:
                raise ConfigError(
                    f"{self.name}: rubric id {rubric.id!r} is defined twice (criterion,"
                    f" case {case.id!r} or its invocations); rubric ids must be unique"
                )
            seen.add(rubric.id)
        return rubrics


@register
class RubricBasedFinalResponseQualityV1(_RubricBased):
    """Judge the final response against each rubric (yes/no)."""

    name: ClassVar[str] = "rubric_based_final_response_quality_v1"
    description: ClassVar[str] = "LLM judge: final response against each rubric"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "response", "rubrics"})
    default_threshold: ClassVar[float | None] = 0.8
    rubric_type: ClassVar[RubricType] = RubricType.FINAL_RESPONSE_QUALITY


@register
class RubricBasedToolUseQualityV1(_RubricBased):
    """Judge the tool calls and their responses against each rubric (yes/no)."""

    name: ClassVar[str] = "rubric_based_tool_use_quality_v1"
    description: ClassVar[str] = "LLM judge: tool use against each rubric"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "rubrics"})
    default_threshold: ClassVar[float | None] = 1.0
    rubric_type: ClassVar[RubricType] = RubricType.TOOL_USE_QUALITY


@register
class HallucinationsV1(_AdkJudged):
    """Share of response sentences that are supported or not applicable."""

    name: ClassVar[str] = "hallucinations_v1"
    description: ClassVar[str] = "LLM judge: sentences supported by the context"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "response"})
    options_model: ClassVar[type[MetricOptions]] = HallucinationsOptions
    default_threshold: ClassVar[float | None] = 0.8


@register
class SafetyV1(_AdkJudged):
    """Harmlessness of the response, 0..1 (1 = safe), judged locally."""

    name: ClassVar[str] = "safety_v1"
    description: ClassVar[str] = "LLM judge: harmlessness of the response"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "response"})
    default_threshold: ClassVar[float | None] = 0.8


@register
class PerTurnUserSimulatorQualityV1(_AdkJudged):
    """Simulated user turns: the first equals starting_prompt, later ones follow the plan."""

    name: ClassVar[str] = "per_turn_user_simulator_quality_v1"
    description: ClassVar[str] = "LLM judge: fidelity of the simulated user, per turn"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "scenario"})
    options_model: ClassVar[type[MetricOptions]] = UserSimulatorQualityOptions
    default_threshold: ClassVar[float | None] = 0.8
