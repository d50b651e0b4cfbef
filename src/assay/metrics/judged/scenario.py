"""CES scenario metrics: judges of a whole simulated conversation (SPEC §4.4).

Each scores a case whose `scenario` a user simulator played (or a recorded
conversation of one) from the scenario and the actual turns; a case without a scenario
gets no score, saying so. Scores are per conversation, not per turn.

- `scenario_rubrics`: the judge reads the whole conversation against every scenario
  rubric (yes / no each, samples voted, tie = no); the score is the share of rubrics
  met, each rubric reported with its score and explanation (`rubric_outcomes`, as CES's
  `ScenarioRubricOutcome`). Default threshold 1.0: every rubric met.
- `scenario_expectations`: the share of scenario expectations met (tool expectations
  checked deterministically, expected agent responses verbatim or by the judge), each
  reported with its outcome and observed call or response (`expectation_outcomes`).
  Option `arg_match` (default mode `subset`). Tool expectations need no judge.
- `all_expectations_satisfied`: 1 when every expectation is met (also when the
  scenario has none), else 0.
- `user_goal_satisfaction`: the judge scores 1 (satisfied), 0 (not) or -1 (no goal
  stated; reported as no score, the -1 in `ces_score`). Pass/fail follows
  `user_goal_behavior`: SATISFIED passes on 1, REJECTED passes when the agent rejected
  the goal, IGNORED reports the score without a status.
- `task_completed`: 1 when all expectations are met AND no turn hallucinated (the CES
  `hallucination` judge; skipped when its scenario behaviour is DISABLED) AND the user
  goal came out as `user_goal_behavior` asks (IGNORED: not considered); 0 as soon as
  one part fails; no score when a part could not be decided.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from assay.core.cases import EvalCase, Scenario, Turn, UserGoalBehavior
from assay.core.results import MetricResult, Status
from assay.metrics.argmatch import ArgMatch, ArgMode, CallMatcher
from assay.metrics.base import MetricOptions
from assay.metrics.judged.asking import ask, settings_for
from assay.metrics.judged.base import JudgeClient, JudgedMetric, JudgedOptions
from assay.metrics.judged.ces import HallucinationOptions
from assay.metrics.judged.prompts import get_prompt
from assay.metrics.judged.rubrics import (
    parse_rubric_reply,
    render_rubrics,
    rubric_schema,
    vote_rubrics,
)
from assay.metrics.judged.scenario_checks import (
    ExpectationOutcome,
    GoalVerdict,
    check_expectations,
    hallucinated_turns,
    judge_user_goal,
)
from assay.metrics.judged.scenario_view import (
    NO_TURNS,
    NOT_A_SCENARIO,
    render_conversation,
    render_scenario,
)
from assay.metrics.registry import register

SCENARIO_METRIC_NAMES = (
    "scenario_rubrics",
    "scenario_expectations",
    "all_expectations_satisfied",
    "user_goal_satisfaction",
    "task_completed",
    "per_turn_user_simulator_quality_v1",
)


class ScenarioMetric(JudgedMetric, ABC):
    """A judge of one whole scenario conversation; subclasses write `judge_scenario`."""

    score_range: ClassVar[tuple[float, float] | None] = (0.0, 1.0)

    family: ClassVar[str] = "ces"
    needs: ClassVar[frozenset[str]] = frozenset({"judge", "scenario"})
    default_threshold: ClassVar[float | None] = 1.0
    #: metrics with deterministic parts still score what they can without a judge
    needs_judge: ClassVar[bool] = True

    def unscorable(self, case: EvalCase, actual: Sequence[Turn]) -> str | None:
        """Why the case cannot be scored at all (None: score it)."""
        if case.scenario is None:
            return NOT_A_SCENARIO.format(name=self.name, case=case.id)
        return None if actual else NO_TURNS

    def score_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        if self.needs_judge or self.current_judge()[0] is not None:
            return super().score_case(case, actual, expected)
        return asyncio.run(self.ascore_case(case, actual, expected))

    async def ascore_case(
        self, case: EvalCase, actual: Sequence[Turn], expected: Sequence[Turn | None]
    ) -> MetricResult:
        judge, no_judge = self.current_judge()
        if judge is None and self.needs_judge:
            return self.not_evaluated(actual, no_judge)
        reason = self.unscorable(case, actual)
        if reason is not None:
            return self.not_evaluated(actual, reason)
        assert case.scenario is not None
        return await self.judge_scenario(judge, case, case.scenario, actual)

    @abstractmethod
    async def judge_scenario(
        self, judge: JudgeClient | None, case: EvalCase, scenario: Scenario, turns: Sequence[Turn]
    ) -> MetricResult:
        """Score the conversation `turns` of `scenario` (judge None only when not needed)."""


@register
class ScenarioRubrics(ScenarioMetric):
    """The whole conversation against each scenario rubric: share of rubrics met."""

    name: ClassVar[str] = "scenario_rubrics"
    description: ClassVar[str] = "LLM judge: the scenario conversation against each rubric"

    def unscorable(self, case: EvalCase, actual: Sequence[Turn]) -> str | None:
        reason = super().unscorable(case, actual)
        if reason is None and case.scenario is not None and not case.scenario.rubrics:
            if case.rubrics:
                # ADK keeps a conversation scenario's rubrics on the case: its rubric
                # metrics read them from every invocation, by type.
                return (
                    f"the scenario of case {case.id!r} has no rubrics of its own; its "
                    f"{len(case.rubrics)} case rubric(s) are read by ADK's rubric metrics "
                    "(rubric_based_final_response_quality_v1, rubric_based_tool_use_quality_v1)"
                )
            return f"the scenario of case {case.id!r} has no rubrics"
        return reason

    async def judge_scenario(
        self, judge: JudgeClient | None, case: EvalCase, scenario: Scenario, turns: Sequence[Turn]
    ) -> MetricResult:
        assert judge is not None
        rubrics = scenario.rubrics
        messages = get_prompt("scenario_rubrics").render(
            scenario=render_scenario(scenario),
            conversation=render_conversation(case, turns),
            rubrics=render_rubrics(rubrics),
        )
        settings = settings_for(self.judge_options, rubric_schema(rubrics))
        replies = await ask(
            judge,
            messages,
            self.num_samples,
            settings,
            parse=lambda text: parse_rubric_reply(text, rubrics),
        )
        if replies.error is not None:
            return self.make_result(None, [], explanation=replies.error)
        outcomes, unparseable = vote_rubrics(replies.texts, rubrics)
        texts = {r.id: r.text for r in rubrics}
        rubric_outcomes = [
            {"id": o.rubric_id, "rubric": texts[o.rubric_id], "score": o.score,
             "scoreExplanation": o.rationale, "agreement": o.agreement}
            for o in outcomes
        ]  # fmt: skip
        details: dict[str, Any] = {
            "rubric_outcomes": rubric_outcomes,
            "samples": len(replies.texts),
            "unparseable": unparseable,
        }
        decided = [o.score for o in outcomes if o.score is not None]
        if len(decided) < len(outcomes):
            missing = ", ".join(o.rubric_id for o in outcomes if o.score is None)
            return self.make_result(
                None, [], explanation=f"no verdict for rubric(s) {missing}", details=details
            )
        lines = [
            f"{o.rubric_id}: {'met' if o.score else 'not met'}"
            + (f" ({o.rationale})" if o.rationale else "")
            for o in outcomes
        ]
        return self.make_result(
            sum(decided) / len(decided), [], explanation="\n".join(lines), details=details
        )


class ScenarioExpectationsOptions(JudgedOptions):
    """`arg_match`: how an observed tool call must match an expected one (default subset)."""

    arg_match: ArgMatch | None = None

    def matcher(self) -> CallMatcher:
        chosen = self.arg_match or ArgMatch(mode=ArgMode.SUBSET)
        if chosen.mode is None:
            chosen = chosen.model_copy(update={"mode": ArgMode.SUBSET})
        return CallMatcher(chosen)


def _matcher(metric: JudgedMetric) -> CallMatcher:
    opts = metric.options
    return opts.matcher() if isinstance(opts, ScenarioExpectationsOptions) else CallMatcher()


def _expectation_details(outcomes: list[ExpectationOutcome]) -> dict[str, Any]:
    return {"expectation_outcomes": [o.as_dict() for o in outcomes]}


def _expectation_lines(outcomes: list[ExpectationOutcome]) -> str:
    return "\n".join(
        f"expectation {o.index + 1}: {o.outcome or 'undecided'} ({o.explanation})" for o in outcomes
    )


@register
class ScenarioExpectations(ScenarioMetric):
    """Share of the scenario's expectations met (tool calls and agent responses)."""

    name: ClassVar[str] = "scenario_expectations"
    description: ClassVar[str] = "Scenario expectations met: tool calls, agent responses"
    options_model: ClassVar[type[MetricOptions]] = ScenarioExpectationsOptions
    needs_judge: ClassVar[bool] = False

    def unscorable(self, case: EvalCase, actual: Sequence[Turn]) -> str | None:
        reason = super().unscorable(case, actual)
        if reason is None and case.scenario is not None and not case.scenario.expectations:
            return f"the scenario of case {case.id!r} has no expectations"
        return reason

    async def judge_scenario(
        self, judge: JudgeClient | None, case: EvalCase, scenario: Scenario, turns: Sequence[Turn]
    ) -> MetricResult:
        outcomes = await check_expectations(self, judge, case, turns, _matcher(self))
        details = _expectation_details(outcomes)
        explanation = _expectation_lines(outcomes)
        if any(o.outcome is None for o in outcomes):
            return self.make_result(None, [], explanation=explanation, details=details)
        met = sum(1 for o in outcomes if o.outcome == "PASS")
        return self.make_result(met / len(outcomes), [], explanation=explanation, details=details)


@register
class AllExpectationsSatisfied(ScenarioMetric):
    """1 when every scenario expectation is met (or there is none), else 0."""

    name: ClassVar[str] = "all_expectations_satisfied"
    description: ClassVar[str] = "CES: every scenario expectation met"
    options_model: ClassVar[type[MetricOptions]] = ScenarioExpectationsOptions
    needs_judge: ClassVar[bool] = False

    async def judge_scenario(
        self, judge: JudgeClient | None, case: EvalCase, scenario: Scenario, turns: Sequence[Turn]
    ) -> MetricResult:
        outcomes = await check_expectations(self, judge, case, turns, _matcher(self))
        details = _expectation_details(outcomes)
        if not outcomes:
            return self.make_result(1.0, [], explanation="the scenario has no expectations")
        explanation = _expectation_lines(outcomes)
        if any(o.outcome == "FAIL" for o in outcomes):
            return self.make_result(0.0, [], explanation=explanation, details=details)
        if any(o.outcome is None for o in outcomes):
            return self.make_result(None, [], explanation=explanation, details=details)
        return self.make_result(1.0, [], explanation=explanation, details=details)


def goal_met(behavior: UserGoalBehavior, verdict: GoalVerdict) -> bool | None:
    """Whether the goal came out as `behavior` asks (None: the verdict cannot tell)."""
    if behavior is UserGoalBehavior.USER_GOAL_IGNORED:
        return True
    if verdict.score is None or verdict.score == -1:
        return None
    if behavior is UserGoalBehavior.USER_GOAL_REJECTED:
        if verdict.score == 1:
            return False
        return verdict.rejected
    return verdict.score == 1


@register
class UserGoalSatisfaction(ScenarioMetric):
    """Did the conversation satisfy the user's goal? 1, 0, or -1 (unspecified)."""

    name: ClassVar[str] = "user_goal_satisfaction"
    description: ClassVar[str] = "LLM judge: the conversation satisfied the user's goal"

    async def judge_scenario(
        self, judge: JudgeClient | None, case: EvalCase, scenario: Scenario, turns: Sequence[Turn]
    ) -> MetricResult:
        assert judge is not None
        verdict = await judge_user_goal(self, judge, case, turns)
        behavior = scenario.user_goal_behavior
        details = {**verdict.details, "user_goal_behavior": behavior.value}
        if verdict.score is None or verdict.score == -1:
            why = verdict.explanation or "no verdict"
            if verdict.score == -1:
                why = f"user goal unspecified (-1): {why}"
            return self.make_result(None, [], explanation=why, details=details)
        result = self.make_result(
            float(verdict.score), [], explanation=verdict.explanation, details=details
        )
        met = goal_met(behavior, verdict)
        if behavior is UserGoalBehavior.USER_GOAL_IGNORED:
            result.status = None  # reported, never passes or fails the case
        elif met is None:
            result.status = Status.NOT_EVALUATED
        else:
            result.status = Status.PASSED if met else Status.FAILED
        details["outcome"] = None if result.status is None else result.status.value
        return result


class TaskCompletedOptions(ScenarioExpectationsOptions, HallucinationOptions):
    """Expectation matching (`arg_match`) and the CES hallucination behaviours."""


TASK_LABELS = {1: "task completed", 0: "task not completed", -1: "user goal undefined"}


@register
class TaskCompleted(ScenarioMetric):
    """All expectations met, no hallucination, and the user goal outcome asked for."""

    name: ClassVar[str] = "task_completed"
    description: ClassVar[str] = "CES composite: expectations met, no hallucination, goal outcome"
    options_model: ClassVar[type[MetricOptions]] = TaskCompletedOptions

    def _hallucination_enabled(self) -> bool:
        opts = self.options
        if not isinstance(opts, TaskCompletedOptions):
            return True
        chosen = opts.scenario_hallucination_metric_behavior or opts.hallucination_metric_behavior
        return chosen == "ENABLED"

    async def judge_scenario(
        self, judge: JudgeClient | None, case: EvalCase, scenario: Scenario, turns: Sequence[Turn]
    ) -> MetricResult:
        assert judge is not None
        behavior = scenario.user_goal_behavior
        skip_goal = behavior is UserGoalBehavior.USER_GOAL_IGNORED
        # The three parts are independent judge calls: run them together.
        expecting = asyncio.ensure_future(
            check_expectations(self, judge, case, turns, _matcher(self))
        )
        checking = (
            asyncio.ensure_future(hallucinated_turns(self, judge, case, turns))
            if self._hallucination_enabled()
            else None
        )
        goal = None if skip_goal else await judge_user_goal(self, judge, case, turns)
        expectations = await expecting
        hallucination = await checking if checking is not None else None
        parts: dict[str, bool | None] = {}
        lines: list[str] = []
        failed = [o for o in expectations if o.outcome == "FAIL"]
        parts["all_expectations_satisfied"] = (
            False if failed else None if any(o.outcome is None for o in expectations) else True
        )
        lines += [f"expectation {o.index + 1} not met: {o.explanation}" for o in failed]
        details: dict[str, Any] = {
            **_expectation_details(expectations),
            "user_goal_behavior": behavior.value,
        }
        if hallucination is not None:
            bad, undecided = hallucination
            parts["no_hallucination"] = False if bad else None if undecided else True
            details["hallucinated_turns"] = bad
            if bad:
                lines.append(f"turn(s) {', '.join(map(str, bad))} not justified (hallucination)")
        if goal is not None:
            parts["user_goal"] = goal_met(behavior, goal)
            details["user_goal"] = {**goal.details, "explanation": goal.explanation}
            wanted = "rejected" if behavior is UserGoalBehavior.USER_GOAL_REJECTED else "satisfied"
            lines.append(f"user goal {wanted} as asked: {_yes_no(parts['user_goal'])}"
                         + (f" ({goal.explanation})" if goal.explanation else ""))  # fmt: skip
        details["parts"] = parts
        values = list(parts.values())
        if False in values:
            score: int | None = 0
        elif None in values:
            undecided_parts = ", ".join(k for k, v in parts.items() if v is None)
            lines.insert(0, f"could not decide: {undecided_parts}")
            score = -1 if goal is not None and goal.score == -1 else None
        else:
            score = 1
        if score is not None:
            details["ces_score"] = score
            details["label"] = TASK_LABELS[score]
        value = None if score is None or score == -1 else float(score)
        return self.make_result(value, [], explanation="\n".join(lines) or None, details=details)


def _yes_no(value: bool | None) -> str:
    return "undecided" if value is None else "yes" if value else "no"
