"""The HTML report's data: one JSON document the page's script renders lazily.

The page draws only what is on screen (the visible rows of the case table, the open
case), so a 10,000-case run stays responsive: Python builds plain data here, the
browser builds the DOM on demand.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from assay._version import __version__
from assay.core.cases import Turn
from assay.core.results import CaseResult, EvalResult, MetricResult, Score, Status
from assay.metrics.calldiff import align_calls, expected_calls
from assay.metrics.sample_split import is_unstable
from assay.report.analysis import FailureAnalysis, analyze, case_run_key
from assay.report.compare import paired_interval as mean_interval

HISTOGRAM_BINS = 10


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What the header shows of a run that is not (yet) read back from the store; a
    stored run's `RunInfo` has the same attributes."""

    name: str | None = None
    status: str | None = None
    eval_set_ids: list[str] = field(default_factory=list)
    agent: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    runs: int = 1
    created_at: datetime | None = None
    finished_at: datetime | None = None


def git_commit(cwd: Path | None = None) -> str | None:
    """The working directory's git commit (with `-dirty` for local changes), if any."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=cwd, capture_output=True,
            text=True, timeout=5, check=False,
        )  # fmt: skip
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
            capture_output=True, text=True, timeout=5, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def run_environment() -> dict[str, object]:
    """Where a run is made, stored with it: the git commit of the working directory
    (when there is one) and the assay version."""
    found: dict[str, Any] = {"assay_version": __version__}
    commit = git_commit()
    if commit is not None:
        found["git_commit"] = commit
    return found


def _finite(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _histogram(values: Sequence[float], low: float, high: float) -> list[int]:
    bins = [0] * HISTOGRAM_BINS
    span = (high - low) or 1.0
    for v in values:
        index = int((v - low) / span * HISTOGRAM_BINS)
        bins[min(max(index, 0), HISTOGRAM_BINS - 1)] += 1
    return bins


def _metric_summary(name: str, result: EvalResult) -> dict[str, object]:
    results = [c.metrics[name] for c in result.cases if name in c.metrics]
    scores = [s for m in results if (s := _finite(m.score)) is not None]
    thresholds = {m.threshold for m in results}
    informational = all(m.status is None for m in results)
    mean = math.fsum(scores) / len(scores) if scores else None
    ci = result.summary.get(f"{name}/ci95")
    if not ci and len(scores) > 1:
        # Over the cases; big runs use the normal approximation (resampling is slow).
        ci = mean_interval(scores, max_bootstrap=500)
    low = min(0.0, *scores) if scores else 0.0
    high = max(1.0, *scores) if scores else 1.0
    passed = sum(m.status is Status.PASSED for m in results)
    failed = sum(m.status is Status.FAILED for m in results)
    judged = passed + failed
    return {
        "name": name,
        "threshold": thresholds.pop() if len(thresholds) == 1 else None,
        "informational": informational,
        "mean": mean,
        "ci95": list(ci) if ci else None,
        "passed": passed,
        "failed": failed,
        "not_evaluated": sum(m.status is Status.NOT_EVALUATED for m in results),
        "pass_rate": passed / judged if judged else None,
        "unstable": sum(is_unstable(m.details) for m in results),
        "histogram": _histogram(scores, low, high),
        "range": [low, high],
    }


def _score_doc(score: Score) -> dict[str, object]:
    doc: dict[str, Any] = {"value": _finite(score.value)}
    if score.explanation:
        doc["explanation"] = score.explanation
    if score.details and (kept := _without_nulls(score.details)):
        doc["details"] = kept
    return doc


def _metric_doc(metric: MetricResult) -> dict[str, object]:
    return {
        "score": _finite(metric.score),
        "threshold": metric.threshold,
        "status": metric.status.value if metric.status is not None else None,
        "explanation": metric.explanation,
        "details": (_without_nulls(metric.details) or None) if metric.details else None,
    }


def _number_text(value: object) -> str:
    if isinstance(value, float):
        return repr(value) if value != int(value) else f"{value:.1f}"
    return str(value)


def criterion_text(name: str, criterion: object) -> str:
    """A criterion of the config for people: `tool_trajectory_avg_score: EXACT match,
    threshold 1.0` rather than its JSON."""
    if isinstance(criterion, bool) or not isinstance(criterion, int | float | Mapping):
        return f"{name}: {criterion}"
    if not isinstance(criterion, Mapping):
        return f"{name}: threshold {_number_text(criterion)}"
    parts: list[str] = []
    rest = dict(criterion)
    if (match := rest.pop("match_type", None)) is not None:
        parts.append(f"{match} match")
    if (threshold := rest.pop("threshold", None)) is not None:
        parts.append(f"threshold {_number_text(threshold)}")
    judge = rest.pop("judge_model_options", None) or rest.pop("judge_model", None)
    model = judge.get("judge_model") if isinstance(judge, Mapping) else judge
    if model:
        parts.append(f"judged by {model}")
        if isinstance(judge, Mapping) and judge.get("num_samples"):
            parts.append(f"{judge['num_samples']} samples")
    for key, value in rest.items():
        if value is None or value == {} or value == []:
            continue
        shown = _number_text(value) if isinstance(value, int | float | str) else "…"
        parts.append(f"{key.replace('_', ' ')} {shown}")
    return f"{name}: {', '.join(parts) or 'default settings'}"


def _criteria_text(
    config: Mapping[str, object], summaries: Sequence[Mapping[str, object]]
) -> list[str]:
    """The run's criteria, one readable line each: from the stored config, or else the
    thresholds its metric results carry."""
    criteria = config.get("criteria")
    if isinstance(criteria, Mapping) and criteria:
        return [criterion_text(str(k), v) for k, v in criteria.items()]
    return [
        criterion_text(str(m["name"]), m["threshold"])
        for m in summaries
        if not m["informational"] and m["threshold"] is not None
    ]


def _without_nulls(value: object) -> object:
    """`value` with None, empty mappings and empty lists left out, recursively."""
    if isinstance(value, Mapping):
        kept = {k: _without_nulls(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _turn_doc(turn: Turn | None) -> dict[str, object] | None:
    if turn is None:
        return None
    steps = []
    for step in turn.steps:
        kind = step.kind
        value = getattr(step, kind)
        steps.append(
            {
                "kind": kind,
                "value": value
                if isinstance(value, dict)
                else (
                    value.model_dump(exclude_none=True) if hasattr(value, "model_dump") else value
                ),
            }
        )
    usage = turn.usage.model_dump(exclude_none=True) if turn.usage is not None else None
    return {
        "user": turn.user_input.text,
        "response": turn.final_response,
        "steps": steps,
        "latency": turn.latency_s,
        "model_latency": turn.model_latency_s,
        "tool_latency": turn.tool_latency_s,
        "model_calls": turn.model_calls,
        "usage": usage or None,
        "error": turn.error,
    }


def _case_detail(case: CaseResult, analysis: FailureAnalysis) -> dict[str, object]:
    invocations = []
    for inv in case.invocations:
        actual_calls = inv.actual.tool_calls() if inv.actual is not None else []
        wanted = expected_calls(inv.expected) if inv.expected is not None else []
        invocations.append(
            {
                "id": inv.invocation_id,
                "actual": _turn_doc(inv.actual),
                "expected": _turn_doc(inv.expected),
                "calls": align_calls(wanted, actual_calls) if inv.expected is not None else None,
                "scores": {k: _score_doc(s) for k, s in inv.scores.items()},
            }
        )
    found = analysis.for_case(case)
    return {
        "metrics": {name: _metric_doc(m) for name, m in case.metrics.items()},
        "invocations": invocations,
        "error": case.error,
        "error_type": str(case.error_type) if case.error_type else None,
        "conversation": case.conversation,
        "traceback": case.traceback,
        "findings": [f.to_dict() for f in found.findings] if found else [],
    }


def _case_row(case: CaseResult, analysis: FailureAnalysis) -> dict[str, object]:
    found = analysis.for_case(case)
    return {
        "key": case_run_key(case.eval_set_id, case.case_id, case.run_index),
        "set": case.eval_set_id or "",
        "id": case.case_id,
        "run": case.run_index + 1,
        "status": case.status.value,
        "latency": _finite(case.latency_s),
        "scores": {n: _finite(m.score) for n, m in case.metrics.items()},
        "failed": [n for n, m in case.metrics.items() if m.status is Status.FAILED],
        # judged metrics whose samples straddle the threshold (`metrics.sample_split`)
        "unstable": [n for n, m in case.metrics.items() if is_unstable(m.details)],
        "reason": found.reason() if found else None,
        "causes": [c.value for c in found.causes] if found else [],
        "tools": sorted({f.tool for f in found.findings if f.tool}) if found else [],
    }


def _judge_models(config: Mapping[str, Any]) -> list[str]:
    models: list[str] = []
    for criterion in (config.get("criteria") or {}).values():
        if isinstance(criterion, Mapping):
            judge = criterion.get("judge_model_options") or criterion.get("judge_model")
            model = judge.get("judge_model") if isinstance(judge, Mapping) else judge
            if isinstance(model, str) and model not in models:
                models.append(model)
    return models


def _when(value: object) -> str | None:
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return str(value) if value else None


def judge_cost_lines(summary: Mapping[str, Any]) -> list[str] | None:
    """What the judges cost, in total and per judged metric and judge model (the
    summary's `judge/usd` and `judge/cost/...` keys); None when the run judged nothing."""
    if "judge/usd" not in summary:
        return None
    lines = [
        f"${float(summary['judge/usd']):.4f} in total"
        f" (estimated ${float(summary.get('judge/usd_estimated') or 0):.4f})"
    ]
    batched = int(summary.get("judge/batched_calls") or 0)
    if batched:
        lines[0] += f"; {batched:,} calls batched, at batch prices"
    refused = int(summary.get("judge/refused") or 0)
    if refused:
        lines[0] += f"; {refused:,} calls not made: judge budget reached"
    per: dict[tuple[str, str], dict[str, Any]] = {}
    for key, value in summary.items():
        if key.startswith("judge/cost/"):
            metric, model, counter = key.removeprefix("judge/cost/").rsplit("/", 2)
            per.setdefault((metric, model), {})[counter] = value
    for (metric, model), c in sorted(per.items()):
        tokens = f"{int(c.get('input_tokens', 0)):,} + {int(c.get('output_tokens', 0)):,} tokens"
        batched = int(c.get("batched_calls", 0))
        lines.append(
            f"{metric} · {model}: {int(c.get('calls', 0)):,} calls"
            + (f" ({batched:,} batched)" if batched else "")
            + ","
            f" {int(c.get('cache_hits', 0)):,} cache hits, {tokens},"
            f" ${float(c.get('usd', 0)):.4f}"
        )
    return lines


def report_data(
    result: EvalResult,
    *,
    run: object = None,
    commit: str | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """The report's document. `run` is the stored run (`RunInfo`) when there is one."""
    from assay.report.console import metric_order, pass_at_k, run_count

    analysis = analyze(result.cases)
    metrics = metric_order(result)
    config: Mapping[str, Any] = getattr(run, "config", None) or {}
    latencies = [v for c in result.cases if (v := _finite(c.latency_s)) is not None]
    repeated = pass_at_k(result)
    counts = {s.value: sum(c.status is s for c in result.cases) for s in Status}
    summaries = [_metric_summary(name, result) for name in metrics]
    header = {
        "title": title or (getattr(run, "name", None) or "assay report"),
        "run_id": result.run_id,
        "name": getattr(run, "name", None),
        "status": getattr(run, "status", None),
        "eval_sets": list(
            getattr(run, "eval_set_ids", None)
            or dict.fromkeys(c.eval_set_id or "" for c in result.cases)
        ),
        "agent": getattr(run, "agent", None),
        "criteria": config.get("criteria") or {},
        "criteria_text": _criteria_text(config, summaries),
        "judges": _judge_models(config),
        "judge_cost": judge_cost_lines(result.summary),
        "runs_per_case": run_count(result),
        "started": _when(getattr(run, "created_at", None)),
        "finished": _when(getattr(run, "finished_at", None)),
        "version": __version__,
        # A stored run says where it was made; a run being reported now, the caller.
        "commit": commit or (config.get("environment") or {}).get("git_commit"),
        "counts": counts,
        "pass_at_k": list(repeated) if repeated else None,
    }
    return {
        "header": header,
        "metrics": summaries,
        "latency": {
            "histogram": _histogram(latencies, 0.0, max(latencies, default=1.0)),
            "max": max(latencies, default=None),
            "mean": math.fsum(latencies) / len(latencies) if latencies else None,
        },
        "analysis": analysis.to_dict(),
        "cases": [_case_row(c, analysis) for c in result.cases],
        "details": {
            case_run_key(c.eval_set_id, c.case_id, c.run_index): _case_detail(c, analysis)
            for c in result.cases
        },
    }
