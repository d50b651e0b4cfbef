"""Run comparison: per-case and per-metric deltas between a base run and another run.

Cases are matched by (eval set, case id); repeated runs of a case are averaged per
metric and combined strictly for the status. Each metric's direction (higher or lower
is better) and whether it is informational come from the metric registry
(`assay.metrics.registry.metric_traits`). A metric *gates* a comparison when it is not
informational and had a threshold in either run; informational metrics are shown but
never make a case or a run better or worse.

A case *regressed* when it passed in the base run and does not pass now; it *improved*
the other way round; it is *unchanged* unless its status or a gating metric moved. A
case that passed in one run and not in the other only through judged metrics that were
*unstable* in either run (their judge samples straddled the threshold,
`assay.metrics.sample_split`) is an *unstable flip*: counted apart
(`Comparison.unstable_flips`), neither a regression nor an improvement by itself. A
delta within `EQUAL_WITHIN` (1e-9) is equal, and is reported as 0. A metric's mean
delta over the cases both runs scored gets a paired bootstrap interval (resampling
cases, bias-corrected and accelerated as `scipy.stats.bootstrap`'s default): the metric
regressed only when the whole 95% interval lies on the worse side of zero, so two
reruns that differ by noise are not called a regression. Used by `assay compare` (the
terminal and `--json`), the viewer's compare page and CI gating (`--fail-on-regression`).
"""

from __future__ import annotations

import bisect
import collections
import difflib
import itertools
import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from statistics import NormalDist

from assay.core.results import CaseResult, EvalResult, Status, combine_statuses
from assay.errors import InputError
from assay.metrics.registry import MetricTraits, metric_traits
from assay.metrics.sample_split import is_unstable
from assay.report.analysis import analyze_case

CaseId = tuple[str, str]  # (eval set id or "", case id)

#: above this many paired cases the interval uses the normal approximation (the
#: bootstrap of a mean converges to it, and resampling 10k cases 1000 times is slow)
BOOTSTRAP_MAX_CASES = 2000
#: resamples of a bootstrap (scipy's default), fewer where the cases are many: at most
#: `RESAMPLE_DRAWS` cases drawn in all, and never fewer than `MIN_RESAMPLES` resamples
RESAMPLES = 9999
RESAMPLE_DRAWS = 1_000_000
MIN_RESAMPLES = 1000
#: two scores (or means, or deltas) this close are equal: float noise of a sum is not a change
EQUAL_WITHIN = 1e-9
#: responses of more words and spaces than this are diffed as a whole (delete, then
#: insert): a word diff's time grows with the square of the length
DIFF_MAX_TOKENS = 1200


def settle(value: float) -> float:
    """`value`, or 0.0 when it is within `EQUAL_WITHIN` of zero (never -0.0)."""
    return 0.0 if abs(value) <= EQUAL_WITHIN else value


class Change(StrEnum):
    """How a case changed from the base run; the order is the listing order."""

    REGRESSED = "regressed"  # passed before, does not pass now
    WORSE = "worse"  # same status, a gating metric's score moved the worse way
    MIXED = "mixed"  # same status, gating metrics moved both ways
    IMPROVED = "improved"  # did not pass before, passes now
    BETTER = "better"  # same status, gating metrics moved the better way
    CHANGED = "changed"  # status changed between failed and not evaluated
    #: passed in one run and not the other, but every metric whose verdict flipped was
    #: unstable (its judge samples straddled the threshold) in one of the runs: judge
    #: noise, not a regression (or an improvement) by itself
    UNSTABLE = "unstable flip"
    UNCHANGED = "unchanged"  # same status, no gating metric moved
    SAME = "unchanged"  # the name UNCHANGED had before: an alias


_CHANGE_ORDER = list(Change)


@dataclass(frozen=True, slots=True)
class CaseSide:
    """One run's view of a case: status over its runs and mean score per metric."""

    status: Status
    scores: dict[str, float | None]
    runs: int
    passed_runs: int
    reason: str | None  # the failure analysis' one-line reason when it did not pass
    #: the final responses of the case's first run, one line per turn (None: no response)
    response: str | None = None
    #: per metric with a threshold, its status over the case's runs (strict)
    verdicts: dict[str, Status] = field(default_factory=dict)
    #: metrics whose judge samples straddled the threshold in a run of the case
    unstable: tuple[str, ...] = ()


#: a word-level diff: ("equal" | "delete" | "insert", text), in reading order
DiffSegment = tuple[str, str]


@dataclass(frozen=True, slots=True)
class CaseDelta:
    eval_set_id: str
    case_id: str
    base: CaseSide
    other: CaseSide
    change: Change
    deltas: dict[str, float]  # metric -> other - base, where both have a score (0 if equal)
    better: tuple[str, ...] = ()  # gating metrics that moved the better way
    worse: tuple[str, ...] = ()  # gating metrics that moved the worse way
    #: metrics that passed in one run and failed in the other
    flipped: tuple[str, ...] = ()

    @property
    def response_diff(self) -> list[DiffSegment] | None:
        """Word-level diff of the two final responses; None when they are the same.
        Computed when asked for (the terminal never does; `--json` and the viewer do)."""
        return word_diff(self.base.response, self.other.response)

    @property
    def unchanged(self) -> bool:
        return self.change is Change.UNCHANGED

    @property
    def key(self) -> str:
        return f"{self.eval_set_id}/{self.case_id}" if self.eval_set_id else self.case_id

    def to_dict(self) -> dict[str, object]:
        def side(s: CaseSide) -> dict[str, object]:
            return {
                "status": s.status.value,
                "scores": s.scores,
                "runs": s.runs,
                "passed_runs": s.passed_runs,
                "reason": s.reason,
                "unstable": list(s.unstable),
            }

        return {
            "eval_set_id": self.eval_set_id,
            "case_id": self.case_id,
            "change": self.change.value,
            "base": side(self.base),
            "other": side(self.other),
            "deltas": self.deltas,
            "better": list(self.better),
            "worse": list(self.worse),
            "flipped": list(self.flipped),
            "response_diff": None
            if self.response_diff is None
            else [list(s) for s in self.response_diff],
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
    gated: bool  # not informational, and had a threshold in either run
    higher_is_better: bool = True
    informational: bool = False

    @property
    def regressed(self) -> bool:
        """The whole interval lies on the worse side of zero."""
        if not self.gated or self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_high < 0 if self.higher_is_better else self.ci_low > 0

    @property
    def improved(self) -> bool:
        """The whole interval lies on the better side of zero."""
        if not self.gated or self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_low > 0 if self.higher_is_better else self.ci_high < 0

    @property
    def direction(self) -> str:
        return "higher" if self.higher_is_better else "lower"

    @property
    def verdict(self) -> str:
        """regressed, improved, within noise, informational, no threshold, or not paired
        (no case has a score in both runs)."""
        if self.regressed:
            return "regressed"
        if self.improved:
            return "improved"
        if self.informational:
            return "informational"
        if not self.paired:
            return "not paired"
        return "within noise" if self.gated else "no threshold"

    def to_dict(self) -> dict[str, object]:
        return {
            "metric": self.name,
            "base_mean": self.base_mean,
            "other_mean": self.other_mean,
            "delta": self.delta,
            "ci95": None if self.ci_low is None else [self.ci_low, self.ci_high],
            "paired_cases": self.paired,
            "better": self.direction,
            "informational": self.informational,
            "gated": self.gated,
            "verdict": self.verdict,
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
    base_name: str | None = None  # the runs' names (`assay eval --name`), when given
    other_name: str | None = None

    @property
    def newly_failing(self) -> list[CaseDelta]:
        return [c for c in self.cases if c.change is Change.REGRESSED]

    @property
    def newly_passing(self) -> list[CaseDelta]:
        return [c for c in self.cases if c.change is Change.IMPROVED]

    @property
    def unchanged(self) -> list[CaseDelta]:
        return [c for c in self.cases if c.change is Change.UNCHANGED]

    @property
    def unstable_flips(self) -> list[CaseDelta]:
        """Cases that passed in one run and not in the other only through metrics whose
        judge samples straddled the threshold: counted apart, never a regression."""
        return [c for c in self.cases if c.change is Change.UNSTABLE]

    @property
    def changed(self) -> list[CaseDelta]:
        return [c for c in self.cases if c.change is not Change.UNCHANGED]

    @property
    def regressed_metrics(self) -> list[MetricDelta]:
        return [m for m in self.metrics if m.regressed]

    @property
    def has_regression(self) -> bool:
        """A case that passed no longer passes, or a gating metric's mean moved the worse
        way beyond noise."""
        return bool(self.newly_failing or self.regressed_metrics)

    def counts(self) -> dict[str, int]:
        """Cases per change, every change named (zeros included), in listing order."""
        found = {change.value: 0 for change in Change}
        for case in self.cases:
            found[case.change.value] += 1
        return found

    def summary(self) -> str:
        parts = [
            f"{len(self.cases)} cases in common",
            f"{len(self.unchanged)} unchanged",
            f"{len(self.newly_failing)} newly failing",
            f"{len(self.newly_passing)} newly passing",
        ]
        flips = self.unstable_flips
        if flips:
            parts.append(f"{len(flips)} flip{'' if len(flips) == 1 else 's'} of unstable items")
        regressed = self.regressed_metrics
        if regressed:
            parts.append("metrics worse beyond noise: " + ", ".join(m.name for m in regressed))
        return ", ".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {
            "base_run": self.base_id,
            "other_run": self.other_id,
            "base_name": self.base_name,
            "other_name": self.other_name,
            "regression": self.has_regression,
            "summary": self.summary(),
            "counts": self.counts(),
            "newly_failing": [f"{c.eval_set_id}/{c.case_id}" for c in self.newly_failing],
            "newly_passing": [f"{c.eval_set_id}/{c.case_id}" for c in self.newly_passing],
            "unstable_flips": [f"{c.eval_set_id}/{c.case_id}" for c in self.unstable_flips],
            "metrics": [m.to_dict() for m in self.metrics],
            "cases": [c.to_dict() for c in self.cases],
            "only_in_base": [f"{s}/{c}" for s, c in self.only_in_base],
            "only_in_other": [f"{s}/{c}" for s, c in self.only_in_other],
        }


# -- building ---------------------------------------------------------------------------


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _response(run: CaseResult) -> str | None:
    texts = [
        inv.actual.final_response
        for inv in run.invocations
        if inv.actual is not None and inv.actual.final_response is not None
    ]
    return "\n".join(texts) if texts else None


def _sides(result: EvalResult) -> tuple[dict[CaseId, CaseSide], dict[str, bool]]:
    """Per case its side, and per metric whether it had a threshold (a status)."""
    groups: dict[CaseId, list[CaseResult]] = {}
    for case in result.cases:
        groups.setdefault((case.eval_set_id or "", case.case_id), []).append(case)
    thresholded: dict[str, bool] = {}
    sides: dict[CaseId, CaseSide] = {}
    for key, runs in groups.items():
        runs.sort(key=lambda r: r.run_index)
        names: dict[str, None] = {}
        for run in runs:
            for name, metric in run.metrics.items():
                names.setdefault(name, None)
                thresholded[name] = thresholded.get(name, False) or metric.status is not None
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
        verdicts = {
            name: combine_statuses(statuses)
            for name in names
            if (
                statuses := [
                    m.status
                    for r in runs
                    if (m := r.metrics.get(name)) is not None and m.status is not None
                ]
            )
        }
        unstable = tuple(
            name
            for name in names
            if any(is_unstable(m.details) for r in runs if (m := r.metrics.get(name)) is not None)
        )
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
            response=_response(runs[0]),
            verdicts=verdicts,
            unstable=unstable,
        )
    return sides, thresholded


def _flipped(base: CaseSide, other: CaseSide) -> tuple[str, ...]:
    """Metrics that passed in one side and failed in the other (a metric without a
    score on one side did not flip: it was not judged)."""
    verdicts = (Status.PASSED, Status.FAILED)
    return tuple(
        name
        for name, was in base.verdicts.items()
        if was in verdicts
        and other.verdicts.get(name) in verdicts
        and other.verdicts[name] is not was
    )


def _noise_only(base: CaseSide, other: CaseSide, flipped: Sequence[str]) -> bool:
    """Every metric that flipped was unstable in one of the two runs."""
    noisy = {*base.unstable, *other.unstable}
    return bool(flipped) and all(name in noisy for name in flipped)


def _change(
    base: CaseSide, other: CaseSide, better: bool, worse: bool, flipped: Sequence[str] = ()
) -> Change:
    passing = (base.status is Status.PASSED, other.status is Status.PASSED)
    if passing[0] is not passing[1] and _noise_only(base, other, flipped):
        return Change.UNSTABLE
    if base.status is Status.PASSED and other.status is not Status.PASSED:
        return Change.REGRESSED
    if base.status is not Status.PASSED and other.status is Status.PASSED:
        return Change.IMPROVED
    if base.status is not other.status:
        return Change.CHANGED
    if better and worse:
        return Change.MIXED
    if worse:
        return Change.WORSE
    return Change.BETTER if better else Change.UNCHANGED


_WORDS = re.compile(r"\s+|\S+")


def word_diff(before: str | None, after: str | None) -> list[DiffSegment] | None:
    """A word-level diff of two texts as ("equal" | "delete" | "insert", text) segments
    (whitespace kept, so joining the equal and delete segments gives `before` back);
    None when the texts are the same."""
    if before == after:
        return None
    a, b = _WORDS.findall(before or ""), _WORDS.findall(after or "")
    opcodes: Sequence[tuple[str, int, int, int, int]]
    if len(a) > DIFF_MAX_TOKENS or len(b) > DIFF_MAX_TOKENS:
        opcodes = [("replace", 0, len(a), 0, len(b))]
    else:
        opcodes = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    segments: list[DiffSegment] = []
    deleted: list[str] = []
    inserted: list[str] = []

    def flush() -> None:
        for op, words in (("delete", deleted), ("insert", inserted)):
            if words:
                segments.append((op, "".join(words)))
                words.clear()

    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        same = a[i1:i2]
        between = 0 < index < len(opcodes) - 1
        if tag == "equal" and not (between and "".join(same).isspace()):
            flush()
            segments.append(("equal", "".join(same)))
        elif tag == "equal":  # a lone space between two changes joins both sides
            deleted.extend(same)
            inserted.extend(b[j1:j2])
        else:
            deleted.extend(a[i1:i2])
            inserted.extend(b[j1:j2])
    flush()
    return segments


def _percentile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of sorted values, interpolated as numpy's default."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def paired_interval(
    differences: Sequence[float],
    *,
    seed: int = 0,
    resamples: int = RESAMPLES,
    max_bootstrap: int = BOOTSTRAP_MAX_CASES,
    confidence: float = 0.95,
) -> tuple[float, float] | None:
    """The `confidence` interval of the mean of paired differences.

    A bootstrap over cases, bias-corrected and accelerated (BCa, Efron 1987) as
    `scipy.stats.bootstrap`'s default method: with few cases and a lopsided change (3
    of 14 cases losing a tool call) the plain percentile interval ends exactly at 0,
    BCa's does not. Past `max_bootstrap` differences the normal approximation is used.
    Bounds within `EQUAL_WITHIN` of zero are 0.
    """
    n = len(differences)
    if n == 0:
        return None
    mean = math.fsum(differences) / n
    if max(differences) - min(differences) <= EQUAL_WITHIN:
        return settle(mean), settle(mean)
    if n > max_bootstrap:
        var = math.fsum((d - mean) ** 2 for d in differences) / (n - 1)
        half = NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt(var / n)
        return settle(mean - half), settle(mean + half)
    rng = random.Random(seed)
    count = max(MIN_RESAMPLES, min(resamples, RESAMPLE_DRAWS // n))
    means = sorted(math.fsum(rng.choices(differences, k=n)) / n for _ in range(count))
    alpha = (1 - confidence) / 2
    total = math.fsum(differences)
    left_out = [(total - d) / (n - 1) for d in differences]
    low_q, high_q = _bca_levels(left_out, means, mean, alpha)
    return settle(_percentile(means, low_q)), settle(_percentile(means, high_q))


Statistic = Callable[[Sequence[float]], float | None]


def totals_intervals(
    units: Sequence[Sequence[float]],
    statistics: Sequence[Statistic],
    *,
    seed: int = 0,
    resamples: int = RESAMPLES,
    confidence: float = 0.95,
) -> list[tuple[float, float] | None]:
    """The `confidence` interval of each statistic of the units' column totals, by the
    BCa bootstrap of `paired_interval`, for statistics that are not a mean (Cohen's
    kappa, Krippendorff's alpha: functions of summed counts).

    Each unit (a labelled item) is a vector of counts; a statistic maps the totals of
    the vectors to a value, or None where it is undefined. Every resample draws the
    units once for all the statistics; the jackknife leaves each unit out by
    subtracting it from the totals. Resamples where a statistic is undefined are left
    out of its interval; None when the statistic of all units is undefined.
    """
    n = len(units)
    if n == 0:
        return [None for _ in statistics]
    # Units with the same counts are one kind drawn with its weight: a resample's totals
    # are then the kinds' counts times their vectors (labelled items have few kinds).
    kinds: dict[tuple[float, ...], int] = {}
    for unit in units:
        key = tuple(unit)
        kinds[key] = kinds.get(key, 0) + 1
    vectors = list(kinds)
    weights = list(itertools.accumulate(kinds.values()))
    totals = [math.fsum(column) for column in zip(*units, strict=True)]
    observed = [statistic(totals) for statistic in statistics]
    rng = random.Random(seed)
    count = min(resamples, max(MIN_RESAMPLES, RESAMPLE_DRAWS // n))
    drawn: list[list[float]] = [[] for _ in statistics]
    for _ in range(count):
        picked = collections.Counter(rng.choices(range(len(vectors)), cum_weights=weights, k=n))
        sample = [math.fsum(picked[i] * v[d] for i, v in enumerate(vectors))
                  for d in range(len(totals))]  # fmt: skip
        for values, statistic in zip(drawn, statistics, strict=True):
            value = statistic(sample)
            if value is not None:
                values.append(value)
    intervals: list[tuple[float, float] | None] = []
    for value, values, statistic in zip(observed, drawn, statistics, strict=True):
        if value is None or not values:
            intervals.append(None)
            continue
        values.sort()
        if values[-1] - values[0] <= EQUAL_WITHIN:
            intervals.append((settle(values[0]), settle(values[-1])))
            continue
        jackknife: list[float] = []
        for vector, times in kinds.items():
            left = statistic([t - u for t, u in zip(totals, vector, strict=True)])
            if left is not None:
                jackknife.extend([left] * times)
        low_q, high_q = _bca_levels(jackknife, values, value, (1 - confidence) / 2)
        intervals.append((settle(_percentile(values, low_q)), settle(_percentile(values, high_q))))
    return intervals


def _bca_levels(
    left_out: Sequence[float], means: Sequence[float], mean: float, alpha: float
) -> tuple[float, float]:
    """The quantiles of the bootstrap statistics (`means`) that bound a BCa interval,
    from the jackknife values `left_out` (the statistic with each unit left out once);
    the percentile interval's (`alpha`, 1 - `alpha`) where the bias correction is
    infinite (every resampled value on one side of the observed one)."""
    # The share of resampled means below the observed one, ties counted half.
    below = (bisect.bisect_left(means, mean) + bisect.bisect_right(means, mean)) / (2 * len(means))
    if below <= 0 or below >= 1:
        return alpha, 1 - alpha
    normal = NormalDist()
    z0 = normal.inv_cdf(below)
    # The acceleration, from the jackknife values (each case left out once).
    n = len(left_out)
    if n == 0:
        return alpha, 1 - alpha
    centre = math.fsum(left_out) / n
    spread = math.fsum((centre - t) ** 2 for t in left_out)
    accel = math.fsum((centre - t) ** 3 for t in left_out) / (6 * spread**1.5) if spread else 0.0
    levels = []
    for z in (normal.inv_cdf(alpha), normal.inv_cdf(1 - alpha)):
        denominator = 1 - accel * (z0 + z)
        if denominator <= 0:
            return alpha, 1 - alpha
        levels.append(normal.cdf(z0 + (z0 + z) / denominator))
    return levels[0], levels[1]


def _case_order(delta: CaseDelta) -> tuple[int, str, str]:
    return (_CHANGE_ORDER.index(delta.change), delta.eval_set_id, delta.case_id)


def _traits(name: str, known: dict[str, MetricTraits | None]) -> MetricTraits:
    if name not in known:
        known[name] = metric_traits(name)
    found = known[name]
    # A metric the registry does not know (a custom metric of one evaluation, a plugin
    # since removed): higher is better; it gates where it had a threshold.
    return found if found is not None else MetricTraits(True, False)


def compare_results(
    base: EvalResult,
    other: EvalResult,
    *,
    seed: int = 0,
    require_overlap: bool = True,
    names: tuple[str | None, str | None] = (None, None),
) -> Comparison:
    """Compare `other` against `base`; `names` are the runs' names, when they have one.

    Raises InputError when the two runs have no case in common (and `require_overlap`).
    """
    base_sides, base_thresholded = _sides(base)
    other_sides, other_thresholded = _sides(other)
    common = [k for k in base_sides if k in other_sides]
    if require_overlap and not common:
        raise InputError(
            f"runs {base.run_id or 'base'} and {other.run_id or 'other'} have no case in "
            "common (cases are matched by eval set id and case id); compare runs of "
            "overlapping eval sets"
        )
    names_all = list(
        dict.fromkeys([*base.metrics, *other.metrics, *base_thresholded, *other_thresholded])
    )
    known: dict[str, MetricTraits | None] = {}
    traits = {name: _traits(name, known) for name in names_all}
    gated = {
        name: not traits[name].informational
        and (base_thresholded.get(name, False) or other_thresholded.get(name, False))
        for name in names_all
    }
    cases = [_case_delta(key, base_sides[key], other_sides[key], traits, gated) for key in common]
    cases.sort(key=_case_order)
    metrics = [
        _metric_delta(name, common, base_sides, other_sides, traits[name], gated[name], seed)
        for name in names_all
    ]
    return Comparison(
        base_id=base.run_id,
        other_id=other.run_id,
        cases=cases,
        metrics=metrics,
        only_in_base=[k for k in base_sides if k not in other_sides],
        only_in_other=[k for k in other_sides if k not in base_sides],
        base_name=names[0],
        other_name=names[1],
    )


def _case_delta(
    key: CaseId,
    a: CaseSide,
    b: CaseSide,
    traits: dict[str, MetricTraits],
    gated: dict[str, bool],
) -> CaseDelta:
    deltas = {
        name: settle(b.scores[name] - score)  # type: ignore[operator]
        for name, score in a.scores.items()
        if score is not None and b.scores.get(name) is not None
    }
    better: list[str] = []
    worse: list[str] = []
    for name, delta in deltas.items():
        if delta == 0 or not gated.get(name, False):
            continue
        up = delta > 0 if traits[name].higher_is_better else delta < 0
        (better if up else worse).append(name)
    flipped = _flipped(a, b)
    return CaseDelta(
        key[0],
        key[1],
        a,
        b,
        _change(a, b, bool(better), bool(worse), flipped),
        deltas,
        better=tuple(better),
        worse=tuple(worse),
        flipped=flipped,
    )


def _metric_delta(
    name: str,
    common: Sequence[CaseId],
    base_sides: dict[CaseId, CaseSide],
    other_sides: dict[CaseId, CaseSide],
    traits: MetricTraits,
    gated: bool,
    seed: int,
) -> MetricDelta:
    pairs = [
        (a, b)
        for k in common
        if (a := base_sides[k].scores.get(name)) is not None
        and (b := other_sides[k].scores.get(name)) is not None
    ]
    diffs = [b - a for a, b in pairs]
    interval = paired_interval(diffs, seed=seed)
    delta = _mean(diffs)
    return MetricDelta(
        name=name,
        base_mean=_mean([a for a, _ in pairs]),
        other_mean=_mean([b for _, b in pairs]),
        delta=None if delta is None else settle(delta),
        ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None,
        paired=len(pairs),
        gated=gated,
        higher_is_better=traits.higher_is_better,
        informational=traits.informational,
    )


def compare_many(
    results: Sequence[EvalResult],
    *,
    seed: int = 0,
    names: Sequence[str | None] | None = None,
) -> list[Comparison]:
    """Each run after the first against the first (the base); `names` are the runs'
    names (`RunInfo.name`), in the same order, when known."""
    if len(results) < 2:
        raise InputError("compare needs at least two runs")
    labels = list(names) if names is not None else [None] * len(results)
    return [
        compare_results(results[0], r, seed=seed, names=(labels[0], labels[i]))
        for i, r in enumerate(results[1:], start=1)
    ]
