"""ADK `AgentEvaluator`'s verdict over assay's case results: which criterion failed, by how much.

ADK judges each eval case per metric: the mean of the metric's per-invocation scores over
all runs of the case, against the metric's threshold (higher is better unless the
metric's own statuses say otherwise); a metric with no score is "not evaluated", an
informational one never fails. The messages keep ADK's wording so a suite that switches
import reads the same, and add what ADK leaves to its printed tables: the expected and
actual tool calls and responses of the first invocation that missed.
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.core.cases import Turn
from assay.core.results import CaseResult, Status

_INFORMATIONAL = 4  # ADK's EvalStatus.INFORMATIONAL


@dataclass(slots=True)
class InvocationScore:
    """One metric's score on one invocation of one run, with the turns it judged."""

    score: float | None
    threshold: float | None
    status: int
    actual: Turn | None
    expected: Turn | None


@dataclass(slots=True)
class MetricVerdict:
    """One metric over every run of one case."""

    name: str
    threshold: float | None
    score: float | None
    status: Status | None  # None: informational
    invocations: list[InvocationScore] = field(default_factory=list)


def _invocation_scores(cases: Sequence[CaseResult]) -> dict[str, list[InvocationScore]]:
    by_metric: dict[str, list[InvocationScore]] = {}
    for case in cases:
        for metric in case.metrics.values():
            entries = by_metric.setdefault(metric.name, [])
            informational = metric.status is None
            scores = [inv.scores.get(metric.name) for inv in case.invocations]
            if not any(s is not None for s in scores) and len(metric.per_invocation) == len(
                case.invocations
            ):
                scores = list(metric.per_invocation)
            if not any(s is not None for s in scores):
                # A case-level metric (a scenario's, say): one entry for the whole run.
                last = case.invocations[-1] if case.invocations else None
                status = _code(metric.score, metric.threshold, informational)
                entries.append(
                    InvocationScore(
                        metric.score,
                        metric.threshold,
                        status,
                        last.actual if last else None,
                        last.expected if last else None,
                    )
                )
                continue
            for inv, score in zip(case.invocations, scores, strict=True):
                if score is None:
                    continue
                status = _code(score.value, metric.threshold, informational)
                entries.append(
                    InvocationScore(score.value, metric.threshold, status, inv.actual, inv.expected)
                )
    return by_metric


def _code(score: float | None, threshold: float | None, informational: bool) -> int:
    if informational:
        return _INFORMATIONAL
    if score is None:
        return Status.NOT_EVALUATED.adk_code
    if threshold is None or score >= threshold:
        return Status.PASSED.adk_code
    return Status.FAILED.adk_code


def verdicts(cases: Sequence[CaseResult]) -> list[MetricVerdict]:
    """Per metric, ADK's overall verdict over the runs of one case."""
    out: list[MetricVerdict] = []
    for name, entries in _invocation_scores(cases).items():
        threshold = entries[0].threshold if entries else None
        scored = [e.score for e in entries if e.score is not None]
        overall = statistics.fmean(scored) if scored else None
        if all(e.status == _INFORMATIONAL for e in entries) or threshold is None:
            out.append(MetricVerdict(name, threshold, overall, None, entries))
            continue
        if overall is None:
            status = Status.NOT_EVALUATED
        else:
            status = Status.PASSED if overall >= threshold else Status.FAILED
        out.append(MetricVerdict(name, threshold, overall, status, entries))
    return out


def failures(
    eval_id: str, cases: Sequence[CaseResult], agent_module: str, *, details: bool = True
) -> list[str]:
    """ADK's failure lines for one eval case (empty when it passed)."""
    lines: list[str] = []
    for verdict in verdicts(cases):
        if verdict.status is None or verdict.status is Status.PASSED:
            continue
        if verdict.status is Status.NOT_EVALUATED:
            reasons = {
                c.metrics[verdict.name].explanation
                for c in cases
                if verdict.name in c.metrics and c.metrics[verdict.name].explanation
            }
            line = (
                f"{verdict.name} for {agent_module} was not evaluated. No score was produced,"
                f" so the threshold of {verdict.threshold} was never checked and this is not"
                " a score regression."
            )
            if reasons:
                line += f" Why: {'; '.join(sorted(r for r in reasons if r))}"
        else:
            line = (
                f"{verdict.name} for {agent_module} Failed. Expected {verdict.threshold},"
                f" but got {verdict.score}."
            )
            if details:
                line += _difference(eval_id, verdict)
        lines.append(line)
    broken = [c for c in cases if c.status is Status.FAILED and not c.metrics]
    broken += [c for c in cases if c.error and c.metrics and c not in broken]
    if broken:
        errors = sorted({c.error for c in broken if c.error})
        line = (
            f"{eval_id} for {agent_module} Failed. {len(broken)} of {len(cases)} runs were"
            " recorded as failed"
        )
        line += f": {'; '.join(errors)}" if errors else " without producing any metric results."
        lines.append(line)
    return lines


def _difference(eval_id: str, verdict: MetricVerdict) -> str:
    """Where the first invocation below its threshold went wrong: calls and responses."""
    missed = next((e for e in verdict.invocations if e.status == 2), None)
    if missed is None or missed.actual is None:
        return ""
    actual = missed.actual
    text = missed.expected.user_input.text if missed.expected else actual.user_input.text
    out = [f"\n  case {eval_id}, invocation {text!r}: score {missed.score}"]
    if missed.expected is not None:
        out.append(f"\n    expected tool calls: {tool_calls_text(missed.expected)}")
    out.append(f"\n    actual tool calls:   {tool_calls_text(actual)}")
    if missed.expected is not None:
        out.append(f"\n    expected response: {missed.expected.final_response!r}")
    out.append(f"\n    actual response:   {actual.final_response!r}")
    return "".join(out)


def tool_calls_text(turn: Turn | None) -> str:
    if turn is None:
        return ""
    calls = [
        f"{c.name}({', '.join(f'{k}={v!r}' for k, v in (c.args or {}).items())})"
        for c in turn.tool_calls()
    ]
    return ", ".join(calls) if calls else "(none)"


def summary_lines(cases: Sequence[CaseResult]) -> list[str]:
    """ADK's printed per-metric summary lines, then one line per scored invocation."""
    lines: list[str] = []
    for verdict in verdicts(cases):
        status = f"EvalStatus.{verdict.status.name if verdict.status else 'INFORMATIONAL'}"
        lines.append(
            f"Summary: `{status}` for Metric: `{verdict.name}`. Expected threshold:"
            f" `{verdict.threshold}`, actual value: `{verdict.score}`."
        )
        for entry in verdict.invocations:
            prompt = entry.expected or entry.actual
            lines.append(
                f"  score={entry.score} prompt={prompt.user_input.text if prompt else None!r}"
                f" expected={entry.expected.final_response if entry.expected else None!r}"
                f" actual={entry.actual.final_response if entry.actual else None!r}"
                f" expected_tools=[{tool_calls_text(entry.expected)}]"
                f" actual_tools=[{tool_calls_text(entry.actual)}]"
            )
    return lines


def csv_rows(eval_set_id: str, eval_id: str, cases: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """ADK's `output_file` rows: one per metric per scored invocation."""
    rows = []
    names = {1: "PASSED", 2: "FAILED", 3: "NOT_EVALUATED", _INFORMATIONAL: "INFORMATIONAL"}
    for verdict in verdicts(cases):
        for entry in verdict.invocations:
            prompt = entry.expected or entry.actual
            rows.append(
                {
                    "eval_set_id": eval_set_id,
                    "eval_id": eval_id,
                    "metric_name": verdict.name,
                    "threshold": entry.threshold,
                    "score": entry.score,
                    "eval_status": names[entry.status],
                    "prompt": prompt.user_input.text if prompt else "",
                    "expected_response": (entry.expected.final_response if entry.expected else "")
                    or "",
                    "actual_response": (entry.actual.final_response if entry.actual else "") or "",
                    "expected_tool_calls": tool_calls_text(entry.expected),
                    "actual_tool_calls": tool_calls_text(entry.actual),
                }
            )
    return rows


def append_csv(rows: Sequence[dict[str, object]], output_file: str | Path) -> None:
    """Append rows to `output_file`, writing the header only when the file is new."""
    if not rows:
        return
    path = Path(output_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.is_file()
    with path.open("a", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        if new:
            writer.writeheader()
        writer.writerows(rows)
