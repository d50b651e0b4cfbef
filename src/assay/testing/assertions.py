"""`assert_eval`: an evaluation as one assertion in a hand-written test.

The failure message is meant to be read in a CI log: for every case that did not pass,
each metric that failed with its score against its threshold (or why it has no score),
then, for the first turn below the threshold, the expected and actual tool calls and
responses side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from assay.core.cases import Turn
from assay.core.results import CaseResult, EvalResult, InvocationResult, MetricResult, Status
from assay.report.analysis import analyze_case

if TYPE_CHECKING:
    from assay.api_inputs import AgentInput, ConfigInput, Dataset, Metrics

_SHOWN_CASES = 20  # a message that lists a thousand failures helps nobody


class EvalFailure(AssertionError):
    """An evaluation did not pass; `result` holds every score."""

    def __init__(self, message: str, result: EvalResult) -> None:
        super().__init__(message)
        self.result = result


def tool_calls_text(turn: Turn | None) -> str:
    """`name(arg=value, ...)` for each tool call of `turn`, comma-separated."""
    if turn is None:
        return "(none)"
    calls = [
        f"{c.name}({', '.join(f'{k}={v!r}' for k, v in (c.args or {}).items())})"
        for c in turn.tool_calls()
    ]
    return ", ".join(calls) if calls else "(none)"


def _score_text(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if value == value else "nan"


def _metric_line(metric: MetricResult) -> str:
    if metric.score is None:
        return f"  {metric.name}: not evaluated ({metric.explanation or 'no score'})"
    line = f"  {metric.name}: {_score_text(metric.score)} < threshold {metric.threshold}"
    if metric.explanation:
        line += f" ({metric.explanation})"
    return line


def _below(case: CaseResult, metric: MetricResult) -> dict[int, float]:
    """The turns (0-based) whose score of `metric` is below its threshold, with the score."""
    if metric.threshold is None:
        return {}
    found: dict[int, float] = {}
    for inv in case.invocations:
        score = inv.scores.get(metric.name)
        if score is None and len(metric.per_invocation) == len(case.invocations):
            score = metric.per_invocation[inv.index]
        if score is not None and score.value is not None and score.value < metric.threshold:
            found[inv.index] = score.value
    return found


def _turn_lines(inv: InvocationResult, scores: list[str]) -> list[str]:
    """Expected vs actual of one turn: tool calls and responses."""
    shown = inv.expected or inv.actual
    prompt = shown.user_input.text if shown is not None else None
    lines = [f"  turn {inv.index + 1} {prompt!r}: {', '.join(scores)}"]
    if inv.expected is not None:
        lines.append(f"    expected tool calls: {tool_calls_text(inv.expected)}")
    lines.append(f"    actual tool calls:   {tool_calls_text(inv.actual)}")
    if inv.expected is not None:
        lines.append(f"    expected response: {inv.expected.final_response!r}")
    actual = inv.actual.final_response if inv.actual is not None else None
    lines.append(f"    actual response:   {actual!r}")
    return lines


def describe_case(case: CaseResult) -> list[str]:
    """The lines that say why one case run did not pass: each failed metric, then each
    turn that scored below a threshold with its expected and actual calls and responses."""
    where = f" in {case.eval_set_id}" if case.eval_set_id else ""
    run = f" (run {case.run_index + 1})" if case.run_index else ""
    lines = [f"case {case.case_id}{where}{run}: {case.status.value}"]
    analysis = analyze_case(case)
    if analysis is not None:
        lines.append(f"  why: {analysis.reason()}")
    turns: dict[int, list[str]] = {}
    for metric in case.metrics.values():
        if metric.status in (Status.FAILED, Status.NOT_EVALUATED):
            lines.append(_metric_line(metric))
        if metric.status is Status.FAILED:
            for index, value in _below(case, metric).items():
                turns.setdefault(index, []).append(f"{metric.name} {_score_text(value)}")
    for inv in case.invocations:
        if inv.index in turns:
            lines += _turn_lines(inv, turns[inv.index])
    return lines


def describe_failures(cases: Sequence[CaseResult]) -> str:
    """Every case that did not pass, as readable lines (the first few in full)."""
    failing = [c for c in cases if c.status is not Status.PASSED]
    lines: list[str] = []
    for case in failing[:_SHOWN_CASES]:
        lines += describe_case(case)
    if len(failing) > _SHOWN_CASES:
        lines.append(f"... and {len(failing) - _SHOWN_CASES} more cases that did not pass")
    return "\n".join(lines)


def check_result(result: EvalResult, *, count: bool = True) -> EvalResult:
    """`result` if every case passed; else raise `EvalFailure` saying what failed.

    `count`: start the message with how many case runs did not pass.
    """
    if result.cases and result.status is Status.PASSED:
        return result
    if not result.cases:
        raise EvalFailure("no case was evaluated: the data held no cases", result)
    failing = sum(1 for c in result.cases if c.status is not Status.PASSED)
    header = f"{failing} of {len(result.cases)} case runs did not pass\n" if count else ""
    raise EvalFailure(header + describe_failures(result.cases), result)


def assert_eval(
    dataset: Dataset,
    metrics: Metrics = None,
    agent: AgentInput = None,
    config: ConfigInput = None,
    **options: Any,
) -> EvalResult:
    """Evaluate like `assay.evaluate(...)` and fail the test unless every case passed.

    Takes `evaluate`'s arguments (a file path, `EvalSet`, rows or DataFrame; metric
    names or objects; an agent or "module:attr"; a config). The run is not stored
    unless `store=` says so. Returns the `EvalResult` when every case passed; raises
    `EvalFailure` (an `AssertionError`) naming each failed metric, its score and
    threshold, and the expected and actual tool calls and responses otherwise.
    """
    from assay.api import evaluate

    options.setdefault("store", False)
    result = evaluate(dataset, metrics, agent, config, **options)
    __tracebackhide__ = True  # pytest shows the message, not assay's frames
    return check_result(result)
