"""How far a judge agrees with people's labels, with bootstrap intervals (issue #35).

Each labelled item holds the verdicts people gave it ("pass" / "fail", one per person)
and the judge's verdict (None when the judge did not score it). Every person's label is
compared with the judge's verdict on the item, so an item two people labelled counts
twice: the same pairs `assay labels export` writes as lines of a labels file, so
`assay judge calibrate FILE` on the export and `--from-store` agree. Reported:

- accuracy, Cohen's kappa (`assay.judges.agreement`), the confusion matrix and the base
  rate (the share of people's labels that are "pass"), each with a 95% interval from
  the BCa bootstrap of `report.compare`, resampling items (a person's labels on one
  item move together);
- Krippendorff's alpha (nominal) when several people labelled an item: among the
  people alone (how far people agree: the ceiling a judge can be held to), and among the
  people and the judge as one more rater.

Items the judge did not score are counted apart and left out of the statistics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import permutations
from typing import Any

from assay.judges.agreement import ConfusionMatrix, accuracy, cohen_kappa
from assay.report.compare import Statistic, totals_intervals

OUTCOMES = ("pass", "fail")


@dataclass(frozen=True)
class RatedItem:
    """One labelled item: each person's verdict and the judge's (None: not scored)."""

    key: str
    people: tuple[tuple[str, str], ...]
    judge: str | None


@dataclass(frozen=True)
class Estimate:
    """A statistic and its bootstrap interval (None where it is undefined)."""

    value: float | None
    low: float | None = None
    high: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {"value": self.value, "low": self.low, "high": self.high}

    def show(self) -> str:
        if self.value is None:
            return "n/a"
        if self.low is None or self.high is None:
            return f"{self.value:.3f}"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def krippendorff_alpha(units: Sequence[Sequence[str]]) -> float | None:
    """Krippendorff's alpha for nominal values: 1 - D_o / D_e from the coincidence matrix.

    `units` holds each unit's values (one per rater who rated it; missing ones left
    out). Units with fewer than two values are not pairable and ignored. None when
    there is no pairable value or only one value in all (D_e is 0: alpha is undefined).
    """
    coincidences: dict[tuple[str, str], float] = {}
    for values in units:
        m = len(values)
        if m < 2:
            continue
        for a, b in permutations(range(m), 2):
            pair = (values[a], values[b])
            coincidences[pair] = coincidences.get(pair, 0.0) + 1 / (m - 1)
    totals: dict[str, float] = {}
    for (c, _k), o in coincidences.items():
        totals[c] = totals.get(c, 0.0) + o
    n = math.fsum(totals.values())
    if n <= 1:
        return None
    observed = math.fsum(o for (c, k), o in coincidences.items() if c != k)
    expected = math.fsum(totals[c] * totals[k] for c in totals for k in totals if c != k)
    if expected == 0:
        return None
    return 1 - (n - 1) * observed / expected


# An item as counts whose totals give every statistic (`totals_intervals`): its labels
# by (person's verdict, judge's verdict) when the judge scored it, the people's pass
# labels and labels, and its nominal coincidences (Krippendorff: pass-pass, pass-fail,
# fail-fail) among the people and among the people and the judge.
_PP, _PF, _FP, _FF, _PASS, _LABELS, _A_PP, _A_PF, _A_FF, _J_PP, _J_PF, _J_FF = range(12)


def _coincidences(values: Sequence[str]) -> tuple[float, float, float]:
    m = len(values)
    if m < 2:
        return 0.0, 0.0, 0.0
    p = values.count("pass")
    f = m - p
    return p * (p - 1) / (m - 1), p * f / (m - 1), f * (f - 1) / (m - 1)


def _vector(item: RatedItem) -> list[float]:
    people = [v for _, v in item.people]
    cells = [0.0, 0.0, 0.0, 0.0]
    if item.judge is not None:
        for v in people:
            cells[(0 if v == "pass" else 2) + (0 if item.judge == "pass" else 1)] += 1
    with_judge = _coincidences([*people, item.judge]) if item.judge is not None else (0, 0, 0)
    return [*cells, float(people.count("pass")), float(len(people)),
            *_coincidences(people), *with_judge]  # fmt: skip


def _matrix_of(t: Sequence[float]) -> ConfusionMatrix:
    counts = ((int(t[_PP]), int(t[_PF])), (int(t[_FP]), int(t[_FF])))
    return ConfusionMatrix(OUTCOMES, counts)


def _accuracy(t: Sequence[float]) -> float | None:
    return accuracy(_matrix_of(t))


def _kappa(t: Sequence[float]) -> float | None:
    return cohen_kappa(_matrix_of(t))


def _base_rate(t: Sequence[float]) -> float | None:
    return t[_PASS] / t[_LABELS] if t[_LABELS] else None


def _alpha_of(pp: float, pf: float, ff: float) -> float | None:
    """Nominal alpha of two values from the coincidence totals (see `krippendorff_alpha`)."""
    n_pass, n_fail = pp + pf, ff + pf
    n = n_pass + n_fail
    if n <= 1 or n_pass * n_fail == 0:
        return None
    return 1 - (n - 1) * pf / (n_pass * n_fail)


def _alpha_people(t: Sequence[float]) -> float | None:
    return _alpha_of(t[_A_PP], t[_A_PF], t[_A_FF])


def _alpha_with_judge(t: Sequence[float]) -> float | None:
    return _alpha_of(t[_J_PP], t[_J_PF], t[_J_FF])


def _cell(index: int) -> Statistic:
    def share(t: Sequence[float]) -> float | None:
        total = t[_PP] + t[_PF] + t[_FP] + t[_FF]
        return t[index] / total if total else None

    return share


@dataclass(frozen=True)
class AgreementReport:
    """A judge against people's labels on one metric (see the module)."""

    metric: str
    judge: str
    items: int
    labels: int
    compared: int
    unscored: int
    several_people: int
    accuracy: Estimate
    kappa: Estimate
    base_rate: Estimate
    matrix: ConfusionMatrix
    cells: dict[tuple[str, str], Estimate]
    alpha_people: Estimate | None
    alpha_with_judge: Estimate | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "judge": self.judge,
            "items": self.items,
            "labels": self.labels,
            "compared": self.compared,
            "unscored_items": self.unscored,
            "items_labelled_by_several": self.several_people,
            "accuracy": self.accuracy.to_dict(),
            "kappa": self.kappa.to_dict(),
            "base_rate": self.base_rate.to_dict(),
            "confusion_matrix": self.matrix.to_dict(),
            "confusion_shares": {
                h: {j: self.cells[(h, j)].to_dict() for j in OUTCOMES} for h in OUTCOMES
            },
            "krippendorff_alpha_people": (
                self.alpha_people.to_dict() if self.alpha_people else None
            ),
            "krippendorff_alpha_people_and_judge": (
                self.alpha_with_judge.to_dict() if self.alpha_with_judge else None
            ),
        }


def agreement_report(
    items: Sequence[RatedItem],
    *,
    metric: str,
    judge: str,
    seed: int = 0,
    resamples: int = 1000,
) -> AgreementReport:
    """The agreement of `judge` with the people's labels on `items` (see the module)."""
    several = any(len(item.people) > 1 for item in items)
    cells = {
        (h, j): _cell(i) for i, (h, j) in enumerate((a, b) for a in OUTCOMES for b in OUTCOMES)
    }
    statistics: list[Statistic] = [_accuracy, _kappa, _base_rate, *cells.values()]
    if several:
        statistics += [_alpha_people, _alpha_with_judge]
    vectors = [_vector(item) for item in items]
    intervals = totals_intervals(vectors, statistics, seed=seed, resamples=resamples)
    totals = [math.fsum(column) for column in zip(*vectors, strict=True)] if vectors else [0.0] * 12
    estimates = [
        Estimate(statistic(totals), *(interval or (None, None)))
        for statistic, interval in zip(statistics, intervals, strict=True)
    ]
    scored = [item for item in items if item.judge is not None]
    return AgreementReport(
        metric=metric,
        judge=judge,
        items=len(items),
        labels=sum(len(item.people) for item in items),
        compared=sum(len(item.people) for item in scored),
        unscored=len(items) - len(scored),
        several_people=sum(1 for item in items if len(item.people) > 1),
        accuracy=estimates[0],
        kappa=estimates[1],
        base_rate=estimates[2],
        matrix=_matrix_of(totals),
        cells=dict(zip(cells, estimates[3:7], strict=True)),
        alpha_people=estimates[7] if several else None,
        alpha_with_judge=estimates[8] if several else None,
    )
