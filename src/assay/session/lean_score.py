"""Scoring a plain row (`session.lean_rows`): every metric through its own code.

`LeanPlan.of` makes a plan when every metric of the run is one the lean path knows —
the trajectory metrics (scored on the row's call lists with
`TrajectoryMetric.score_call_lists`, the call diff explaining an imperfect one computed
once per row and matcher, as `case_memo` shares it within a case), `response_match_score`
(`ResponseMatchScore.score_texts`) and ADK's four informational efficiency metrics
(whose result on a plain row depends only on the number of calls: each is scored by the
metric itself once per call count, on a probe case of that shape). Any other metric
sends the whole run the ordinary way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from assay.metrics.base import Metric
from assay.metrics.calldiff import explain_calls
from assay.metrics.efficiency import (
    InferenceCallCountV1,
    InvocationDurationV1,
    TokenUsageV1,
    ToolCallCountV1,
)
from assay.metrics.lexical import ResponseMatchScore
from assay.metrics.trajectory import (
    MatchType,
    ToolTrajectoryAvgScore,
    TrajectoryAnyOrderMatch,
    TrajectoryExactMatch,
    TrajectoryInOrderMatch,
    TrajectoryMetric,
    TrajectoryPrecision,
    TrajectoryRecall,
    TrajectorySingleToolUse,
    match_trajectory,
)
from assay.model.core import EvalCase, Step, ToolCall, Turn
from assay.model.results import MetricResult, Score
from assay.model.verdict import case_status
from assay.session.lean_rows import EncodedMetric, LeanRow

if TYPE_CHECKING:
    from collections.abc import Callable

_TRAJECTORY = (
    TrajectoryExactMatch,
    TrajectoryInOrderMatch,
    TrajectoryAnyOrderMatch,
    TrajectoryPrecision,
    TrajectoryRecall,
    TrajectorySingleToolUse,
    ToolTrajectoryAvgScore,
)
_BY_CALL_COUNT = (ToolCallCountV1, InferenceCallCountV1, TokenUsageV1, InvocationDurationV1)
# Encoded results kept for reuse (a few KB each): a few tens of MB at most.
_MEMO_SIZE = 20_000
# A trajectory metric's score when the calls match pairwise (`perfect_when_exact`):
# only read, never changed (the encoded results are built from it once).
_PERFECT = Score(1.0)


def _probe(metric: Metric, calls: int) -> MetricResult:
    """`metric` scored by itself on a plain row whose agent made `calls` calls."""
    steps = [Step(tool_call=ToolCall(name="probe")) for _ in range(calls)]
    turn = Turn(steps=steps, final_response="")
    case = EvalCase(id="probe", actual=[turn], reference=[Turn()])
    return metric.score_case(case, [turn], [case.reference[0] if case.reference else None])


def _imperfect(
    trajectory: TrajectoryMetric,
    predicted: list[ToolCall],
    expected: list[ToolCall],
    matches: Callable[..., bool],
    explained: dict[Callable[..., bool], str | None],
) -> Score:
    """A trajectory metric's score of calls that do not match pairwise."""

    def explain() -> str | None:
        # One call diff per matcher, shared by the row's metrics (as `case_memo` shares
        # it within a case).
        if matches not in explained:
            explained[matches] = explain_calls(expected, predicted, matches)
        return explained[matches]

    return trajectory.score_call_lists(predicted, expected, explain)


class LeanPlan:
    """How the lean path scores a run's metrics (see the module docstring)."""

    def __init__(self, metrics: Sequence[Metric]) -> None:
        self.metrics = list(metrics)
        self._memo: dict[tuple[int, float | None, str | None], EncodedMetric] = {}
        # The by-call-count metrics' results for a number of calls, by metric index
        # (one lookup per row for all of them).
        self._by_count: dict[int, dict[int, EncodedMetric]] = {}
        # Per metric: its kind (0 trajectory, 1 perfect when exact, 2 ROUGE, 3 by call
        # count), so each row's loop does not ask isinstance of every metric.
        self._kinds: list[tuple[int, Metric, int]] = []
        for i, metric in enumerate(self.metrics):
            if isinstance(metric, TrajectoryMetric):
                kind = 1 if metric.perfect_when_exact else 0
            else:
                kind = 2 if isinstance(metric, ResponseMatchScore) else 3
            self._kinds.append((i, metric, kind))

    @classmethod
    def of(cls, metrics: Sequence[Metric]) -> LeanPlan | None:
        """A plan when every metric is one the lean path scores (and no two share a
        name), else None."""
        if len({m.name for m in metrics}) != len(metrics):
            return None
        known = (*_TRAJECTORY, *_BY_CALL_COUNT, ResponseMatchScore)
        if not metrics or any(type(m) not in known for m in metrics):
            return None
        return cls(metrics)

    def by_call_count(self, calls: int) -> dict[int, EncodedMetric]:
        """The by-call-count metrics' results on a row of `calls` calls, by metric
        index (each scored by the metric itself once per call count)."""
        by_count = self._by_count.get(calls)
        if by_count is None:
            by_count = self._by_count[calls] = {
                i: EncodedMetric(metric, _probe(metric, calls))
                for i, metric, kind in self._kinds
                if kind == 3
            }
        return by_count

    def encoded(self, i: int, value: float | None, explanation: str | None) -> EncodedMetric:
        """Metric `i`'s encoded result of one invocation scored `value` with
        `explanation`, built once per distinct pair (the same call differences recur
        across rows)."""
        key = (i, value, explanation)
        cached = self._memo.get(key)
        if cached is None:
            metric = self.metrics[i]
            cached = self._memo[key] = EncodedMetric(
                metric, metric.result_from_invocations([Score(value, explanation)])
            )
        return cached

    def score(self, lean: LeanRow) -> None:
        """Score every metric on `lean` (filling `metrics` and `status`)."""
        predicted = cast(list[ToolCall], lean.predicted)  # read as ToolCalls: name, args
        expected = cast(list[ToolCall], lean.reference_calls)
        explained: dict[Callable[..., bool], str | None] = {}
        exact: dict[Callable[..., bool], bool] = {}
        memo = self._memo
        if len(memo) > _MEMO_SIZE:
            memo.clear()  # bounded: results of a run repeat, but floats and texts need not
        if len(self._by_count) > _MEMO_SIZE:
            self._by_count.clear()
        encoded = lean.metrics
        statuses = []
        key: tuple[int, float | None, str | None]
        by_count = self._by_count.get(len(predicted))
        if by_count is None:
            by_count = self.by_call_count(len(predicted))
        for i, metric, kind in self._kinds:
            if kind == 3:
                one = by_count[i]
                encoded.append(one)
                statuses.append(one.result.status)
                continue
            if kind == 2:
                score = cast(ResponseMatchScore, metric).score_texts(
                    lean.response, lean.reference, None
                )
            else:
                trajectory = cast(TrajectoryMetric, metric)
                matches = trajectory.matcher.matches
                same = False
                if kind == 1:
                    found = exact.get(matches)
                    if found is None:
                        found = exact[matches] = match_trajectory(
                            predicted, expected, MatchType.EXACT, trajectory.matcher
                        )
                    same = found
                score = (
                    _PERFECT
                    if same
                    else _imperfect(trajectory, predicted, expected, matches, explained)
                )
            if not score.details:
                # The result is the score's and its explanation's alone: encoded once per
                # distinct pair (the same call differences recur across rows).
                key = (i, score.value, score.explanation)
                cached = memo.get(key)
                if cached is None:
                    cached = memo[key] = EncodedMetric(
                        metric, metric.result_from_invocations([score])
                    )
                one = cached
            else:
                one = EncodedMetric(metric, metric.result_from_invocations([score]))
            encoded.append(one)
            statuses.append(one.result.status)
        # No lean metric sets an error type (one that raises sends the row the ordinary
        # way), so the case's status is its metrics'.
        lean.status = case_status(statuses, None)
