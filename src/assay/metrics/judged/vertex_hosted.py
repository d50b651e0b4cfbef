"""The metrics ADK 2.13 hands to Vertex AI's hosted evaluation service, run by assay's
own judges (any backend) with prompts written for assay.

- `multi_turn_task_success_v1`, `multi_turn_trajectory_quality_v1`,
  `multi_turn_tool_use_quality_v1`: Vertex's managed rubric metrics judge a whole
  conversation in two steps, writing a checklist (rubrics) for the conversation and then
  a yes/no verdict per check; the score is the share of checks met, in [0, 1]. assay
  does the same with its judge: one call writes the checklist for the metric's concern
  (`*_rubrics.v1` prompts), then `num_samples` calls (default 1) give the verdicts
  (`multi_turn_rubric_verdicts.v1`), voted per check (tie = no). As in ADK, the
  conversation is judged once at its last invocation: the earlier invocations are
  NOT_EVALUATED and the case score is the last invocation's.
- `response_evaluation_score`: Vertex's pointwise coherence, 1 (incoherent) to 5 (fully
  coherent), per invocation; the case score is the mean of the scored invocations.

Pass rule, as ADK's Vertex facade applies it: PASSED when the score is at least the
threshold. docs/metrics.md says what differs from Google's hosted versions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from assay.core.cases import EvalCase, Rubric, Turn
from assay.core.results import MetricResult, Score
from assay.metrics.judged.asking import (
    ask,
    case_details,
    no_parse_reason,
    settings_for,
    vote_details,
)
from assay.metrics.judged.base import JudgeClient, JudgedMetric
from assay.metrics.judged.ces import parse_scored
from assay.metrics.judged.context import (
    InvocationView,
    render_instructions,
    render_tool_declarations,
    response_text,
)
from assay.metrics.judged.multi_turn import (
    EARLIER_TURN,
    conversation_agents,
    render_dialogue,
    trajectory_schema,
    violating_turns,
)
from assay.metrics.judged.parsing import field, parse_json_object
from assay.metrics.judged.prompts import get_prompt
from assay.metrics.judged.rubrics import parse_rubric_reply, render_rubrics, rubric_score
from assay.metrics.judged.scenario_view import render_scenario
from assay.metrics.judged.voting import ordinal_vote
from assay.metrics.registry import register
from assay.metrics.sample_split import sample_scores_detail

MAX_CHECKS = 8
_ID = re.compile(r"[^a-z0-9_]+")

CHECKLIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rubrics": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "property": {"type": "string"}},
                "required": ["id", "property"],
                "additionalProperties": False,
            },
            "minItems": 1,
            "maxItems": MAX_CHECKS,
        }
    },
    "required": ["rubrics"],
    "additionalProperties": False,
}


def parse_checklist(reply: str) -> list[Rubric] | None:
    """The checks a judge wrote: `{"rubrics": [{"id", "property"}]}`, at most
    MAX_CHECKS, ids made unique (a missing id becomes `check_N`); None when none."""
    entries = field(parse_json_object(reply), "rubrics", "checks", "properties")
    if not isinstance(entries, list):
        return None
    checks: list[Rubric] = []
    used: set[str] = set()
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        text = field(entry, "property", "text", "check", "rubric")
        if not isinstance(text, str) or not text.strip():
            continue
        raw = field(entry, "id", "rubric_id")
        base = _ID.sub("_", str(raw).lower()).strip("_") if raw is not None else ""
        rubric_id = base or f"check_{len(checks) + 1}"
        suffix = 2
        while rubric_id in used:
            rubric_id = f"{base or 'check'}_{suffix}"
            suffix += 1
        used.add(rubric_id)
        checks.append(Rubric(id=rubric_id, text=" ".join(text.split())))
        if len(checks) == MAX_CHECKS:
            break
    return checks or None


def intent_text(case: EvalCase) -> str:
    """What the user set out to do, when the case says (a scenario), else a note."""
    if case.scenario is not None:
        return render_scenario(case.scenario)
    return "(not stated: infer the user's goals from the conversation)"


class _HostedMultiTurn(JudgedMetric):
    """A Vertex managed multi-turn rubric metric, judged by assay's judge."""

    needs: ClassVar[frozenset[str]] = frozenset({"judge"})
    default_threshold: ClassVar[float | None] = 0.8
    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    #: the prompt that writes this metric's checklist
    checklist_prompt: ClassVar[str]

    async def judge_case(
        self,
        judge: JudgeClient,
        case: EvalCase,
        actual: Sequence[Turn],
        expected: Sequence[Turn | None],
    ) -> MetricResult:
        if not actual:
            return self.not_evaluated(actual, None)
        earlier = [Score(None, EARLIER_TURN) for _ in actual[:-1]]
        last = await self._judge_conversation(judge, case, actual)
        details: dict[str, Any] = {
            key: last.details[key] for key in ("rubrics", "violations") if key in last.details
        }
        details.update(case_details([last]))
        return self.make_result(
            last.value,
            [*earlier, last],
            explanation=last.explanation if last.value is None else None,
            details=details,
        )

    async def _judge_conversation(
        self, judge: JudgeClient, case: EvalCase, turns: Sequence[Turn]
    ) -> Score:
        agents = conversation_agents(case, len(turns))
        fields = {
            "instructions": render_instructions(agents),
            "tools": render_tool_declarations(agents),
            "conversation": render_dialogue(turns),
        }
        written = await ask(
            judge,
            get_prompt(self.checklist_prompt).render(intent=intent_text(case), **fields),
            1,
            settings_for(self.judge_options, CHECKLIST_SCHEMA),
            parse=parse_checklist,
        )
        if written.error is not None:
            return Score(None, written.error)
        checks = parse_checklist(written.texts[0])
        if checks is None:
            return Score(None, "the judge wrote no usable checklist (reply unparseable)")
        replies = await ask(
            judge,
            get_prompt("multi_turn_rubric_verdicts").render(
                rubrics=render_rubrics(checks), **fields
            ),
            self.num_samples,
            settings_for(self.judge_options, trajectory_schema(checks)),
            parse=lambda text: parse_rubric_reply(text, checks),
        )
        if replies.error is not None:
            return Score(None, replies.error)
        score = rubric_score(replies.texts, checks)
        verdicts: dict[str, float | None] = score.details.get("rubric_scores", {})
        failed = [rid for rid, value in verdicts.items() if value == 0.0]
        violations = violating_turns(replies.texts, failed, len(turns))
        score.details["violations"] = violations
        score.details["rubrics"] = [
            {"id": c.id, "property": c.text, "score": verdicts.get(c.id)} for c in checks
        ]
        return score


@register
class MultiTurnTaskSuccessV1(_HostedMultiTurn):
    """Did the agent achieve the user's goal(s) over the whole conversation?"""

    name: ClassVar[str] = "multi_turn_task_success_v1"
    description: ClassVar[str] = "LLM judge: the user's goals achieved over the conversation"
    checklist_prompt: ClassVar[str] = "multi_turn_task_success_rubrics"


@register
class MultiTurnTrajectoryQualityV1(_HostedMultiTurn):
    """The path the agent took across the conversation, not only where it ended."""

    name: ClassVar[str] = "multi_turn_trajectory_quality_v1"
    description: ClassVar[str] = "LLM judge: quality of the path the agent took"
    checklist_prompt: ClassVar[str] = "multi_turn_trajectory_quality_rubrics"


@register
class MultiTurnToolUseQualityV1(_HostedMultiTurn):
    """The function calls of the conversation: choice, arguments, use of results."""

    name: ClassVar[str] = "multi_turn_tool_use_quality_v1"
    description: ClassVar[str] = "LLM judge: the tool calls of the whole conversation"
    checklist_prompt: ClassVar[str] = "multi_turn_tool_use_quality_rubrics"


COHERENCE_LABELS: dict[int, str] = {
    5: "fully coherent",
    4: "mostly coherent",
    3: "partly coherent",
    2: "mostly incoherent",
    1: "incoherent",
}
_COHERENCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string"},
        "score": {"type": "integer", "enum": sorted(COHERENCE_LABELS, reverse=True)},
    },
    "required": ["explanation", "score"],
    "additionalProperties": False,
}


@register
class ResponseEvaluationScore(JudgedMetric):
    """Coherence of each final response, 1 to 5 (Vertex's `coherence`).

    Samples are voted (most frequent rating; a tie takes the lowest tied rating).
    """

    name: ClassVar[str] = "response_evaluation_score"
    description: ClassVar[str] = "LLM judge: coherence of the response, 1 to 5"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "response"})
    default_threshold: ClassVar[float | None] = 4.0
    score_range: ClassVar[tuple[float, float] | None] = (1.0, 5.0)

    async def judge_view(self, judge: JudgeClient, view: InvocationView) -> Score:
        response = response_text(view.turn)
        if response is None:
            if view.turn.error:
                return Score(None, f"the agent failed before responding: {view.turn.error}")
            return Score(None, "no response to rate: the agent gave no final response")
        replies = await ask(
            judge,
            get_prompt("response_coherence").render(prompt=view.user_prompt, response=response),
            self.num_samples,
            settings_for(self.judge_options, _COHERENCE_SCHEMA),
            parse=lambda text: parse_scored(text, 1, 5)[0],
        )
        if replies.error is not None:
            return Score(None, replies.error)
        parsed = [parse_scored(text, 1, 5) for text in replies.texts]
        vote = ordinal_vote([rating for rating, _ in parsed])
        details = vote_details(vote, len(parsed))
        if vote.label is None:
            return Score(None, no_parse_reason(replies.texts, _COHERENCE_SCHEMA), details)
        details.update(sample_scores_detail(rating for rating, _ in parsed))
        details["label"] = COHERENCE_LABELS[vote.label]
        explanation = next((why for rating, why in parsed if rating == vote.label and why), None)
        return Score(float(vote.label), explanation, details)

    def finish_case(self, per: list[Score]) -> MetricResult:
        result = self.result_from_invocations(per)
        result.details.update(case_details(per))
        return result
