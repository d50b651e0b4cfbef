"""The judge-against-people statistics (issue #35): Cohen's kappa as scikit-learn computes
it, Krippendorff's alpha on the worked example of the literature, and bootstrap
intervals that hold the value they bound."""

from __future__ import annotations

import random

import pytest
from sklearn.metrics import cohen_kappa_score

from assay.report.compare import totals_intervals
from assay.report.label_agreement import RatedItem, agreement_report, krippendorff_alpha


def test_alpha_of_krippendorffs_worked_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four
    # observers, twelve units, values 1-5 with gaps; nominal alpha = 0.743.
    observers = [
        "1 2 3 3 2 1 4 1 2 . . .",
        "1 2 3 3 2 2 4 1 2 5 . 3",
        ". 3 3 3 2 3 4 2 2 5 1 .",
        "1 2 3 3 2 4 4 1 2 5 1 .",
    ]
    rows = [line.split() for line in observers]
    units = [[row[u] for row in rows if row[u] != "."] for u in range(12)]
    assert krippendorff_alpha(units) == pytest.approx(0.743, abs=5e-4)


def test_alpha_edges() -> None:
    assert krippendorff_alpha([["a", "a"], ["b", "b"]]) == pytest.approx(1.0)
    assert krippendorff_alpha([["a", "a"], ["a", "a"]]) is None  # one value: undefined
    assert krippendorff_alpha([["a"], ["b"]]) is None  # nothing pairable
    # Two raters who always disagree on two values: alpha below zero.
    assert krippendorff_alpha([["a", "b"], ["b", "a"]]) == pytest.approx(-0.5)


def _items(seed: int, n: int, several: bool = False) -> list[RatedItem]:
    rng = random.Random(seed)
    items = []
    for k in range(n):
        truth = rng.random() < 0.4
        judge = truth if rng.random() < 0.8 else not truth
        people = [("ann", "pass" if truth else "fail")]
        if several and k % 2:
            other = truth if rng.random() < 0.9 else not truth
            people.append(("bob", "pass" if other else "fail"))
        items.append(RatedItem(f"i{k}", tuple(people), "pass" if judge else "fail"))
    return items


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kappa_is_scikit_learns_on_the_same_pairs(seed: int) -> None:
    items = _items(seed, 60, several=True)
    items.append(RatedItem("unscored", (("ann", "pass"),), None))
    report = agreement_report(items, metric="m", judge="j", resamples=200)
    humans = [v for i in items if i.judge is not None for _, v in i.people]
    judges = [i.judge for i in items if i.judge is not None for _ in i.people]
    assert report.compared == len(humans) and report.unscored == 1
    assert report.kappa.value == pytest.approx(cohen_kappa_score(humans, judges))
    assert report.accuracy.value == pytest.approx(
        sum(h == j for h, j in zip(humans, judges, strict=True)) / len(humans)
    )
    every_label = [v for i in items for _, v in i.people]
    assert report.base_rate.value == pytest.approx(every_label.count("pass") / len(every_label))
    assert report.matrix.count("pass", "fail") == sum(
        h == "pass" and j == "fail" for h, j in zip(humans, judges, strict=True)
    )
    for estimate in (report.accuracy, report.kappa, report.base_rate, report.alpha_people):
        assert estimate is not None and estimate.value is not None
        assert estimate.low is not None and estimate.high is not None
        assert estimate.low <= estimate.value <= estimate.high
    assert report.several_people == 30


def test_alpha_is_reported_only_when_several_people_labelled() -> None:
    report = agreement_report(_items(4, 20), metric="m", judge="j", resamples=100)
    assert report.alpha_people is None and report.alpha_with_judge is None
    assert report.to_dict()["krippendorff_alpha_people"] is None


def test_alpha_from_the_item_counts_is_the_general_formulas() -> None:
    items = _items(9, 80, several=True)
    report = agreement_report(items, metric="m", judge="j", resamples=100)
    people = [[v for _, v in i.people] for i in items]
    with_judge = [[v for _, v in i.people] + [str(i.judge)] for i in items]
    assert report.alpha_people is not None and report.alpha_with_judge is not None
    assert report.alpha_people.value == pytest.approx(krippendorff_alpha(people))
    assert report.alpha_with_judge.value == pytest.approx(krippendorff_alpha(with_judge))


def test_totals_intervals() -> None:
    # The mean of 1..40 as a statistic of totals (sum, count).
    units = [[float(v), 1.0] for v in range(1, 41)]

    def mean(t: list[float] | tuple[float, ...]) -> float | None:
        return t[0] / t[1] if t[1] else None

    [(low, high)] = [i for i in totals_intervals(units, [mean], resamples=2000) if i]
    assert low < 20.5 < high and high - low < 12
    # A statistic undefined on the data has no interval; a constant one, a point.
    assert totals_intervals(units, [lambda t: None]) == [None]
    assert totals_intervals([[3.0], [3.0]], [lambda t: 3.0]) == [(3.0, 3.0)]
    assert totals_intervals([], [mean]) == [None]
    # The same seed gives the same interval.
    assert totals_intervals(units, [mean], seed=7) == totals_intervals(units, [mean], seed=7)
