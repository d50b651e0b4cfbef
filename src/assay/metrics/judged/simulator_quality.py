"""`per_turn_user_simulator_quality_v1`: did the simulated user follow its scenario?

As ADK's metric of that name (options: ADK's `LlmBackedUserSimulatorCriterion`,
`stop_signal` default `</finished>`):

- the first simulated user message must equal the scenario's `starting_prompt`
  (both stripped), checked without a judge; a scenario without one (CES scenarios) has
  its first message judged like the others;
- every later message is judged valid / invalid against the conversation plan (else
  the task and user facts), the persona and the conversation before it; samples vote,
  a tie is invalid;
- the end is judged too: the stop signal, as if sent after the last turn, must be a
  valid message; when it is not (the conversation should have gone on), the last
  turn counts as failed.

Score = passed turns ÷ judged turns: as in ADK, a turn whose judge replies gave no
verdict counts as not passed. An agent-initiated opening turn (no user text) is not a
simulated message and is skipped. A judge call that failed leaves the case unscored
(ADK's evaluation stops there), naming the turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import ClassVar

from assay.core.cases import EvalCase, Scenario, Turn
from assay.core.results import MetricResult, Score
from assay.metrics.base import MetricOptions
from assay.metrics.judged.adk import UserSimulatorQualityOptions
from assay.metrics.judged.adk_labels import message_validity
from assay.metrics.judged.asking import (
    JUDGE_CALL_FAILED,
    binary_verdict,
    case_details,
    verdict_schema,
)
from assay.metrics.judged.base import JudgeClient
from assay.metrics.judged.context import render_history
from assay.metrics.judged.prompts import get_prompt
from assay.metrics.judged.scenario import ScenarioMetric
from assay.metrics.judged.scenario_view import persona_text, plan_text
from assay.metrics.registry import register

_VALIDITY = ("valid", "invalid")
OPENING = "agent-initiated opening turn: no simulated user message to judge"


@register
class PerTurnUserSimulatorQualityV1(ScenarioMetric):
    """Simulated user turns: the first equals starting_prompt, later ones follow the plan."""

    name: ClassVar[str] = "per_turn_user_simulator_quality_v1"
    description: ClassVar[str] = "LLM judge: fidelity of the simulated user, per turn"
    options_model: ClassVar[type[MetricOptions]] = UserSimulatorQualityOptions
    default_threshold: ClassVar[float | None] = 0.8
    default_num_samples: ClassVar[int] = 5
    family: ClassVar[str] = "adk"

    @property
    def stop_signal(self) -> str:
        opts = self.options
        return opts.stop_signal if isinstance(opts, UserSimulatorQualityOptions) else "</finished>"

    def unscorable(self, case: EvalCase, actual: Sequence[Turn]) -> str | None:
        reason = super().unscorable(case, actual)
        if reason is None and not any(t.user_input.text for t in actual):
            return "the conversation has no simulated user message to judge"
        return reason

    async def _judge_message(
        self,
        judge: JudgeClient,
        scenario: Scenario,
        history: Sequence[Turn],
        message: str,
    ) -> Score:
        messages = get_prompt("user_simulator_turn").render(
            stop_signal=self.stop_signal,
            plan=plan_text(scenario),
            persona=persona_text(scenario.persona) or "(no persona: behave as an ordinary user)",
            history=render_history(history),
            message=message,
        )
        # ADK's own prompt asks for `"is_valid": True/False`; replies to it read as ADK
        # reads them (`adk_labels`), others in assay's layout.
        return await binary_verdict(
            judge, messages, verdict_schema(_VALIDITY), _VALIDITY,
            options=self.judge_options, num_samples=self.num_samples,
            keys=("verdict", "label", "rating"), reader=message_validity, every_sample=True,
        )  # fmt: skip

    async def _judge_turn(
        self, judge: JudgeClient, scenario: Scenario, turns: Sequence[Turn], index: int, first: bool
    ) -> Score:
        text = turns[index].user_input.text
        if not text:
            return Score(None, OPENING)
        if first and scenario.starting_prompt is not None:
            same = text.strip() == scenario.starting_prompt.strip()
            why = "equals the starting prompt" if same else "differs from the starting prompt"
            return Score(1.0 if same else 0.0, f"first user message {why}")
        return await self._judge_message(judge, scenario, turns[:index], text)

    async def judge_scenario(
        self, judge: JudgeClient | None, case: EvalCase, scenario: Scenario, turns: Sequence[Turn]
    ) -> MetricResult:
        assert judge is not None
        first = next(i for i, t in enumerate(turns) if t.user_input.text)
        per = list(
            await asyncio.gather(
                *(
                    self._judge_turn(judge, scenario, turns, i, i == first)
                    for i in range(len(turns))
                ),
                self._judge_message(judge, scenario, turns, self.stop_signal),
            )
        )
        ending = per.pop()
        if ending.value == 0.0:
            last = len(turns) - 1
            per[last] = Score(
                0.0,
                f"the conversation should not have ended after this turn: {ending.explanation}",
                ending.details,
            )
        judged = [s for s in per if s.explanation != OPENING]
        decided = [s.value for s in judged if s.value is not None]
        details = {**case_details(judged), "turns": len(judged), "passed": int(sum(decided))}
        details["ending"] = (
            "valid" if ending.value == 1.0 else "invalid" if ending.value == 0.0 else None
        )
        failed = [
            f"turn {i}: {s.explanation}" if i else f"the end: {s.explanation}"
            for i, s in [(0, ending), *enumerate(per, 1)]
            if s.value is None and (s.explanation or "").startswith(JUDGE_CALL_FAILED)
        ]
        if failed:
            return self.make_result(None, per, explanation="; ".join(failed), details=details)
        if not decided:
            reasons = sorted({s.explanation for s in judged if s.explanation})
            return self.make_result(None, per, explanation="; ".join(reasons), details=details)
        return self.make_result(sum(decided) / len(judged), per, details=details)
