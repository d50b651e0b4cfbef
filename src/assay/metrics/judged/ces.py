"""CES evaluation judges of turns: semantic similarity and hallucination.

Option names follow CES's `EvaluationMetricsThresholds` (flattened into the criterion):
`semanticSimilaritySuccessThreshold` (integer 0..4, default 3), `semanticSimilarityChannel`,
`hallucinationMetricBehavior` and its golden/scenario variants (`ENABLED` / `DISABLED`).
A DISABLED hallucination metric is still computed but never passes or fails a case.

- `semantic_similarity`: per turn with an expected response (a CES expected agent
  response, the golden turn's response, or a single-turn case's `expected_response`),
  the judge rates the agent response 0..4; the samples vote for the most frequent
  score (a tie takes the lower). Each turn reports its `label` (4 fully consistent,
  3 mostly consistent, 2 partially consistent (minor omissions), 1 largely
  inconsistent (major omissions), 0 completely inconsistent / contradictory) and
  `outcome` (PASS iff score ≥ the threshold); the case score is the mean over the
  judged turns, compared with the same threshold. Only text is judged: the channel
  option is accepted for CES configs and does not change the judging.
- `hallucination`: per turn with a response, the judge sees the conversation so far
  (developer instructions and tool declarations when known, earlier turns, the user
  input, the turn's tool calls and results) and scores 1 (justified), 0 (not
  justified) or -1 (no claim to assess). Ties go to the first of 0, -1, 1: 1 vs 0 and
  0 vs -1 give 0, 1 vs -1 gives -1 (a tie is never counted as justified). A -1 turn
  has no score (its CES score is in `ces_score`, its label in `label`), so the case
  average covers the turns scored 1 or 0 only; a case whose judged turns are all -1
  has no score (NOT_EVALUATED, with that reason).

The CES judges of whole scenario conversations (user goal satisfaction, task
completion, scenario rubrics and expectations) are in `scenario.py`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from assay.core.cases import EvalCase, Turn
from assay.core.results import MetricResult, Score
from assay.metrics.base import MetricOptions
from assay.metrics.judged.asking import ask, no_parse_reason, settings_for, vote_details
from assay.metrics.judged.base import JudgeClient, JudgedMetric, JudgedOptions
from assay.metrics.judged.context import (
    NO_PROMPT,
    NO_RESPONSE,
    InvocationView,
    render_instructions,
    render_step,
    render_tool_declarations,
    user_prompt_text,
)
from assay.metrics.judged.parsing import field, parse_int_in, parse_json_object
from assay.metrics.judged.prompts import get_prompt
from assay.metrics.judged.voting import Vote, label_vote, ordinal_vote
from assay.metrics.judged.yes_no import VotedJudge, expected_response_of, request_of
from assay.metrics.registry import register
from assay.metrics.sample_split import sample_scores_detail

Behavior = Literal["ENABLED", "DISABLED"]

SIMILARITY_LABELS: dict[int, str] = {
    4: "fully consistent",
    3: "mostly consistent",
    2: "partially consistent (minor omissions)",
    1: "largely inconsistent (major omissions)",
    0: "completely inconsistent / contradictory",
}
HALLUCINATION_LABELS: dict[int, str] = {
    1: "justified",
    0: "not justified",
    -1: "no claim to assess",
}
#: hallucination tie order, most negative first (label_vote breaks ties to the front)
_HALLUCINATION_ORDER = ("0", "-1", "1")


def _score_schema(values: Sequence[int]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "explanation": {"type": "string"},
            "score": {"type": "integer", "enum": list(values)},
        },
        "required": ["explanation", "score"],
        "additionalProperties": False,
    }


def parse_scored(reply: str, low: int, high: int) -> tuple[int | None, str | None]:
    """(score, explanation) of one reply: a JSON object, or a bare integer."""
    obj = parse_json_object(reply)
    if obj is None:
        return parse_int_in(reply.strip(), low, high), None
    explanation = field(obj, "explanation", "rationale", "reasoning")
    score = parse_int_in(field(obj, "score", "rating"), low, high)
    return score, explanation if isinstance(explanation, str) and explanation.strip() else None


async def _ask_scored(
    metric: JudgedMetric,
    judge: JudgeClient,
    messages: list[dict[str, str]],
    labels: dict[int, str],
) -> tuple[list[tuple[int | None, str | None]], str] | str:
    """The parsed samples and, for an unparseable-reply message, what the metric expected
    and the replies; or the judge error."""
    schema = _score_schema(sorted(labels, reverse=True))
    low, high = min(labels), max(labels)
    replies = await ask(
        judge,
        messages,
        metric.num_samples,
        settings_for(metric.judge_options, schema),
        parse=lambda text: parse_scored(text, low, high)[0],
    )
    if replies.error is not None:
        return replies.error
    parsed = [parse_scored(t, min(labels), max(labels)) for t in replies.texts]
    return parsed, no_parse_reason(replies.texts, schema)


def render_conversation(view: InvocationView) -> str:
    """What a turn's response may rest on: the app's instructions and tools when known,
    the session's starting variables, and every turn so far with its steps (tool calls
    and results included), ending with the judged turn's input and steps."""
    agents = view.agents
    sections: list[tuple[str, str]] = []
    if any(a.instructions.strip() for a in agents):
        sections.append(("Developer instructions", render_instructions(agents)))
    if any(a.tools for a in agents):
        sections.append(("Tool declarations", render_tool_declarations(agents)))
    session = view.case.session_input
    if session is not None and session.state:
        state = json.dumps(session.state, ensure_ascii=False, sort_keys=True, default=str)
        sections.append(("Session variables at the start", state))
    lines: list[str] = []
    turns = [*view.history, view.turn]
    for i, turn in enumerate(turns, 1):
        lines.append(f"[turn {i}] user: {user_prompt_text(turn.user_input)}")
        lines += [f"[turn {i}] {render_step(step)}" for step in turn.steps]
        if i < len(turns):
            lines.append(f"[turn {i}] agent: {turn.final_response or NO_RESPONSE}")
    sections.append(("Conversation (the judged response follows the last line)", "\n".join(lines)))
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections)


def _explanation_of(parsed: Sequence[tuple[int | None, str | None]], winner: int) -> str | None:
    return next((e for s, e in parsed if s == winner and e), None)


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
class SemanticSimilarity(VotedJudge):
    """Agent response vs expected response, integer 0..4 (4 = fully consistent).

    An invocation passes when its score reaches `semanticSimilaritySuccessThreshold`;
    the case score is the mean over the judged turns.
    """

    score_range: ClassVar[tuple[float, float] | None] = (0.0, 4.0)

    name: ClassVar[str] = "semantic_similarity"
    description: ClassVar[str] = "LLM judge: response vs expected response, 0..4"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "response", "expected_response"})
    options_model: ClassVar[type[MetricOptions]] = SemanticSimilarityOptions
    family: ClassVar[str] = "ces"

    def __init__(self, options: MetricOptions | None = None) -> None:
        super().__init__(options)
        if self.options.threshold is None and isinstance(self.options, SemanticSimilarityOptions):
            self.threshold = float(self.options.semantic_similarity_success_threshold)

    async def judge_invocation(
        self, judge: JudgeClient, actual: Turn, expected: Turn | None, case: EvalCase
    ) -> Score:
        wanted = expected_response_of(expected, case)
        if wanted is None:
            return Score(None, "no expected response for this turn")
        messages = get_prompt("semantic_similarity").render(
            request=request_of(actual, expected) or NO_PROMPT,
            expected=wanted,
            response=actual.final_response or NO_RESPONSE,
        )
        asked = await _ask_scored(self, judge, messages, SIMILARITY_LABELS)
        if isinstance(asked, str):
            return Score(None, asked)
        parsed, unparsed = asked
        count = len(parsed)
        vote = ordinal_vote([score for score, _ in parsed])
        details = vote_details(vote, count)
        if vote.label is None:
            return Score(None, unparsed, details)
        passed = self.threshold is None or vote.label >= self.threshold
        details.update(sample_scores_detail(score for score, _ in parsed))
        details["label"] = SIMILARITY_LABELS[vote.label]
        details["outcome"] = "PASS" if passed else "FAIL"
        return Score(float(vote.label), _explanation_of(parsed, vote.label), details)


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
class Hallucination(VotedJudge):
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

    async def judge_view(self, judge: JudgeClient, view: InvocationView) -> Score:
        """One turn, judged with the conversation before it."""
        response = view.turn.final_response
        if not response:
            return Score(None, "no agent response in this turn")
        messages = get_prompt("ces_hallucination").render(
            conversation=render_conversation(view), response=response
        )
        asked = await _ask_scored(self, judge, messages, HALLUCINATION_LABELS)
        if isinstance(asked, str):
            return Score(None, asked)
        parsed, unparsed = asked
        count = len(parsed)
        vote: Vote[str] = label_vote(
            [None if score is None else str(score) for score, _ in parsed], _HALLUCINATION_ORDER
        )
        details = vote_details(vote, count)
        if vote.label is None:
            return Score(None, unparsed, details)
        score = int(vote.label)
        details["ces_score"] = score
        details["label"] = HALLUCINATION_LABELS[score]
        explanation = _explanation_of(parsed, score)
        if score == -1:  # no claim: reported, left out of the average
            return Score(
                None, f"no claim to assess (-1): {explanation or 'no explanation'}", details
            )
        return Score(float(score), explanation, details)

    def result_from_invocations(self, per: list[Score]) -> MetricResult:
        result = super().result_from_invocations(per)
        no_claim = sum(1 for s in per if s.details.get("ces_score") == -1)
        result.details["no_claim_turns"] = no_claim
        if result.score is None and no_claim:
            others = sorted(
                {s.explanation for s in per if s.explanation and s.details.get("ces_score") != -1}
            )
            lead = f"no turn had a claim to assess ({no_claim} of {len(per)} turns scored -1)"
            result.explanation = "; ".join([lead, *others])
        return result

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
