"""Which metric of a run the row kernel computes, and the Python scoring of the others.

A run's metrics are scored on a plain row (`rows.kernel`) one of two ways, metric by
metric, never run by run:

- **In the kernel** (`KernelKind` other than `PYTHON`): the trajectory metrics whose
  call matcher compares calls exactly or by name (the kernel's own comparison table),
  `response_match_score` (ROUGE-1 in C) and ADK's four informational efficiency
  metrics (whose result on a plain row depends only on its number of calls).
- **By the metric's own Python** (`PYTHON`): any other metric (a custom `Metric`
  subclass, a judged metric's deterministic cousin, a trajectory metric with
  per-argument rules, ...). The kernel hands such a row to `RowPlan.python_results`,
  which builds the row's case the way the reference path builds it
  (`formats.vertex.case_of_row`) and scores those metrics the way it scores them
  (`engine.scoring.safe_score`, in one call-diff scope); the kernel then writes their
  results with its own.

The ordinary metrics are the reference: the kernel writes byte for byte what the
reference path writes (tests/rows/test_kernel.py). This module is plain Python (never
compiled) so a run's plan can be read, tested and explained without the kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import TYPE_CHECKING

from assay.core.cases import EvalCase, Step, ToolCall, Turn
from assay.engine.scoring import aligned_expected, safe_score
from assay.errors import InputError
from assay.formats.vertex import case_of_row
from assay.metrics.argmatch import CallMatcher
from assay.metrics.call_equal import match_exact, match_name
from assay.metrics.case_memo import close_scope, open_scope
from assay.metrics.efficiency import (
    InferenceCallCountV1,
    InvocationDurationV1,
    TokenUsageV1,
    ToolCallCountV1,
)
from assay.metrics.lexical import ResponseMatchScore
from assay.metrics.trajectory import (
    _ALGORITHMS,
    MatchType,
    ToolTrajectoryAvgScore,
    TrajectoryAnyOrderMatch,
    TrajectoryExactMatch,
    TrajectoryInOrderMatch,
    TrajectoryMetric,
    TrajectoryPrecision,
    TrajectoryRecall,
    TrajectorySingleToolUse,
)

if TYPE_CHECKING:
    from assay.core.results import MetricResult
    from assay.metrics.base import Metric

MAX_METRICS = 64
"""The most metrics a run may have to take the kernel (its per-metric tables)."""


class KernelKind(IntEnum):
    """How a metric is scored on a plain row (the kernel's `K_*` numbers)."""

    PYTHON = 0
    EXACT = 1
    IN_ORDER = 2
    ANY_ORDER = 3
    PRECISION = 4
    RECALL = 5
    SINGLE = 6
    ROUGE = 7
    BY_COUNT = 8


_TRAJECTORY: dict[type, KernelKind] = {
    TrajectoryExactMatch: KernelKind.EXACT,
    TrajectoryInOrderMatch: KernelKind.IN_ORDER,
    TrajectoryAnyOrderMatch: KernelKind.ANY_ORDER,
    TrajectoryPrecision: KernelKind.PRECISION,
    TrajectoryRecall: KernelKind.RECALL,
    TrajectorySingleToolUse: KernelKind.SINGLE,
}
_AVG_SCORE = {
    MatchType.EXACT: KernelKind.EXACT,
    MatchType.IN_ORDER: KernelKind.IN_ORDER,
    MatchType.ANY_ORDER: KernelKind.ANY_ORDER,
}
_BY_CALL_COUNT = (ToolCallCountV1, InferenceCallCountV1, TokenUsageV1, InvocationDurationV1)
_MAXIMUM_MATCHING = (KernelKind.ANY_ORDER, KernelKind.PRECISION, KernelKind.RECALL)


def _trajectory_kind(metric: TrajectoryMetric) -> KernelKind:
    """A trajectory metric's kind in the kernel, or PYTHON (a matcher it does not
    implement: per-argument rules, or a non-equivalence under a maximum matching)."""
    if type(metric) is ToolTrajectoryAvgScore:
        kind = next((k for m, k in _AVG_SCORE.items() if metric.check is _ALGORITHMS[m]), None)
        if kind is None:
            return KernelKind.PYTHON
    else:
        kind = _TRAJECTORY.get(type(metric), KernelKind.PYTHON)
    matcher = metric.matcher
    if kind is KernelKind.PYTHON or type(matcher) is not CallMatcher:
        return KernelKind.PYTHON
    if matcher.matches is not match_exact and matcher.matches is not match_name:
        return KernelKind.PYTHON
    if not matcher.equivalence and kind in _MAXIMUM_MATCHING:
        return KernelKind.PYTHON
    return kind


def kernel_kind(metric: Metric) -> KernelKind:
    """How the kernel scores `metric` (`PYTHON`: the metric's own code, on the row's
    case)."""
    if isinstance(metric, TrajectoryMetric):
        return _trajectory_kind(metric)
    if type(metric) is ResponseMatchScore:
        return KernelKind.ROUGE
    if type(metric) in _BY_CALL_COUNT:
        return KernelKind.BY_COUNT
    return KernelKind.PYTHON


class RowPlan:
    """A run's metrics, each with its kind (see the module docstring)."""

    def __init__(self, metrics: Sequence[Metric]) -> None:
        self.metrics = tuple(metrics)
        self.kinds = tuple(kernel_kind(m) for m in self.metrics)
        self.python = tuple(i for i, kind in enumerate(self.kinds) if kind is KernelKind.PYTHON)
        self._python_metrics = [self.metrics[i] for i in self.python]

    @classmethod
    def of(cls, metrics: Sequence[Metric]) -> RowPlan | None:
        """The plan of `metrics`, or None when the kernel cannot take the run at all: no
        metric, two metrics of one name (the reference keeps the last), more than
        `MAX_METRICS`."""
        if not metrics or len(metrics) > MAX_METRICS:
            return None
        if len({m.name for m in metrics}) != len(metrics):
            return None
        return cls(metrics)

    @property
    def in_kernel(self) -> list[str]:
        """The names of the metrics the kernel computes."""
        return [m.name for m, k in zip(self.metrics, self.kinds, strict=True) if k]

    @property
    def in_python(self) -> list[str]:
        """The names of the metrics scored by their own Python on the kernel's rows."""
        return [m.name for m in self._python_metrics]

    def python_results(self, row: dict[str, object], index: int) -> list[MetricResult] | None:
        """The results of the `PYTHON` metrics (in `python`'s order) on the plain row
        `row` (parsed; row `index` of its file), scored as the reference path scores
        them; None when the kernel must leave the row to the reference path: the row is
        not one it reads as a single turn, or a metric could not score it (its result
        carries an error type, which the reference path reports)."""
        try:
            case = case_of_row(index, row, None, {})
        except InputError:
            return None  # the reference path reads it again, and says where it is wrong
        actual = case.actual
        if actual is None or len(actual) != 1:
            return None
        expected = aligned_expected(case, actual)
        scope = open_scope()
        try:
            results = [safe_score(m, case, actual, expected) for m in self._python_metrics]
        finally:
            close_scope(scope)
        for result in results:
            if result.error_type is not None or len(result.per_invocation) != 1:
                return None
        return results

    @staticmethod
    def probe(metric: Metric, calls: int) -> MetricResult:
        """A by-call-count metric scored by itself on a plain row whose agent made
        `calls` calls (its result on every such row)."""
        steps = [Step(tool_call=ToolCall(name="probe")) for _ in range(calls)]
        turn = Turn(steps=steps, final_response="")
        case = EvalCase(id="probe", actual=[turn], reference=[Turn()])
        return metric.score_case(case, [turn], [case.reference[0] if case.reference else None])


__all__ = ["MAX_METRICS", "KernelKind", "RowPlan", "kernel_kind"]
