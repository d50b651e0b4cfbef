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

from assay.judges.agreement import ConfusionMatrix, accuracy, cohen_kappa, confusion_matrix
from assay.report.compare import bootstrap_interval

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


def _pairs(items: Sequence[RatedItem]) -> list[tuple[str, str]]:
    return [(v, item.judge) for item in items if item.judge is not None for _, v in item.people]


def _matrix(items: Sequence[RatedItem]) -> ConfusionMatrix:
    return confusion_matrix(_pairs(items), OUTCOMES)


def _accuracy(items: Sequence[RatedItem]) -> float | None:
    return accuracy(_matrix(items))


def _kappa(items: Sequence[RatedItem]) -> float | None:
    return cohen_kappa(_matrix(items))


def _base_rate(items: Sequence[RatedItem]) -> float | None:
    labels = [v for item in items for _, v in item.people]
    return labels.count("pass") / len(labels) if labels else None


def _alpha_people(items: Sequence[RatedItem]) -> float | None:
    return krippendorff_alpha([[v for _, v in item.people] for item in items])


def _alpha_with_judge(items: Sequence[RatedItem]) -> float | None:
    return krippendorff_alpha(
        [[v for _, v in item.people] + [item.judge] for item in items if item.judge is not None]
    )


def _cell(human: str, judge: str) -> Any:
    def share(items: Sequence[RatedItem]) -> float | None:
        matrix = _matrix(items)
        return matrix.count(human, judge) / matrix.total if matrix.total else None

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


def estimate(items: Sequence[RatedItem], statistic: Any, *, seed: int, resamples: int) -> Estimate:
    """`statistic` of `items` with its bootstrap interval over items."""
    value = statistic(items)
    if value is None:
        return Estimate(None)
    interval = bootstrap_interval(items, statistic, seed=seed, resamples=resamples)
    low, high = interval if interval is not None else (None, None)
    return Estimate(value, low, high)


def agreement_report(
    items: Sequence[RatedItem],
    *,
    metric: str,
    judge: str,
    seed: int = 0,
    resamples: int = 1000,
) -> AgreementReport:
    """The agreement of `judge` with the people's labels on `items` (see the module)."""
    scored = [item for item in items if item.judge is not None]
    several = [item for item in items if len(item.people) > 1]

    def est(statistic: Any, units: Sequence[RatedItem] = scored) -> Estimate:
        return estimate(units, statistic, seed=seed, resamples=resamples)

    return AgreementReport(
        metric=metric,
        judge=judge,
        items=len(items),
        labels=sum(len(item.people) for item in items),
        compared=len(_pairs(scored)),
        unscored=len(items) - len(scored),
        several_people=len(several),
        accuracy=est(_accuracy),
        kappa=est(_kappa),
        base_rate=est(_base_rate, items),
        matrix=_matrix(scored),
        cells={(h, j): est(_cell(h, j)) for h in OUTCOMES for j in OUTCOMES},
        alpha_people=est(_alpha_people, items) if several else None,
        alpha_with_judge=est(_alpha_with_judge) if several else None,
    )
