"""ADK 2.13's `rubric_based_multi_turn_trajectory_quality_v1`, judged locally.

ADK's evaluator judges a conversation once, at its last invocation, against rubrics:
the judge reads every turn (the user's words, each tool call with its arguments, each
tool result, intermediate messages, final replies) with the developer instructions and
tool declarations of every agent involved, and gives a yes/no verdict per rubric,
naming the turn that fell short. `num_samples` samples (ADK's default 5) vote per
rubric (a tie is "no"); the score is the share of rubrics met, in [0, 1]. The earlier
invocations are reported without a score (NOT_EVALUATED), exactly as ADK reports them,
and the case score is the last invocation's. Rubrics: the criterion's, then the case's
and the last invocation's of type `TRAJECTORY_QUALITY` (ids must be unique).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from assay.core.cases import EvalCase, Rubric, RubricType, Turn
from assay.core.results import MetricResult, Score
from assay.errors import ConfigError
from assay.metrics.judged.adk import _RubricBased
from assay.metrics.judged.asking import ask, case_details, settings_for
from assay.metrics.judged.base import JudgeClient
from assay.metrics.judged.context import (
    NO_RESPONSE,
    AgentInfo,
    agents_for,
    render_instructions,
    render_step,
    render_tool_declarations,
    user_prompt_text,
)
from assay.metrics.judged.parsing import field, parse_int_in, parse_json_object
from assay.metrics.judged.prompts import RenderedPrompt, get_prompt
from assay.metrics.judged.rubrics import (
    parse_rubric_reply,
    pool_rubric_scores,
    render_rubrics,
    rubric_schema,
    rubric_score,
)
from assay.metrics.registry import register

EARLIER_TURN = "not evaluated: the conversation is judged once, as a whole, at its last invocation"


def conversation_agents(case: EvalCase, count: int) -> list[AgentInfo]:
    """Every agent known for any of the first `count` invocations, first seen first."""
    seen: dict[str, AgentInfo] = {}
    for index in range(count):
        for agent in agents_for(case, index):
            seen.setdefault(agent.name, agent)
    return list(seen.values())


def render_dialogue(turns: Sequence[Turn]) -> str:
    """Every turn, numbered from 1: user message, agent steps, final reply."""
    lines: list[str] = []
    for i, turn in enumerate(turns, 1):
        lines.append(f"[turn {i}] user: {user_prompt_text(turn.user_input)}")
        lines += [f"[turn {i}] {render_step(step)}" for step in turn.steps]
        lines.append(f"[turn {i}] agent: {turn.final_response or NO_RESPONSE}")
    return "\n".join(lines)


def render_trajectory_prompt(
    case: EvalCase, turns: Sequence[Turn], rubrics: Sequence[Rubric]
) -> RenderedPrompt:
    agents = conversation_agents(case, len(turns))
    return get_prompt("rubric_multi_turn_trajectory").render(
        instructions=render_instructions(agents),
        tools=render_tool_declarations(agents),
        conversation=render_dialogue(turns),
        rubrics=render_rubrics(rubrics, types=True),
    )


def trajectory_schema(rubrics: Sequence[Rubric]) -> dict[str, Any]:
    """The rubric reply schema with each entry's violating `turn` (integer or null)."""
    schema = rubric_schema(rubrics)
    item = schema["properties"]["rubrics"]["items"]
    item["properties"]["turn"] = {"type": ["integer", "null"]}
    item["required"] = [*item["required"], "turn"]
    return schema


def violating_turns(
    replies: Sequence[str], failed: Sequence[str], turns: int
) -> dict[str, int | None]:
    """For each failed rubric id, the turn the first sample naming one gives (1..turns)."""
    found: dict[str, int | None] = dict.fromkeys(failed)
    for reply in replies:
        entries = field(parse_json_object(reply), "rubrics", "properties", "verdicts")
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue
            rubric_id = field(entry, "id", "rubric_id")
            turn = parse_int_in(field(entry, "turn", "violating_turn"), 1, turns)
            # A judge may put anything in `id` (a list, an object): only known ids count.
            if not isinstance(rubric_id, str) or turn is None:
                continue
            if rubric_id in found and found[rubric_id] is None:
                found[rubric_id] = turn
    return found


@register
class RubricBasedMultiTurnTrajectoryQualityV1(_RubricBased):
    """The whole conversation against each rubric (yes/no with the violating turn)."""

    name: ClassVar[str] = "rubric_based_multi_turn_trajectory_quality_v1"
    description: ClassVar[str] = (
        "LLM judge: the whole conversation (tool calls included) against each rubric"
    )
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "rubrics"})
    default_threshold: ClassVar[float | None] = 0.8
    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)
    rubric_type: ClassVar[RubricType] = RubricType.TRAJECTORY_QUALITY

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
        last = await self._judge_conversation(judge, case, actual, expected[-1])
        overall, details = pool_rubric_scores([last])
        details.update(case_details([last]))
        details["violations"] = last.details.get("violations", {})
        return self.make_result(
            overall,
            [*earlier, last],
            explanation=last.explanation if overall is None else None,
            details=details,
        )

    async def _judge_conversation(
        self, judge: JudgeClient, case: EvalCase, turns: Sequence[Turn], expected: Turn | None
    ) -> Score:
        try:
            rubrics = self.effective_rubrics(case, turns[-1], expected)
        except ConfigError as exc:
            return Score(None, f"configuration error: {exc}")
        if not rubrics:
            return Score(
                None,
                f"no {self.rubric_type.value} rubrics for this conversation: give them in the"
                " criterion's `rubrics`, or on the case or its last invocation with this type",
            )
        replies = await ask(
            judge,
            render_trajectory_prompt(case, turns, rubrics),
            self.num_samples,
            settings_for(self.judge_options, trajectory_schema(rubrics)),
            parse=lambda text: parse_rubric_reply(text, rubrics),
            every_sample=True,
        )
        if replies.error is not None:
            return Score(None, replies.error)
        score = rubric_score(replies.texts, rubrics)
        verdicts = score.details.get("rubric_scores", {})
        failed = [rid for rid, value in verdicts.items() if value == 0.0]
        violations = violating_turns(replies.texts, failed, len(turns))
        score.details["violations"] = violations
        named = [f"{rid}: not met at turn {t}" for rid, t in violations.items() if t is not None]
        if named and score.explanation:
            score.explanation = "\n".join([score.explanation, *named])
        return score
