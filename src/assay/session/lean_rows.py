"""The lean row path: a plain recorded Vertex row scored straight from its cells.

Most rows of a large recorded run have one shape — `id`, `prompt`, `response`,
`reference` and two trajectories of `{tool_name, tool_input}` calls — and are scored by
the same few metrics. Building the case (pydantic turns, steps, calls), a `CaseResult`
with its invocations, and then walking it three times for the store, the JSON report
and the rows costs most of a streamed run's CPU. For such a row `LeanPlan.score` reads
the cells, scores every metric through the metric's own code on the row's call lists
(`TrajectoryMetric.score_call_lists`, `ResponseMatchScore.score_texts`) and returns a
`LeanRow` — the row's texts, calls and `MetricResult`s — which `session.lean_encode`
turns into the store document, the ADK-shaped report case and the report row, byte for
byte what the ordinary path writes.

A plan exists only when every metric of the run is one the lean path knows
(`LeanPlan.of`), and a row takes it only when it has exactly the plain shape
(`LeanPlan.score` returns None otherwise): any other row, and every row of any other
run, takes the ordinary path, row by row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

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
    ToolTrajectoryAvgScore,
    TrajectoryAnyOrderMatch,
    TrajectoryExactMatch,
    TrajectoryInOrderMatch,
    TrajectoryMetric,
    TrajectoryPrecision,
    TrajectoryRecall,
    TrajectorySingleToolUse,
)
from assay.model.core import EvalCase, Step, ToolCall, Turn
from assay.model.results import MetricResult, Status
from assay.model.verdict import case_status

if TYPE_CHECKING:
    from assay.model.results import Score

# The columns of a plain row: any other column (aliases, latency, rubrics, metadata)
# takes the ordinary path.
_PLAIN = frozenset(
    {"id", "prompt", "response", "reference", "predicted_trajectory", "reference_trajectory"}
)
_CALL_KEYS = frozenset({"tool_name", "tool_input"})
_TRAJECTORY = (
    TrajectoryExactMatch,
    TrajectoryInOrderMatch,
    TrajectoryAnyOrderMatch,
    TrajectoryPrecision,
    TrajectoryRecall,
    TrajectorySingleToolUse,
    ToolTrajectoryAvgScore,
)
# Informational metrics whose result on a plain row depends only on how many calls the
# agent made (no usage, timing or model-call counts are recorded in a plain row): each
# is scored once per call count, by the metric itself, on a probe case of that shape.
_BY_CALL_COUNT = (ToolCallCountV1, InferenceCallCountV1, TokenUsageV1, InvocationDurationV1)


class LeanCall:
    """A tool call as the call matchers and call diffs read it: `name` and `args` (and
    `id`, always None in a plain row). Built per call of every row, so no pydantic."""

    __slots__ = ("args", "name")
    id = None

    def __init__(self, name: str, args: dict[str, Any]) -> None:
        self.name = name
        self.args = args


class LeanRow:
    """A plain row, scored: its cells and its metrics' results, in metric order."""

    __slots__ = (
        "case_id",
        "metrics",
        "predicted",
        "prompt",
        "reference",
        "reference_calls",
        "response",
        "status",
    )

    def __init__(
        self,
        case_id: str,
        prompt: str | None,
        response: str | None,
        reference: str | None,
        predicted: list[LeanCall],
        reference_calls: list[LeanCall],
    ) -> None:
        self.case_id = case_id
        self.prompt = prompt
        self.response = response
        self.reference = reference
        self.predicted = predicted
        self.reference_calls = reference_calls
        self.metrics: dict[str, MetricResult] = {}
        self.status = Status.NOT_EVALUATED


def _calls(value: Any, names: dict[str, str]) -> list[LeanCall] | None:
    """The calls of a trajectory cell of the plain shape, else None."""
    if type(value) is not list:
        return None
    calls = []
    for item in value:
        if type(item) is not dict or not item.keys() <= _CALL_KEYS:
            return None
        name = item.get("tool_name")
        if type(name) is not str:
            return None
        args = item.get("tool_input")
        if args is None:
            args = {}
        elif type(args) is not dict:
            return None
        calls.append(LeanCall(names.setdefault(name, name), args))
    return calls


def plain_row(row: Any, index: int, names: dict[str, str]) -> LeanRow | None:
    """`row` (parsed) as an unscored `LeanRow` when it has the plain shape, else None.

    The case id is the one `formats.vertex` gives (`row-{index}` without an id); the row
    must have both a recorded and a reference turn, as a row scored on its own does.
    """
    if type(row) is not dict or not row.keys() <= _PLAIN:
        return None
    get = row.get
    raw_id = get("id")
    if type(raw_id) is str:
        case_id = raw_id
    elif raw_id is None:
        case_id = f"row-{index}"
    elif type(raw_id) is int:
        case_id = str(raw_id)
    else:
        return None
    prompt, response, reference = get("prompt"), get("response"), get("reference")
    for text in (prompt, response, reference):
        if text is not None and type(text) is not str:
            return None
    pred_raw, ref_raw = get("predicted_trajectory"), get("reference_trajectory")
    if (response is None and pred_raw is None) or (reference is None and ref_raw is None):
        return None
    predicted = _calls(pred_raw, names) if pred_raw is not None else []
    reference_calls = _calls(ref_raw, names) if ref_raw is not None else []
    if predicted is None or reference_calls is None:
        return None
    return LeanRow(case_id, prompt, response, reference, predicted, reference_calls)


def _probe(metric: Metric, calls: int) -> MetricResult:
    """`metric` scored by itself on a plain row whose agent made `calls` calls."""
    steps = [Step(tool_call=ToolCall(name="probe")) for _ in range(calls)]
    turn = Turn(steps=steps, final_response="")
    case = EvalCase(id="probe", actual=[turn], reference=[Turn()])
    return metric.score_case(case, [turn], [case.reference[0] if case.reference else None])


class LeanPlan:
    """How the lean path scores a run's metrics (see the module docstring)."""

    def __init__(self, metrics: Sequence[Metric]) -> None:
        self.metrics = list(metrics)
        self._by_count: dict[tuple[int, int], MetricResult] = {}

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

    def score(self, lean: LeanRow) -> None:
        """Score every metric on `lean` (filling `metrics` and `status`)."""
        predicted = cast(list[ToolCall], lean.predicted)  # read as ToolCalls: name, args
        expected = cast(list[ToolCall], lean.reference_calls)
        explained: dict[Callable[..., bool], str | None] = {}
        results = lean.metrics
        for i, metric in enumerate(self.metrics):
            if isinstance(metric, TrajectoryMetric):
                matches = metric.matcher.matches

                def explain(matches: Callable[..., bool] = matches) -> str | None:
                    # One call diff per matcher, shared by the row's metrics (as
                    # `case_memo` shares it within a case).
                    if matches not in explained:
                        explained[matches] = explain_calls(expected, predicted, matches)
                    return explained[matches]

                score: Score = metric.score_call_lists(predicted, expected, explain)
                results[metric.name] = metric.result_from_invocations([score])
            elif isinstance(metric, ResponseMatchScore):
                score = metric.score_texts(lean.response, lean.reference, None)
                results[metric.name] = metric.result_from_invocations([score])
            else:
                key = (i, len(predicted))
                found = self._by_count.get(key)
                if found is None:
                    found = self._by_count[key] = _probe(metric, len(predicted))
                results[metric.name] = found
        # No lean metric sets an error type (one that raises sends the row the ordinary
        # way), so the case's status is its metrics'.
        lean.status = case_status([r.status for r in results.values()], None)
