"""Run comparison: per-case and per-metric deltas between a base run and another run.

Cases are matched by (eval set, case id); repeated runs of a case are averaged per
metric and combined strictly for the status. A case *regressed* when it passed in the
base run and does not pass now; it *improved* the other way round. A metric's mean
delta over the cases both runs scored gets a paired bootstrap interval (resampling
cases): the metric regressed only when the whole 95% interval lies below zero, so two
reruns that differ by noise are not called a regression. Used by `assay compare`, the
viewer's compare page and CI gating (`--fail-on-regression`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from assay.errors import InputError
from assay.model.results import CaseResult, EvalResult, Status, combine_statuses
from assay.report.analysis import analyze_case

CaseId = tuple[str, str]  # (eval set id or "", case id)

#: above this many paired cases the interval uses the normal approximation (the
#: bootstrap of a mean converges to it, and resampling 10k cases 1000 times is slow)
BOOTSTRAP_MAX_CASES = 2000
RESAMPLES = 1000


class Change(StrEnum):
    """How a case changed from the base run; the order is the listing order."""

    REGRESSED = "regressed"  # passed before, does not pass now
    WORSE = "worse"  # same status, a metric's score went down
    MIXED = "mixed"  # same status, some scores up and some down
    IMPROVED = "improved"  # did not pass before, passes now
    BETTER = "better"  # same status, scores went up
    CHANGED = "changed"  # status changed between failed and not evaluated
    SAME = "same"


_CHANGE_ORDER = list(Change)


@dataclass(frozen=True, slots=True)
class CaseSide:
    """One run's view of a case: status over its runs and mean score per metric."""

    status: Status
    scores: dict[str, float | None]
    runs: int
    passed_runs: int
    reason: str | None  # the failure analysis' one-line reason when it did not pass


@dataclass(frozen=True, slots=True)
class CaseDelta:
    eval_set_id: str
    case_id: str
    base: CaseSide
    other: CaseSide
    change: Change
    deltas: dict[str, float]  # metric -> other - base, where both have a score

    def to_dict(self) -> dict[str, Any]:
        def side(s: CaseSide) -> dict[str, Any]:
            return {
                "status": s.status.value,
                "scores": s.scores,
                "runs": s.runs,
                "passed_runs": s.passed_runs,
                "reason": s.reason,
            }

        return {
            "eval_set_id": self.eval_set_id,
            "case_id": self.case_id,
            "change": self.change.value,
            "base": side(self.base),
            "other": side(self.other),
            "deltas": self.deltas,
        }


@dataclass(frozen=True, slots=True)
class MetricDelta:
    """A metric's mean over the paired cases in both runs, the delta and its interval."""

    name: str
    base_mean: float | None
    other_mean: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    paired: int
    gated: bool  # has a threshold (informational metrics are never called regressions)

    @property
    def regressed(self) -> bool:
        return self.gated and self.ci_high is not None and self.ci_high < 0

    @property
    def improved(self) -> bool:
        return self.gated and self.ci_low is not None and self.ci_low > 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.name,
            "base_mean": self.base_mean,
            "other_mean": self.other_mean,
            "delta": self.delta,
            "ci95": None if self.ci_low is None else [self.ci_low, self.ci_high],
            "paired_cases": self.paired,
            "regressed": self.regressed,
            "improved": self.improved,
        }


@dataclass(slots=True)
class Comparison:
    """`other` against `base`: case deltas (regressions first) and metric deltas."""

    base_id: str | None
    other_id: str | None
    cases: list[CaseDelta]
    metrics: list[MetricDelta]
    only_in_base: list[CaseId] = field(default_factory=list)
    only_in_other: list[CaseId] = field(default_factory=list)

    @property
    def newly_failing(self) -> list[CaseDelta]:
        return [c for c in self.cases if c.change is Change.REGRESSED]

    @property
    def newly_passing(self) -> list[CaseDelta]:
        return [c for c in self.cases if c.change is Change.IMPROVED]

    @property
    def regressed_metrics(self) -> list[MetricDelta]:
        return [m for m in self.metrics if m.regressed]

    @property
    def has_regression(self) -> bool:
        """A case that passed no longer passes, or a metric mean fell beyond noise."""
        return bool(self.newly_failing or self.regressed_metrics)

    def summary(self) -> str:
        parts = [
            f"{len(self.cases)} cases in common",
            f"{len(self.newly_failing)} newly failing",
            f"{len(self.newly_passing)} newly passing",
        ]
        regressed = self.regressed_metrics
        if regressed:
            parts.append("metrics down beyond noise: " + ", ".join(m.name for m in regressed))
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "base_run": self.base_id,
            "other_run": self.other_id,
            "regression": self.has_regression,
            "summary": self.summary(),
            "newly_failing": [f"{c.eval_set_id}/{c.case_id}" for c in self.newly_failing],
            "newly_passing": [f"{c.eval_set_id}/{c.case_id}" for c in self.newly_passing],
            "metrics": [m.to_dict() for m in self.metrics],
            "cases": [c.to_dict() for c in self.cases],
            "only_in_base": [f"{s}/{c}" for s, c in self.only_in_base],
            "only_in_other": [f"{s}/{c}" for s, c in self.only_in_other],
        }


# -- building ---------------------------------------------------------------------------


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _sides(result: EvalResult) -> tuple[dict[CaseId, CaseSide], dict[str, bool]]:
    """Per case its side, and per metric whether it has a threshold (is gated)."""
    groups: dict[CaseId, list[CaseResult]] = {}
    for case in result.cases:
        groups.setdefault((case.eval_set_id or "", case.case_id), []).append(case)
    gated: dict[str, bool] = {}
    sides: dict[CaseId, CaseSide] = {}
    for key, runs in groups.items():
        names: dict[str, None] = {}
        for run in runs:
            for name, metric in run.metrics.items():
                names.setdefault(name, None)
                gated[name] = gated.get(name, False) or metric.status is not None
        scores = {
            name: _mean(
                [
                    m.score
                    for r in runs
                    if (m := r.metrics.get(name)) is not None
                    and m.score is not None
                    and math.isfinite(m.score)
                ]
            )
            for name in names
        }
        status = combine_statuses([r.status for r in runs])
        reason = None
        if status is not Status.PASSED:
            failing = next((r for r in runs if r.status is not Status.PASSED), runs[0])
            analysis = analyze_case(failing)
            reason = analysis.reason() if analysis is not None else None
        sides[key] = CaseSide(
            status=status,
            scores=scores,
            runs=len(runs),
            passed_runs=sum(r.status is Status.PASSED for r in runs),
            reason=reason,
        )
    return sides, gated


def _change(base: CaseSide, other: CaseSide, deltas: dict[str, float]) -> Change:
    if base.status is Status.PASSED and other.status is not Status.PASSED:
        return Change.REGRESSED
    if base.status is not Status.PASSED and other.status is Status.PASSED:
        return Change.IMPROVED
    if base.status is not other.status:
        return Change.CHANGED
    down = any(d < 0 for d in deltas.values())
    up = any(d > 0 for d in deltas.values())
    if down and up:
        return Change.MIXED
    if down:
        return Change.WORSE
    return Change.BETTER if up else Change.SAME


def paired_interval(
    differences: Sequence[float],
    *,
    seed: int = 0,
    resamples: int = RESAMPLES,
    max_bootstrap: int = BOOTSTRAP_MAX_CASES,
) -> tuple[float, float] | None:
    """95% interval of the mean of paired differences: percentile bootstrap over cases.

    Past `max_bootstrap` differences the normal approximation is used instead.
    """
    n = len(differences)
    if n == 0:
        return None
    mean = math.fsum(differences) / n
    if n > max_bootstrap:
        var = math.fsum((d - mean) ** 2 for d in differences) / (n - 1)
        half = 1.96 * math.sqrt(var / n)
        return mean - half, mean + half
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(differences, k=n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[min(resamples - 1, int(0.975 * resamples))]


def _case_order(delta: CaseDelta) -> tuple[int, float, str, str]:
    worst = min(delta.deltas.values(), default=0.0)
    return (_CHANGE_ORDER.index(delta.change), worst, delta.eval_set_id, delta.case_id)


def compare_results(
    base: EvalResult, other: EvalResult, *, seed: int = 0, require_overlap: bool = True
) -> Comparison:
    """Compare `other` against `base`.

    Raises InputError when the two runs have no case in common (and `require_overlap`).
    """
    base_sides, base_gated = _sides(base)
    other_sides, other_gated = _sides(other)
    common = [k for k in base_sides if k in other_sides]
    if require_overlap and not common:
        raise InputError(
            f"runs {base.run_id or 'base'} and {other.run_id or 'other'} have no case in "
            "common (cases are matched by eval set id and case id); compare runs of "
            "overlapping eval sets"
        )
    cases = []
    for key in common:
        a, b = base_sides[key], other_sides[key]
        deltas = {
            name: b.scores[name] - score  # type: ignore[operator]
            for name, score in a.scores.items()
            if score is not None and b.scores.get(name) is not None
        }
        cases.append(CaseDelta(key[0], key[1], a, b, _change(a, b, deltas), deltas))
    cases.sort(key=_case_order)
    names = list(dict.fromkeys([*base.metrics, *other.metrics, *base_gated, *other_gated]))
    metrics = []
    for name in names:
        pairs = [
            (base_sides[k].scores[name], other_sides[k].scores[name])
            for k in common
            if base_sides[k].scores.get(name) is not None
            and other_sides[k].scores.get(name) is not None
        ]
        a_vals = [p[0] for p in pairs if p[0] is not None]
        b_vals = [p[1] for p in pairs if p[1] is not None]
        diffs = [b - a for a, b in zip(a_vals, b_vals, strict=True)]
        interval = paired_interval(diffs, seed=seed)
        metrics.append(
            MetricDelta(
                name=name,
                base_mean=_mean(a_vals),
                other_mean=_mean(b_vals),
                delta=_mean(diffs),
                ci_low=interval[0] if interval else None,
                ci_high=interval[1] if interval else None,
                paired=len(pairs),
                gated=base_gated.get(name, False) or other_gated.get(name, False),
            )
        )
    return Comparison(
        base_id=base.run_id,
        other_id=other.run_id,
        cases=cases,
        metrics=metrics,
        only_in_base=[k for k in base_sides if k not in other_sides],
        only_in_other=[k for k in other_sides if k not in base_sides],
    )


def compare_many(results: Sequence[EvalResult], *, seed: int = 0) -> list[Comparison]:
    """Each run after the first against the first (the base)."""
    if len(results) < 2:
        raise InputError("compare needs at least two runs")
    return [compare_results(results[0], r, seed=seed) for r in results[1:]]
