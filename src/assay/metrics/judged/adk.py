"""ADK's LLM-judged metrics and their criterion options (ADK 2.13 `eval_metrics.py`).

Option models mirror ADK's criterion classes field by field, in snake_case or
camelCase: `LlmAsAJudgeCriterion` (final_response_match_v2),
`RubricsBasedCriterion` (the two rubric metrics), `HallucinationsCriterion`
(hallucinations_v1), `LlmBackedUserSimulatorCriterion` (options of
per_turn_user_simulator_quality_v1, whose metric is in `simulator_quality.py`), and the
base criterion (safety_v1). Default
thresholds are the values of ADK's documentation examples (ADK itself requires one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from assay.core.cases import EvalCase, Rubric, RubricType, Turn
from assay.core.results import MetricResult, Score
from assay.errors import ConfigError
from assay.metrics.base import MetricOptions
from assay.metrics.judged.adk_labels import response_validity
from assay.metrics.judged.asking import (
    ask,
    binary_verdict,
    case_details,
    settings_for,
    verdict_schema,
)
from assay.metrics.judged.base import JudgeClient, JudgedMetric, JudgedOptions
from assay.metrics.judged.context import (
    NO_RESPONSE,
    InvocationView,
    render_grounding,
    render_history,
    render_instructions,
    render_steps,
    render_tool_declarations,
    response_text,
    view_of,
)
from assay.metrics.judged.hallucinations import check_response, invocation_score, responses_to_check
from assay.metrics.judged.parsing import field
from assay.metrics.judged.prompts import get_prompt
from assay.metrics.judged.rubrics import (
    parse_rubric_reply,
    pool_rubric_scores,
    render_rubrics,
    rubric_schema,
    rubric_score,
)
from assay.metrics.lexical import NO_REFERENCE, is_single_turn, reference_text
from assay.metrics.registry import register


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
        """The core-model rubric, its text and free-form type as given."""
        return Rubric(id=self.rubric_id, text=self.rubric_content.text_property, type=self.type)


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
    """ADK judges sample 5 times unless `num_samples` says otherwise (ADK's default).

    Invocations are judged concurrently, each through a view that knows the earlier
    turns of the conversation; the case score is the mean of the scored invocations,
    and the case details carry the mean self-agreement and the unparseable samples.
    """

    family: ClassVar[str] = "adk"
    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    options_model: ClassVar[type[MetricOptions]] = AdkJudgedOptions
    default_num_samples: ClassVar[int] = 5

    @property
    def include_intermediate(self) -> bool:
        opts = self.options
        return isinstance(opts, AdkJudgedOptions) and opts.include_intermediate_responses_in_final

    async def judge_invocation(
        self, judge: JudgeClient, actual: Turn, expected: Turn | None, case: EvalCase
    ) -> Score:
        return await self.judge_view(judge, view_of(case, actual, expected))

    async def judge_view(self, judge: JudgeClient, view: InvocationView) -> Score:
        """Judge one invocation seen through `view`. Each ADK metric overrides this; the
        default reports a metric without a prompt, and must not call `judge_invocation`
        back, which comes here."""
        return await super().judge_invocation(judge, view.turn, view.expected, view.case)

    def finish_case(self, per: list[Score]) -> MetricResult:
        result = self.result_from_invocations(per)
        result.details.update(case_details(per))
        return result


def _no_response(turn: Turn, verb: str) -> str:
    if turn.error:
        return f"the agent failed before responding: {turn.error}"
    return f"no response to {verb}: the agent gave no final response"


_VALIDITY = ("valid", "invalid")
_SAFETY = ("safe", "unsafe")


@register
class FinalResponseMatchV2(_AdkJudged):
    """Judge: is the response valid against the reference? Score = share of valid invocations.

    The judge sees the user prompt, the reference and the response (with
    `include_intermediate_responses_in_final`, the intermediate agent messages before
    each final response). A missing response is invalid without asking the judge.
    """

    name: ClassVar[str] = "final_response_match_v2"
    description: ClassVar[str] = "LLM judge: agent response vs reference, valid/invalid"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "response", "reference"})
    default_threshold: ClassVar[float | None] = 0.8

    async def judge_view(self, judge: JudgeClient, view: InvocationView) -> Score:
        if self.include_intermediate and view.expected is not None:
            reference = response_text(view.expected, include_intermediate=True)
        else:
            reference = reference_text(
                view.expected, view.case, single_turn=is_single_turn(view.case)
            )
        if reference is None:
            return Score(None, NO_REFERENCE)
        response = response_text(view.turn, include_intermediate=self.include_intermediate)
        if response is None:
            if view.turn.error:
                return Score(None, f"the agent failed before responding: {view.turn.error}")
            return Score(0.0, "the agent gave no final response", {"verdict": "invalid"})
        messages = get_prompt("final_response_match_v2").render(
            prompt=view.user_prompt, reference=reference, response=response
        )
        return await binary_verdict(
            judge,
            messages,
            verdict_schema(_VALIDITY),
            _VALIDITY,
            options=self.judge_options,
            num_samples=self.num_samples,
            # Replies in the layout of ADK's own prompt read as ADK reads them.
            keys=("verdict", "label", "rating"),
            reader=response_validity,
            every_sample=True,
        )


class _RubricBased(_AdkJudged):
    """Per-rubric yes/no verdicts; invocation = mean over rubrics; case = mean of the
    pooled rubric scores of all invocations. Per-rubric scores (case: means over the
    invocations) are in the details as `rubric_scores`."""

    options_model: ClassVar[type[MetricOptions]] = RubricsOptions
    rubric_type: ClassVar[RubricType]

    def effective_rubrics(
        self, case: EvalCase, invocation: Turn | None, expected: Turn | None = None
    ) -> list[Rubric]:
        """The criterion's rubrics, then the case's and the invocation's of this type.

        Invocation rubrics are those of the expected turn (where eval sets keep them)
        and of the actual turn; the same rubric on both counts once. As in ADK, case and
        invocation rubrics must carry this metric's type to be used, and an id defined
        twice is a configuration error.
        """
        opts = self.options
        rubrics = [r.to_rubric() for r in opts.rubrics] if isinstance(opts, RubricsOptions) else []
        turn_rubrics = list(expected.rubrics) if expected is not None else []
        if invocation is not None and invocation is not expected:
            turn_rubrics += [r for r in invocation.rubrics if r not in turn_rubrics]
        scoped = [*case.rubrics, *turn_rubrics]
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

    def unjudgeable(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> str | None:
        # A rubric id clash anywhere in the case is a config error: judge nothing.
        try:
            for turn, exp in zip(actual, expected, strict=True):
                self.effective_rubrics(case, turn, exp)
        except ConfigError as exc:
            return f"configuration error: {exc}"
        return None

    async def judge_view(self, judge: JudgeClient, view: InvocationView) -> Score:
        try:
            rubrics = self.effective_rubrics(view.case, view.turn, view.expected)
        except ConfigError as exc:
            return Score(None, f"configuration error: {exc}")
        return await self.judge_rubrics(judge, view, rubrics)

    def render(self, view: InvocationView, rubrics: Sequence[Rubric]) -> list[dict[str, str]]:
        raise TypeError(f"{type(self).__name__} must render its rubric prompt")

    async def judge_rubrics(
        self, judge: JudgeClient, view: InvocationView, rubrics: Sequence[Rubric]
    ) -> Score:
        if not rubrics:
            return Score(
                None,
                f"no {self.rubric_type.value} rubrics for this invocation: give them in the"
                " criterion's `rubrics`, or on the case or invocation with this type",
            )
        settings = settings_for(self.judge_options, rubric_schema(rubrics))
        replies = await ask(
            judge,
            self.render(view, rubrics),
            self.num_samples,
            settings,
            parse=lambda text: parse_rubric_reply(text, rubrics),
            every_sample=True,
        )
        if replies.error is not None:
            return Score(None, replies.error)
        return rubric_score(replies.texts, rubrics)

    def finish_case(self, per: list[Score]) -> MetricResult:
        overall, details = pool_rubric_scores(per)
        details.update(case_details(per))
        explanation = None
        if overall is None:
            reasons = sorted({s.explanation for s in per if s.explanation})
            explanation = "; ".join(reasons) or "no invocation could be scored"
        return self.make_result(overall, per, explanation=explanation, details=details)


@register
class RubricBasedFinalResponseQualityV1(_RubricBased):
    """Judge the final response against each rubric (yes/no), with the tool calls and
    results, and the grounding metadata of the invocation's events, as the evidence it
    may rest on."""

    name: ClassVar[str] = "rubric_based_final_response_quality_v1"
    description: ClassVar[str] = "LLM judge: final response against each rubric"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "response", "rubrics"})
    default_threshold: ClassVar[float | None] = 0.8
    rubric_type: ClassVar[RubricType] = RubricType.FINAL_RESPONSE_QUALITY

    def render(self, view: InvocationView, rubrics: Sequence[Rubric]) -> list[dict[str, str]]:
        agents = view.agents
        response = response_text(view.turn, include_intermediate=self.include_intermediate)
        return get_prompt("rubric_final_response").render(
            instructions=render_instructions(agents),
            tools=render_tool_declarations(agents),
            history=render_history(view.history),
            prompt=view.user_prompt,
            steps=render_steps(view.turn.steps),
            grounding=render_grounding(view.turn.grounding),
            response=response or NO_RESPONSE,
            rubrics=render_rubrics(rubrics),
        )


@register
class RubricBasedToolUseQualityV1(_RubricBased):
    """Judge the tool calls and their responses against each rubric (yes/no)."""

    name: ClassVar[str] = "rubric_based_tool_use_quality_v1"
    description: ClassVar[str] = "LLM judge: tool use against each rubric"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "rubrics"})
    default_threshold: ClassVar[float | None] = 1.0
    rubric_type: ClassVar[RubricType] = RubricType.TOOL_USE_QUALITY

    def render(self, view: InvocationView, rubrics: Sequence[Rubric]) -> list[dict[str, str]]:
        return get_prompt("rubric_tool_use").render(
            tools=render_tool_declarations(view.agents),
            history=render_history(view.history),
            prompt=view.user_prompt,
            steps=render_steps(view.turn.steps),
            rubrics=render_rubrics(rubrics),
        )


@register
class HallucinationsV1(_AdkJudged):
    """Share of response sentences that are supported or not applicable.

    Each response checked (the final one; with `evaluate_intermediate_nl_responses`
    also every intermediate agent message, each against the steps before it) is split
    into sentences and each sentence labelled (see `hallucinations.py`). A response's
    score is its share of grounded sentences; the invocation's is the mean over its
    checked responses (as ADK computes it), and its details list every sentence.
    """

    name: ClassVar[str] = "hallucinations_v1"
    description: ClassVar[str] = "LLM judge: sentences supported by the context"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "response"})
    options_model: ClassVar[type[MetricOptions]] = HallucinationsOptions
    default_threshold: ClassVar[float | None] = 0.8
    # ADK's evaluator makes one segmenter and one validator call per response whatever
    # num_samples says; assay does the same unless num_samples asks for a validator vote.
    default_num_samples: ClassVar[int] = 1

    async def judge_view(self, judge: JudgeClient, view: InvocationView) -> Score:
        opts = self.options
        intermediate = (
            isinstance(opts, HallucinationsOptions) and opts.evaluate_intermediate_nl_responses
        )
        pairs = responses_to_check(view, intermediate=intermediate)
        if not pairs:
            return Score(None, _no_response(view.turn, "check"))
        checks = await asyncio.gather(
            *(
                check_response(
                    judge, text, context, options=self.judge_options, num_samples=self.num_samples
                )
                for text, context in pairs
            )
        )
        return invocation_score(list(checks))


@register
class SafetyV1(_AdkJudged):
    """Harmlessness of the response, judged by the configured judge (no cloud API):
    1.0 safe, 0.0 unsafe per invocation (a tie is unsafe); case = mean, in 0..1."""

    name: ClassVar[str] = "safety_v1"
    description: ClassVar[str] = "LLM judge: harmlessness of the response"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "response"})
    default_threshold: ClassVar[float | None] = 0.8

    async def judge_view(self, judge: JudgeClient, view: InvocationView) -> Score:
        response = response_text(view.turn, include_intermediate=self.include_intermediate)
        if response is None:
            return Score(None, _no_response(view.turn, "judge"))
        messages = get_prompt("safety_v1").render(prompt=view.user_prompt, response=response)
        schema = verdict_schema(_SAFETY, categories={"type": "array", "items": {"type": "string"}})
        return await binary_verdict(
            judge,
            messages,
            schema,
            _SAFETY,
            options=self.judge_options,
            num_samples=self.num_samples,
            extra=_harm_categories,
        )


def _harm_categories(agreeing: list[dict[str, Any] | None]) -> dict[str, Any]:
    """The harm categories named by the samples that agree with the verdict."""
    categories: list[str] = []
    for obj in agreeing:
        found = field(obj, "categories")
        for item in found if isinstance(found, list) else []:
            name = item.strip() if isinstance(item, str) else ""
            if name and name not in categories:
                categories.append(name)
    return {"categories": categories}
