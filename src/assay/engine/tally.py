"""`Tally`: a run's summary inputs, added case by case, kept as numbers only.

`summarize` and a streamed run both count through a tally, so a run of a million rows
gets the same summary as a loaded one without keeping its case results: per metric the
scored values (8 bytes each, the summary's mean and deviation need them all) and status
counts, and per run the row and status counts. Tallies of batches scored in worker
processes are merged in batch order. The summary's sums are `math.fsum`s, exact
whatever the order of the values, so it is bit for bit the loaded run's even where a
batch tallies its rows' results by kind (`add_counted`) rather than row by row.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from assay.core.results import CaseResult, MetricResult, Status
from assay.metrics.base import Metric

_STATUSES = tuple(Status)


class Tally:
    """Row count, case statuses, and per metric its scored values and status counts.

    `case_scores` names the metrics whose case-level scores are kept as well (CI gates
    average those, not the rows).
    """

    def __init__(self, names: Iterable[str], case_scores: Iterable[str] = ()) -> None:
        self.names = list(names)
        self.rows = 0
        self.statuses = dict.fromkeys(_STATUSES, 0)
        self.values: dict[str, array[float]] = {n: array("d") for n in self.names}
        self.metric_statuses: dict[str, dict[Status, int]] = {
            n: dict.fromkeys(_STATUSES, 0) for n in self.names
        }
        self.thresholds: dict[str, set[float | None]] = {n: set() for n in self.names}
        self.case_scores: dict[str, array[float]] = {n: array("d") for n in case_scores}

    @property
    def cases(self) -> int:
        return sum(self.statuses.values())

    def add(self, case: CaseResult) -> None:
        """Count one case run (its rows: one per invocation, at least one)."""
        self.add_scored(case.status, case.metrics, len(case.invocations))

    def add_scored(self, status: Status, metrics: Mapping[str, MetricResult], n_inv: int) -> None:
        """`add` from a case's parts: its status, its metrics' results and its number of
        invocations (the lean row path has no `CaseResult`)."""
        self.rows += n_inv or 1
        self.statuses[status] += 1
        values, metric_statuses = self.values, self.metric_statuses
        for name, mr in metrics.items():
            bucket = values.get(name)
            if bucket is None:
                continue
            per = mr.per_invocation
            if per and len(per) == n_inv:
                bucket.extend([s.value for s in per if s.value is not None])
            elif mr.score is not None:
                bucket.append(mr.score)
            if mr.status is not None:
                metric_statuses[name][mr.status] += 1
            self.thresholds[name].add(mr.threshold)
            scores = self.case_scores.get(name)
            if scores is not None and mr.score is not None:
                scores.append(mr.score)

    def add_row(self, status: Status, results: Iterable[MetricResult]) -> None:
        """`add` of a case of one invocation from its status and its metrics' results
        (each scored on that invocation), without a `CaseResult` (the lean row path)."""
        results = list(results)
        self.rows += 1
        self.statuses[status] += 1
        self._add_results([(mr, 1) for mr in results])
        if self.case_scores:
            for mr in results:
                scores = self.case_scores.get(mr.name)
                if scores is not None and mr.score is not None:
                    scores.append(mr.score)

    def add_counted(
        self, statuses: Mapping[Status, int], results: Iterable[tuple[MetricResult, int]]
    ) -> None:
        """`add_row` of rows counted by kind: `statuses` counts the rows by status, and
        `results` gives each distinct metric result of the rows (of one invocation
        each) with the number of rows that have it. Not with `case_scores`, which keep
        the rows' order."""
        if self.case_scores:
            raise ValueError("a tally that keeps case scores is added row by row")
        for status, count in statuses.items():
            self.rows += count
            self.statuses[status] += count
        self._add_results(results)

    def _add_results(self, results: Iterable[tuple[MetricResult, int]]) -> None:
        values, metric_statuses, thresholds = self.values, self.metric_statuses, self.thresholds
        for mr, count in results:
            name = mr.name
            bucket = values.get(name)
            if bucket is None:
                continue
            value = mr.per_invocation[0].value
            if value is not None:
                bucket.extend([value] * count)
            if mr.status is not None:
                metric_statuses[name][mr.status] += count
            thresholds[name].add(mr.threshold)

    def merge(self, other: Tally) -> None:
        """Add `other`'s counts and values after this tally's own."""
        self.rows += other.rows
        for status, count in other.statuses.items():
            self.statuses[status] += count
        for name in self.names:
            self.values[name].extend(other.values.get(name, ()))
            for status, count in other.metric_statuses.get(name, {}).items():
                self.metric_statuses[name][status] += count
            self.thresholds[name] |= other.thresholds.get(name, set())
        for name, scores in self.case_scores.items():
            scores.extend(other.case_scores.get(name, ()))

    def summary(self, metrics: Sequence[Metric]) -> dict[str, Any]:
        """The Vertex summary of the tallied cases (`row_count`, `{metric}/mean`, ...,
        status counts), in `summarize`'s key order, without the agent columns."""
        summary: dict[str, Any] = {"row_count": self.rows}
        for metric in metrics:
            summary.update(metric.summary_columns(self.values[metric.name]))
        return summary

    def status_columns(self) -> dict[str, Any]:
        cases = self.cases
        return {
            "case_count": cases,
            "passed": self.statuses[Status.PASSED],
            "failed": self.statuses[Status.FAILED],
            "not_evaluated": self.statuses[Status.NOT_EVALUATED],
            "pass_rate": self.statuses[Status.PASSED] / cases if cases else None,
        }
