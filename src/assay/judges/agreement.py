"""Agreement statistics between human labels and a judge's verdicts (SPEC §5).

Pure functions over (human, judge) label pairs: a confusion matrix, accuracy and
Cohen's kappa. `assay.engine.calibrate` runs the judge and feeds them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ConfusionMatrix:
    """`counts[i][j]`: items humans labelled `labels[i]` and the judge `labels[j]`."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]

    @property
    def total(self) -> int:
        return sum(sum(row) for row in self.counts)

    @property
    def agreed(self) -> int:
        """Items on the diagonal: the judge said what the humans said."""
        return sum(self.counts[i][i] for i in range(len(self.labels)))

    def row_totals(self) -> list[int]:
        """How often the humans gave each label."""
        return [sum(row) for row in self.counts]

    def column_totals(self) -> list[int]:
        """How often the judge gave each label."""
        return [sum(row[j] for row in self.counts) for j in range(len(self.labels))]

    def count(self, human: str, judge: str) -> int:
        return self.counts[self.labels.index(human)][self.labels.index(judge)]

    def to_dict(self) -> dict[str, Any]:
        """`{labels, counts: {human_label: {judge_label: n}}}` for JSON output."""
        return {
            "labels": list(self.labels),
            "counts": {
                h: {j: self.counts[i][k] for k, j in enumerate(self.labels)}
                for i, h in enumerate(self.labels)
            },
        }


def confusion_matrix(pairs: Iterable[tuple[str, str]], labels: Sequence[str]) -> ConfusionMatrix:
    """Count (human, judge) label pairs; a label outside `labels` is a ValueError."""
    order = tuple(labels)
    if len(set(order)) != len(order):
        raise ValueError(f"labels must be distinct, got {list(order)}")
    index = {label: i for i, label in enumerate(order)}
    counts = [[0] * len(order) for _ in order]
    for human, judge in pairs:
        for label in (human, judge):
            if label not in index:
                raise ValueError(f"label {label!r} is not one of {list(order)}")
        counts[index[human]][index[judge]] += 1
    return ConfusionMatrix(order, tuple(tuple(row) for row in counts))


def accuracy(matrix: ConfusionMatrix) -> float | None:
    """Share of items where the judge agrees with the humans; None with no item."""
    total = matrix.total
    return matrix.agreed / total if total else None


def cohen_kappa(matrix: ConfusionMatrix) -> float | None:
    """Cohen's kappa: agreement beyond what the two label distributions give by chance.

    kappa = (p_o - p_e) / (1 - p_e), with p_o the observed agreement and p_e the sum over
    labels of (human share x judge share). None when there is no item, or when p_e is 1
    (both raters used one and the same label throughout): kappa is then 0/0, and
    reporting 1 or 0 would claim something the data cannot show.
    """
    total = matrix.total
    if not total:
        return None
    p_o = matrix.agreed / total
    p_e = math.fsum(
        (r / total) * (c / total)
        for r, c in zip(matrix.row_totals(), matrix.column_totals(), strict=True)
    )
    if math.isclose(p_e, 1.0):
        return None
    return (p_o - p_e) / (1.0 - p_e)
