"""Aggregation: per-invocation rows, the Vertex-style summary, repeated-run statistics."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from assay.core.results import CaseResult, EvalResult, InvocationResult, Score, Status
from assay.engine.stats import bootstrap_ci, pass_at_k, pass_hat_k
from assay.engine.tally import Tally
from assay.metrics.base import Metric
from assay.metrics.stats import mean


def _std(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    m = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / (len(values) - 1))


def case_rows(
    result: CaseResult, metrics: Sequence[Metric], agent_run: bool
) -> list[dict[str, object]]:
    """One row per invocation (at least one per case run), with `{metric}/score` columns."""
    rows: list[dict[str, Any]] = []
    invocations: list[InvocationResult | None] = list(result.invocations) or [None]
    for pos, inv in enumerate(invocations):
        row: dict[str, Any] = {
            "eval_set_id": result.eval_set_id,
            "case_id": result.case_id,
            "run": result.run_index,
            "invocation_id": inv.invocation_id if inv else None,
        }
        actual = inv.actual if inv else None
        expected = inv.expected if inv else None
        source = actual or expected
        row["prompt"] = source.user_input.text if source else None
        row["response"] = actual.final_response if actual else None
        if expected is not None and expected.final_response is not None:
            row["reference"] = expected.final_response
        for metric in metrics:
            mr = result.metrics.get(metric.name)
            if mr is None:
                continue
            score: Score | None = None
            if inv is not None and len(mr.per_invocation) == len(result.invocations):
                score = mr.per_invocation[inv.index]
            elif pos == 0:
                # A case-level metric (no per-invocation scores) reports on the first row.
                score = Score(mr.score, mr.explanation)
            if score is not None:
                row.update(metric.row_columns(score))
        if agent_run:
            row["latency_in_seconds"] = (
                actual.latency_s
                if actual is not None and actual.latency_s is not None
                else (result.latency_s if pos == 0 else None)
            )
            row["failure"] = 1 if result.failure else 0
        if result.error and pos == 0:
            row["error"] = result.error
        rows.append(row)
    return rows


def row_count(case: CaseResult) -> int:
    """The rows a case run reports: one per invocation, at least one."""
    return len(case.invocations) or 1


def case_latencies(case: CaseResult) -> list[float]:
    """Latency per row of the case, as `case_rows` reports it (missing ones left out)."""
    if not case.invocations:
        return [case.latency_s] if case.latency_s is not None else []
    values = []
    for pos, inv in enumerate(case.invocations):
        actual = inv.actual
        if actual is not None and actual.latency_s is not None:
            values.append(actual.latency_s)
        elif pos == 0 and case.latency_s is not None:
            values.append(case.latency_s)
    return values


def agent_columns(latencies: Sequence[float], failures: Sequence[float]) -> dict[str, object]:
    """An agent run's summary columns from its rows' latencies and failures (0 or 1)."""
    return {
        "latency_in_seconds/mean": mean(latencies),
        "latency_in_seconds/std": _std(latencies),
        "failure/mean": mean(failures),
        "failure/std": _std(failures),
    }


def summarize(
    cases: Sequence[CaseResult],
    metrics: Sequence[Metric],
    *,
    agent_run: bool,
    runs: int | None = None,
) -> tuple[dict[str, object], dict[str, object]]:
    """The summary dict and, for repeated runs, per-case statistics.

    Computed from the cases, so the same numbers as the rows give without building them.
    Run counts come from the cases themselves (each may run a different number of
    times); `runs` is accepted for callers written before that and not used.
    """
    del runs
    # One pass over the cases collects every metric's scored values; a streamed run
    # counts through the same `Tally`, batch by batch.
    tally = Tally(m.name for m in metrics)
    for case in cases:
        tally.add(case)
    summary = tally.summary(metrics)
    if agent_run:
        latencies = [v for c in cases for v in case_latencies(c)]
        failures = [float(c.failure) for c in cases for _ in range(row_count(c))]
        summary.update(agent_columns(latencies, failures))
    summary.update(tally.status_columns())
    by_case: dict[tuple[str | None, str], list[CaseResult]] = defaultdict(list)
    for case in cases:
        by_case[(case.eval_set_id, case.case_id)].append(case)
    repeated: dict[str, Any] = {}
    if any(len(runs) > 1 for runs in by_case.values()):
        repeated = _repeated(by_case, metrics, summary)
    return summary, repeated


def _repeated(
    by_case: dict[tuple[str | None, str], list[CaseResult]],
    metrics: Sequence[Metric],
    summary: dict[str, object],
) -> dict[str, object]:
    """pass@k / pass^k per case and overall, k being each case's own number of runs.

    Cases may run a different number of times (CES: goldens once, scenarios five
    times): the summary has `pass@k` / `pass^k` for every k of the repeated cases, each
    over the cases run k times, and `runs` the largest k.
    """
    per_case: dict[str, Any] = {}
    by_k: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (set_id, case_id), runs in by_case.items():
        passes = [r.status is Status.PASSED for r in sorted(runs, key=lambda r: r.run_index)]
        k = len(passes)
        a, h = pass_at_k(passes), pass_hat_k(passes)
        by_k[k].append((a, h))
        key = f"{set_id}/{case_id}" if set_id else case_id
        per_case[key] = {
            "runs": k,
            "passed_runs": sum(passes),
            "pass_rate": sum(passes) / k,
            f"pass@{k}": a,
            f"pass^{k}": h,
        }
    summary["runs"] = max(by_k)
    for k in sorted(by_k):
        if k > 1:
            outcomes = by_k[k]
            summary[f"pass@{k}"] = sum(a for a, _ in outcomes) / len(outcomes)
            summary[f"pass^{k}"] = sum(h for _, h in outcomes) / len(outcomes)
    for metric in metrics:
        groups = [
            [
                c.metrics[metric.name].score
                for c in runs
                if metric.name in c.metrics and c.metrics[metric.name].score is not None
            ]
            for runs in by_case.values()
        ]
        ci = bootstrap_ci([[v for v in g if v is not None] for g in groups])
        summary[f"{metric.name}/ci95"] = list(ci) if ci else None
    return per_case


def build_result(
    cases: list[CaseResult],
    metrics: Sequence[Metric],
    *,
    agent_run: bool,
    eval_set_id: str | None = None,
) -> EvalResult:
    summary, repeated = summarize(cases, metrics, agent_run=agent_run)
    metric_list = list(metrics)

    def rows() -> list[dict[str, object]]:
        return [row for case in cases for row in case_rows(case, metric_list, agent_run)]

    return EvalResult(
        summary=summary,
        cases=cases,
        eval_set_id=eval_set_id,
        metrics=[m.name for m in metrics],
        repeated=repeated,
        row_builder=rows,
    )
