"""Failure analysis: why each failed case failed, classified from the data.

A failed case run is explained by findings, each with one cause: a tool call that is
missing, extra, of the wrong tool, with a wrong argument (which one, both values) or
out of order; a response below its threshold; a judge's verdict; another metric below
its threshold; or the agent's error or timeout. Trajectory findings come from diffing
the expected and actual tool calls of the invocations whose trajectory metric failed,
so "4 failed" becomes "2 wrong arguments to set_temperature.temperature, 1 missing
call to set_device_info, 1 response drift". The terminal, JUnit, the HTML report and
the viewer all read the same `FailureAnalysis`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from assay.core.cases import ToolCall
from assay.core.error_types import ErrorType
from assay.core.results import CaseResult, InvocationResult, MetricResult, Status
from assay.errors import AssayError
from assay.metrics import calldiff
from assay.metrics.calldiff import DiffKind, expected_calls


class Cause(StrEnum):
    """Why a case failed; the values are the labels reports show."""

    WRONG_TOOL = "wrong tool"
    WRONG_ARGUMENT = "wrong argument"
    MISSING_CALL = "missing call"
    EXTRA_CALL = "extra call"
    WRONG_ORDER = "wrong order"
    RESPONSE = "response below threshold"
    JUDGE = "judge verdict"
    METRIC = "metric below threshold"
    AGENT_ERROR = "agent error"
    TIMEOUT = "timeout"


#: the order findings and counts are listed in: tool-level causes first
CAUSE_ORDER = list(Cause)

TRAJECTORY_CAUSES = frozenset(
    {Cause.WRONG_TOOL, Cause.WRONG_ARGUMENT, Cause.MISSING_CALL, Cause.EXTRA_CALL,
     Cause.WRONG_ORDER}
)  # fmt: skip

# Metrics whose verdict is about tool calls, beyond those named "*trajectory*"/"tool_*".
_TOOL_METRICS = frozenset({"parameter_correctness_score", "golden_expectations"})
# Informational tool metrics (counts, not correctness).
_NOT_TOOL_METRICS = frozenset({"tool_call_count"})


@dataclass(frozen=True, slots=True)
class Finding:
    """One reason a case run failed.

    `invocation` is the 0-based turn index (None for case-level causes); `tool` the
    tool concerned; `argument`, `expected` and `actual` the differing argument of a
    wrong-argument finding (for a wrong tool, the two tool names); `metric` the metric
    whose verdict this explains.
    """

    cause: Cause
    text: str
    invocation: int | None = None
    tool: str | None = None
    argument: str | None = None
    expected: Any = None
    actual: Any = None
    metric: str | None = None

    def to_dict(self) -> dict[str, object]:
        data: dict[str, Any] = {"cause": self.cause.value, "text": self.text}
        for key in ("invocation", "tool", "argument", "metric"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        if self.cause in (Cause.WRONG_ARGUMENT, Cause.WRONG_TOOL):
            data["expected"] = self.expected
            data["actual"] = self.actual
        return data


@dataclass(slots=True)
class CaseAnalysis:
    """The findings of one failed (or errored) case run."""

    case_id: str
    eval_set_id: str | None
    run_index: int
    findings: list[Finding]

    @property
    def key(self) -> str:
        """A stable id of the case run: `eval_set/case_id#run` (the HTML report's anchor)."""
        return case_run_key(self.eval_set_id, self.case_id, self.run_index)

    @property
    def causes(self) -> list[Cause]:
        return sorted({f.cause for f in self.findings}, key=CAUSE_ORDER.index)

    def reason(self, *, limit: int = 3) -> str:
        """One line: the first `limit` findings, `; `-joined, and how many more."""
        texts = list(dict.fromkeys(f.text for f in self.findings))
        if not texts:
            return "failed"
        line = "; ".join(texts[:limit])
        if len(texts) > limit:
            line += f"; and {len(texts) - limit} more"
        return line

    def to_dict(self) -> dict[str, object]:
        return {
            "case_id": self.case_id,
            "eval_set_id": self.eval_set_id,
            "run_index": self.run_index,
            "reason": self.reason(),
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass(slots=True)
class FailureAnalysis:
    """Every failed case run's findings, counted per cause and per tool."""

    cases: list[CaseAnalysis] = field(default_factory=list)
    _index: dict[str, CaseAnalysis] | None = field(default=None, repr=False, compare=False)

    def by_cause(self) -> dict[Cause, list[CaseAnalysis]]:
        """The case runs with each cause (a case with two causes is in both), in cause order."""
        found: dict[Cause, list[CaseAnalysis]] = {}
        for cause in CAUSE_ORDER:
            having = [c for c in self.cases if cause in c.causes]
            if having:
                found[cause] = having
        return found

    def by_tool(self) -> dict[str, Counter[Cause]]:
        """Per tool: how many case runs have each tool-level cause for it."""
        counts: dict[str, Counter[Cause]] = {}
        for case in self.cases:
            seen = {(f.tool, f.cause) for f in case.findings if f.tool is not None}
            for tool, cause in seen:
                assert tool is not None
                counts.setdefault(tool, Counter())[cause] += 1
        return dict(sorted(counts.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])))

    def by_argument(self) -> Counter[str]:
        """`tool.argument` -> case runs where that argument was wrong."""
        return Counter(
            f"{tool}.{arg}"
            for case in self.cases
            for tool, arg in {
                (f.tool, f.argument) for f in case.findings if f.cause is Cause.WRONG_ARGUMENT
            }
        )

    def headline(self) -> str:
        """`2 wrong argument (set_temperature.temperature), 1 missing call, ...`."""
        parts = []
        arguments = self.by_argument()
        for cause, cases in self.by_cause().items():
            part = f"{len(cases)} {cause.value}"
            if cause is Cause.WRONG_ARGUMENT and arguments:
                part += " (" + ", ".join(arguments) + ")"
            parts.append(part)
        return ", ".join(parts)

    def for_case(self, case: CaseResult) -> CaseAnalysis | None:
        """The findings of this case run (a dict lookup: reports ask for every case)."""
        if self._index is None or len(self._index) != len(self.cases):
            self._index = {c.key: c for c in self.cases}
        return self._index.get(case_run_key(case.eval_set_id, case.case_id, case.run_index))

    def to_dict(self) -> dict[str, object]:
        return {
            "failed": len(self.cases),
            "by_cause": {c.value: [a.key for a in cases] for c, cases in self.by_cause().items()},
            "by_tool": {
                t: {c.value: n for c, n in cnt.items()} for t, cnt in self.by_tool().items()
            },
            "by_argument": dict(self.by_argument()),
            "cases": [c.to_dict() for c in self.cases],
        }


def case_run_key(eval_set_id: str | None, case_id: str, run_index: int) -> str:
    return f"{eval_set_id or ''}/{case_id}#{run_index + 1}"


# -- metric kinds ---------------------------------------------------------------------


def metric_kind(name: str) -> str:
    """`trajectory`, `judge`, `response` or `other`: which kind of verdict a metric gives."""
    needs: frozenset[str] = frozenset()
    try:
        from assay.metrics.registry import get_metric_class

        needs = get_metric_class(name).needs
    except AssayError:  # a custom or unknown metric: its name says what it is
        needs = frozenset()
    if "judge" in needs:
        return "judge"
    if name not in _NOT_TOOL_METRICS and (
        "trajectory" in name or name.startswith("tool_") or name in _TOOL_METRICS
    ):
        return "trajectory"
    if "response" in needs or "response" in name or "rouge" in name or "bleu" in name:
        return "response"
    return "other"


_CAUSE_OF = {
    DiffKind.WRONG_TOOL: Cause.WRONG_TOOL,
    DiffKind.WRONG_ARGUMENT: Cause.WRONG_ARGUMENT,
    DiffKind.MISSING_CALL: Cause.MISSING_CALL,
    DiffKind.EXTRA_CALL: Cause.EXTRA_CALL,
    DiffKind.WRONG_ORDER: Cause.WRONG_ORDER,
}


def diff_calls(
    expected: Sequence[ToolCall],
    actual: Sequence[ToolCall],
    *,
    invocation: int = 0,
    metric: str | None = None,
) -> list[Finding]:
    """The call differences of one invocation as findings (see `metrics.calldiff`)."""
    return [
        Finding(
            _CAUSE_OF[d.kind],
            d.text,
            invocation=invocation,
            tool=d.tool,
            argument=d.argument,
            expected=d.expected,
            actual=d.actual,
            metric=metric,
        )
        for d in calldiff.diff_calls(expected, actual)
    ]


# -- case analysis --------------------------------------------------------------------


def _failed_invocations(metric: MetricResult, invocations: Sequence[InvocationResult]) -> list[int]:
    """Indexes of the invocations whose score for `metric` fell below its threshold."""
    if not metric.per_invocation or len(metric.per_invocation) != len(invocations):
        return list(range(len(invocations)))
    limit = metric.threshold if metric.threshold is not None else 1.0
    failed = [
        i for i, s in enumerate(metric.per_invocation) if s.value is not None and s.value < limit
    ]
    return failed or list(range(len(invocations)))


def _trajectory_findings(case: CaseResult, metric: MetricResult) -> list[Finding]:
    findings: list[Finding] = []
    for i in _failed_invocations(metric, case.invocations):
        inv = case.invocations[i]
        if inv.expected is None:
            continue
        actual = inv.actual.tool_calls() if inv.actual is not None else []
        findings.extend(
            diff_calls(expected_calls(inv.expected), actual, invocation=i, metric=metric.name)
        )
    return findings


def _score_text(metric: MetricResult) -> str:
    score = "none" if metric.score is None else f"{metric.score:.2f}"
    threshold = "none" if metric.threshold is None else f"{metric.threshold:.2f}"
    return f"{metric.name} {score} < {threshold}"


def _judge_rationale(metric: MetricResult) -> str | None:
    if metric.explanation:
        return metric.explanation
    for score in metric.per_invocation:
        if score.explanation and score.value is not None:
            return score.explanation
    return None


def _clip(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_timeout(case: CaseResult) -> bool:
    error = (case.error or "").lower()
    return "timed out" in error or "timeout" in error


def analyze_case(case: CaseResult) -> CaseAnalysis | None:
    """The findings of a failed or errored case run; None for one that passed.

    A NOT_EVALUATED case only gets findings when its agent failed (error or timeout):
    a missing score is not a failure.
    """
    findings: list[Finding] = []
    if case.failure or (case.error and case.error_type != ErrorType.METRIC_CALCULATION_FAILURE):
        cause = Cause.TIMEOUT if _is_timeout(case) else Cause.AGENT_ERROR
        findings.append(Finding(cause, f"{cause.value}: {_clip(case.error or 'no reply')}"))
    if case.status is Status.FAILED:
        trajectory_failed = False
        for metric in case.metrics.values():
            if metric.status is not Status.FAILED:
                continue
            kind = metric_kind(metric.name)
            if kind == "trajectory":
                found = _trajectory_findings(case, metric)
                # Several trajectory metrics fail on the same calls: report the diff once.
                if found and not trajectory_failed:
                    findings.extend(found)
                trajectory_failed = trajectory_failed or bool(found)
                if not found and not trajectory_failed:
                    findings.append(Finding(Cause.METRIC, _score_text(metric), metric=metric.name))
            elif kind == "judge":
                why = _judge_rationale(metric)
                text = f"judge verdict: {_score_text(metric)}" + (f" ({_clip(why)})" if why else "")
                findings.append(Finding(Cause.JUDGE, text, metric=metric.name))
            elif kind == "response":
                findings.append(
                    Finding(Cause.RESPONSE, f"response drift: {_score_text(metric)}",
                            metric=metric.name)
                )  # fmt: skip
            else:
                findings.append(Finding(Cause.METRIC, _score_text(metric), metric=metric.name))
    if not findings:
        return None
    return CaseAnalysis(case.case_id, case.eval_set_id, case.run_index, _dedupe(findings))


def _dedupe(findings: Iterable[Finding]) -> list[Finding]:
    seen: set[tuple[Cause, str]] = set()
    kept = []
    for f in findings:
        if (f.cause, f.text) not in seen:
            seen.add((f.cause, f.text))
            kept.append(f)
    return kept


def analyze(cases: Iterable[CaseResult]) -> FailureAnalysis:
    """The failure analysis of a run's case runs (pass `EvalResult.cases`)."""
    found = [a for a in (analyze_case(c) for c in cases) if a is not None]
    return FailureAnalysis(found)
