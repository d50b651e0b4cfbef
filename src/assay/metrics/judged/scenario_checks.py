"""The checks the scenario metrics share: expectations, the user goal, hallucination.

- A **tool expectation** is met when some tool call of the conversation matches the
  expected call: same tool name, and every argument the expectation names present with
  an equal value (CES: the expected call names the parameters of interest, others are
  free). The `arg_match` option changes the rule (see `assay.metrics.argmatch`). The
  observed call and its response are reported either way (on failure, the first call
  of that tool, if any).
- An **expected agent response** is met when some agent text contains it verbatim
  (case and spacing aside), else when the judge finds a response that matches it in
  meaning. Without a judge such an expectation stays undecided.
- The **user goal** judge scores 1 (satisfied), 0 (not satisfied) or -1 (no goal
  stated) and says whether the agent rejected the goal; samples vote like CES's
  hallucination judge (ties go to 0, then -1).
- **Hallucination** reuses the CES `hallucination` judge turn by turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from assay.core.cases import EvalCase, ScenarioExpectation, ToolCall, ToolResponse, Turn
from assay.metrics.argmatch import CallMatcher
from assay.metrics.judged.asking import (
    ask,
    binary_verdict,
    no_parse_reason,
    settings_for,
    verdict_schema,
    vote_details,
)
from assay.metrics.judged.base import JudgeClient, JudgedMetric
from assay.metrics.judged.ces import Hallucination, HallucinationOptions
from assay.metrics.judged.parsing import field as get_field
from assay.metrics.judged.parsing import parse_int_in, parse_json_object, parse_yes_no
from assay.metrics.judged.prompts import get_prompt
from assay.metrics.judged.scenario_view import agent_responses, render_conversation, render_scenario
from assay.metrics.judged.voting import binary_vote, label_vote

Outcome = Literal["PASS", "FAIL"]
_MATCH = ("yes", "no")


@dataclass
class ExpectationOutcome:
    """One scenario expectation: PASS / FAIL / None (undecided), with what was observed."""

    index: int
    expectation: ScenarioExpectation
    outcome: Outcome | None
    explanation: str
    observed: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The outcome as CES writes a `ScenarioExpectationOutcome` (plus explanation)."""
        out: dict[str, Any] = {
            "expectation": self.expectation.model_dump(exclude_none=True),
            "outcome": self.outcome,
            "explanation": self.explanation,
        }
        out.update(self.observed)
        return out


def _calls(turns: Sequence[Turn]) -> list[tuple[ToolCall, ToolResponse | None]]:
    """Every tool call of the conversation with the response that answered it."""
    pairs: list[tuple[ToolCall, ToolResponse | None]] = []
    for turn in turns:
        responses = turn.tool_responses()
        used: set[int] = set()
        for call in turn.tool_calls():
            match = next(
                (
                    i
                    for i, r in enumerate(responses)
                    if i not in used
                    and r.name == call.name
                    and (call.id is None or r.id is None or r.id == call.id)
                ),
                None,
            )
            if match is not None:
                used.add(match)
            pairs.append((call, responses[match] if match is not None else None))
    return pairs


def _observed_call(call: ToolCall, response: ToolResponse | None) -> dict[str, Any]:
    observed: dict[str, Any] = {"toolCall": call.model_dump(exclude_none=True)}
    if response is not None:
        observed["toolResponse"] = response.model_dump(exclude_none=True)
    return {"observedToolCall": observed}


def check_tool(
    index: int, expectation: ScenarioExpectation, turns: Sequence[Turn], matcher: CallMatcher
) -> ExpectationOutcome:
    assert expectation.tool_expectation is not None
    wanted = expectation.tool_expectation.expected_tool_call
    pairs = _calls(turns)
    for call, response in pairs:
        if matcher.matches(wanted, call):
            return ExpectationOutcome(
                index,
                expectation,
                "PASS",
                f"{wanted.name} was called with the expected arguments",
                _observed_call(call, response),
            )
    same_tool = [(c, r) for c, r in pairs if c.name == wanted.name]
    if same_tool:
        call, response = same_tool[0]
        why = f"{wanted.name} was called, but never with arguments matching {wanted.args}"
        return ExpectationOutcome(index, expectation, "FAIL", why, _observed_call(call, response))
    return ExpectationOutcome(index, expectation, "FAIL", f"{wanted.name} was never called")


def _squash(text: str) -> str:
    return " ".join(text.casefold().split())


def _turn_of(agreeing: list[dict[str, Any] | None]) -> dict[str, Any]:
    for obj in agreeing:
        turn = parse_int_in(get_field(obj, "turn"), 1, 10_000)
        if turn is not None:
            return {"turn": turn}
    return {}


async def check_agent_response(
    metric: JudgedMetric,
    judge: JudgeClient | None,
    index: int,
    expectation: ScenarioExpectation,
    turns: Sequence[Turn],
) -> ExpectationOutcome:
    wanted = expectation.agent_response or ""
    said = agent_responses(turns)
    for turn, text in said:
        if _squash(wanted) in _squash(text):
            verbatim = {"observedAgentResponse": text, "turn": turn}
            return ExpectationOutcome(
                index, expectation, "PASS", f"turn {turn} says it verbatim", verbatim
            )
    if not said:
        return ExpectationOutcome(index, expectation, "FAIL", "the agent said nothing")
    if judge is None:
        return ExpectationOutcome(
            index, expectation, None, f"not found verbatim; {metric.no_judge_reason}"
        )
    messages = get_prompt("scenario_agent_response").render(
        responses="\n\n".join(f"[turn {t}] {text}" for t, text in said), expected=wanted
    )
    schema = verdict_schema(_MATCH, turn={"type": "integer"})
    score = await binary_verdict(
        judge, messages, schema, _MATCH, options=metric.judge_options,
        num_samples=metric.num_samples, extra=_turn_of,
    )  # fmt: skip
    if score.value is None:
        return ExpectationOutcome(index, expectation, None, score.explanation or "no verdict")
    observed: dict[str, Any] = {}
    matched = score.details.get("turn")
    if score.value == 1.0 and isinstance(matched, int) and matched <= len(turns):
        observed = {"observedAgentResponse": turns[matched - 1].final_response, "turn": matched}
    outcome: Outcome = "PASS" if score.value == 1.0 else "FAIL"
    return ExpectationOutcome(index, expectation, outcome, score.explanation or "", observed)


async def check_expectations(
    metric: JudgedMetric,
    judge: JudgeClient | None,
    case: EvalCase,
    turns: Sequence[Turn],
    matcher: CallMatcher,
) -> list[ExpectationOutcome]:
    """Every expectation of the case's scenario, in order."""
    assert case.scenario is not None
    outcomes: list[ExpectationOutcome] = []
    for i, expectation in enumerate(case.scenario.expectations):
        if expectation.tool_expectation is not None:
            outcomes.append(check_tool(i, expectation, turns, matcher))
        else:
            outcomes.append(await check_agent_response(metric, judge, i, expectation, turns))
    return outcomes


# -- the user goal ---------------------------------------------------------------------------

GOAL_LABELS = {1: "user goal satisfied", 0: "user goal not satisfied", -1: "user goal unspecified"}
_GOAL_ORDER = ("0", "-1", "1")  # ties go to the most negative label first
_GOAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "explanation": {"type": "string"},
        "score": {"type": "integer", "enum": [1, 0, -1]},
        "rejected": {"type": "boolean"},
    },
    "required": ["explanation", "score", "rejected"],
    "additionalProperties": False,
}


@dataclass
class GoalVerdict:
    """The voted user-goal verdict: CES score 1 / 0 / -1 (None: no verdict)."""

    score: int | None
    rejected: bool | None
    explanation: str | None
    details: dict[str, Any]


async def judge_user_goal(
    metric: JudgedMetric, judge: JudgeClient, case: EvalCase, turns: Sequence[Turn]
) -> GoalVerdict:
    assert case.scenario is not None
    messages = get_prompt("scenario_user_goal").render(
        scenario=render_scenario(case.scenario), conversation=render_conversation(case, turns)
    )
    replies = await ask(
        judge,
        messages,
        metric.num_samples,
        settings_for(metric.judge_options, _GOAL_SCHEMA),
        parse=lambda text: parse_int_in(
            get_field(parse_json_object(text), "score", "rating"), -1, 1
        ),
    )
    if replies.error is not None:
        return GoalVerdict(None, None, replies.error, {})
    objs = [parse_json_object(text) for text in replies.texts]
    scores = [parse_int_in(get_field(o, "score", "rating"), -1, 1) for o in objs]
    vote = label_vote([None if s is None else str(s) for s in scores], _GOAL_ORDER)
    details = vote_details(vote, len(objs))
    if vote.label is None:
        return GoalVerdict(None, None, no_parse_reason(replies.texts, _GOAL_SCHEMA), details)
    score = int(vote.label)
    agreeing = [o for o, s in zip(objs, scores, strict=True) if s == score]
    rejected = binary_vote([parse_yes_no(get_field(o, "rejected")) for o in agreeing]).label
    explanation = next(
        (
            e
            for o in agreeing
            if isinstance(e := get_field(o, "explanation", "rationale"), str) and e
        ),
        None,
    )
    details.update({"ces_score": score, "label": GOAL_LABELS[score], "goal_rejected": rejected})
    return GoalVerdict(score, rejected, explanation, details)


# -- hallucination ---------------------------------------------------------------------------


async def hallucinated_turns(
    metric: JudgedMetric, judge: JudgeClient, case: EvalCase, turns: Sequence[Turn]
) -> tuple[list[int], list[int]]:
    """(turns judged not justified, turns left without a verdict), 1-based, using the CES
    `hallucination` judge with the metric's judge options."""
    checker = Hallucination(HallucinationOptions(judge_model_options=metric.judge_options))
    result = await checker.judge_case(judge, case, turns, [None] * len(turns))
    bad: list[int] = []
    undecided: list[int] = []
    for i, (turn, score) in enumerate(zip(turns, result.per_invocation, strict=True), 1):
        if score.value == 0.0:
            bad.append(i)
        elif score.value is None and turn.final_response and "ces_score" not in score.details:
            undecided.append(i)
    return bad, undecided
